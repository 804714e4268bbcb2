package capsule

import (
	"github.com/eventlogging/eventlogging/internal/record"

	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Default topic names (all configurable).
const (
	TopicClientSide  = "eventlogging-client-side"
	TopicServerSide  = "eventlogging-server-side"
	TopicValidMixed  = "eventlogging-valid-mixed"
	TopicEventError  = "eventlogging_EventError"
	DefaultTopicTmpl = "eventlogging_{schema}"
)

// TopicTemplate names an output topic from a schema and revision, e.g.
// "eventlogging_{schema}" or "{schema}_{revision}" (the original's
// topic_format, Python str.format style).
type TopicTemplate struct {
	parts []string // literal, placeholder, literal, ...; odd indexes are placeholders
}

var errTopicTmpl = errors.New("topic template")

// ParseTopicTemplate accepts the placeholders {schema} and {revision}.
func ParseTopicTemplate(s string) (TopicTemplate, error) {
	var t TopicTemplate
	rest := s
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			if strings.IndexByte(rest, '}') >= 0 {
				return t, fmt.Errorf("%w %q: unmatched '}'", errTopicTmpl, s)
			}
			t.parts = append(t.parts, rest)
			break
		}
		if strings.IndexByte(rest[:i], '}') >= 0 {
			return t, fmt.Errorf("%w %q: unmatched '}'", errTopicTmpl, s)
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return t, fmt.Errorf("%w %q: unterminated '{'", errTopicTmpl, s)
		}
		name := rest[i+1 : i+j]
		if name != "schema" && name != "revision" {
			return t, fmt.Errorf("%w %q: unknown placeholder {%s} (want {schema} or {revision})", errTopicTmpl, s, name)
		}
		t.parts = append(t.parts, rest[:i], name)
		rest = rest[i+j+1:]
	}
	return t, nil
}

// Format returns the topic for one schema version.
func (t TopicTemplate) Format(schema string, revision int64) string {
	var b strings.Builder
	for i, p := range t.parts {
		switch {
		case i%2 == 0:
			b.WriteString(p)
		case p == "schema":
			b.WriteString(schema)
		default:
			b.WriteString(strconv.FormatInt(revision, 10))
		}
	}
	return b.String()
}

// ValidTopicName reports whether name is a legal Kafka topic name: 1 to
// 249 of the characters a-z A-Z 0-9 . _ -, and not "." or "..". (A loop,
// not a regexp: the stream of every Event Platform event is checked.)
func ValidTopicName(name string) bool { return record.ValidTopicName(name) }
