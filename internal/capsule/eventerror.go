package capsule

import (
	"encoding/json"
	"regexp"
	"strconv"
)

// Error codes of an EventError, as in the original.
const (
	CodeValidation = "validation" // the event does not match its schema
	CodeProcessor  = "processor"  // the raw record could not be parsed or its schema resolved
	CodeConsumer   = "consumer"   // the Kafka record itself was unusable
)

// EventErrorSchema and EventErrorRevision identify error records.
const (
	EventErrorSchema   = "EventError"
	EventErrorRevision = 1
)

// Violation is one validation failure: a JSON pointer into the capsule and a
// human-readable reason.
type Violation struct {
	Pointer string `json:"pointer"`
	Reason  string `json:"reason"`
}

// Source locates the raw record an error came from.
type Source struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// EventError is the event of an error record: why a raw record was rejected,
// with enough context to find, fix and replay it.
type EventError struct {
	RawEvent string `json:"rawEvent"`
	// RawEventBase64 holds the raw bytes when they are not valid UTF-8 (JSON
	// cannot carry them in RawEvent, which then has U+FFFD in their place).
	RawEventBase64 []byte `json:"rawEventBase64,omitempty"`
	// RawEventBytes is the size of the raw record when RawEvent was cut to
	// the configured limit; 0 when RawEvent is complete.
	RawEventBytes int         `json:"rawEventBytes,omitempty"`
	Message       string      `json:"message"`
	Code          string      `json:"code"`
	Schema        string      `json:"schema"`
	Revision      int64       `json:"revision"`
	Errors        []Violation `json:"errors,omitempty"`
	ProcessorID   string      `json:"processorId,omitempty"`
	Source        *Source     `json:"source,omitempty"`
}

// ErrorCapsule wraps an EventError like any other event.
type ErrorCapsule struct {
	Event     EventError `json:"event"`
	Schema    string     `json:"schema"`
	Revision  int64      `json:"revision"`
	RecvFrom  string     `json:"recvFrom,omitempty"`
	SeqID     *int64     `json:"seqId,omitempty"`
	Timestamp int64      `json:"timestamp"`
	DT        string     `json:"dt"`
	UUID      string     `json:"uuid"`
	UserAgent string     `json:"userAgent,omitempty"`
	Topic     string     `json:"topic"`
}

// AppendJSON appends the error capsule as compact JSON.
func (c *ErrorCapsule) AppendJSON(b []byte) []byte {
	enc, err := json.Marshal(c)
	if err != nil { // cannot happen: every field is a plain type
		panic("capsule: marshal EventError: " + err.Error())
	}
	return append(b, enc...)
}

var (
	rawSchemaPatterns = []*regexp.Regexp{
		regexp.MustCompile(`%22schema%22(?:%3A|:)(?:%20|\+)*%22([A-Za-z0-9_-]{1,63})%22`),
		regexp.MustCompile(`"schema"\s*:\s*"([A-Za-z0-9_-]{1,63})"`),
	}
	rawRevisionPatterns = []*regexp.Regexp{
		regexp.MustCompile(`%22revision%22(?:%3A|:)(?:%20|\+)*(-?[0-9]{1,18})`),
		regexp.MustCompile(`"revision"\s*:\s*(-?[0-9]{1,18})`),
	}
)

// RecoverSchema finds schema and revision in a raw record that could not be
// decoded, by pattern over the still-encoded text. It returns "unknown" and
// -1 for what it cannot find.
func RecoverSchema(raw []byte) (schema string, revision int64) {
	schema, revision = "unknown", -1
	for _, re := range rawSchemaPatterns {
		if m := re.FindSubmatch(raw); m != nil {
			schema = string(m[1])
			break
		}
	}
	for _, re := range rawRevisionPatterns {
		if m := re.FindSubmatch(raw); m != nil {
			if n, err := strconv.ParseInt(string(m[1]), 10, 64); err == nil {
				revision = n
			}
			break
		}
	}
	return schema, revision
}
