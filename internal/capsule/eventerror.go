package capsule

import (
	"encoding/base64"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
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

// AppendJSON appends the error capsule as compact JSON: the bytes
// encoding/json's Marshal gives (FuzzErrorCapsuleJSON compares them),
// written by hand, since Marshal's reflection was an eighth of the cost
// of an invalid event.
func (c *ErrorCapsule) AppendJSON(b []byte) []byte {
	e := &c.Event
	b = append(b, `{"event":{"rawEvent":`...)
	b = appendMarshalString(b, e.RawEvent)
	if len(e.RawEventBase64) > 0 {
		b = append(b, `,"rawEventBase64":"`...)
		b = base64.StdEncoding.AppendEncode(b, e.RawEventBase64)
		b = append(b, '"')
	}
	if e.RawEventBytes != 0 {
		b = append(b, `,"rawEventBytes":`...)
		b = strconv.AppendInt(b, int64(e.RawEventBytes), 10)
	}
	b = append(b, `,"message":`...)
	b = appendMarshalString(b, e.Message)
	b = append(b, `,"code":`...)
	b = appendMarshalString(b, e.Code)
	b = append(b, `,"schema":`...)
	b = appendMarshalString(b, e.Schema)
	b = append(b, `,"revision":`...)
	b = strconv.AppendInt(b, e.Revision, 10)
	if len(e.Errors) > 0 {
		b = append(b, `,"errors":[`...)
		for i, v := range e.Errors {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"pointer":`...)
			b = appendMarshalString(b, v.Pointer)
			b = append(b, `,"reason":`...)
			b = appendMarshalString(b, v.Reason)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if e.ProcessorID != "" {
		b = append(b, `,"processorId":`...)
		b = appendMarshalString(b, e.ProcessorID)
	}
	if e.Source != nil {
		b = append(b, `,"source":{"topic":`...)
		b = appendMarshalString(b, e.Source.Topic)
		b = append(b, `,"partition":`...)
		b = strconv.AppendInt(b, int64(e.Source.Partition), 10)
		b = append(b, `,"offset":`...)
		b = strconv.AppendInt(b, e.Source.Offset, 10)
		b = append(b, '}')
	}
	b = append(b, `},"schema":`...)
	b = appendMarshalString(b, c.Schema)
	b = append(b, `,"revision":`...)
	b = strconv.AppendInt(b, c.Revision, 10)
	if c.RecvFrom != "" {
		b = append(b, `,"recvFrom":`...)
		b = appendMarshalString(b, c.RecvFrom)
	}
	if c.SeqID != nil {
		b = append(b, `,"seqId":`...)
		b = strconv.AppendInt(b, *c.SeqID, 10)
	}
	b = append(b, `,"timestamp":`...)
	b = strconv.AppendInt(b, c.Timestamp, 10)
	b = append(b, `,"dt":`...)
	b = appendMarshalString(b, c.DT)
	b = append(b, `,"uuid":`...)
	b = appendMarshalString(b, c.UUID)
	if c.UserAgent != "" {
		b = append(b, `,"userAgent":`...)
		b = appendMarshalString(b, c.UserAgent)
	}
	b = append(b, `,"topic":`...)
	b = appendMarshalString(b, c.Topic)
	return append(b, '}')
}

// appendMarshalString appends s as encoding/json's Marshal writes it:
// AppendString, with '<', '>' and '&' escaped for HTML as Marshal does.
// The rare string with a backspace or form feed (Marshal writes \b and
// \f) is left to Marshal itself.
func appendMarshalString(b []byte, s string) []byte {
	// strings.IndexByte, not ContainsAny: one vectorised pass a byte
	// against a byte-by-byte loop, on raw events of a kilobyte.
	if strings.IndexByte(s, '\b') >= 0 || strings.IndexByte(s, '\f') >= 0 {
		enc, _ := json.Marshal(s) // a string always encodes
		return append(b, enc...)
	}
	start := len(b)
	b = AppendString(b, s)
	if strings.IndexByte(s, '<') < 0 && strings.IndexByte(s, '>') < 0 && strings.IndexByte(s, '&') < 0 {
		return b
	}
	// AppendString writes these three bytes as they are and never
	// inside an escape, so each one found is one of s's.
	out := b[:start]
	for _, ch := range slices.Clone(b[start:]) {
		switch ch {
		case '<', '>', '&':
			out = append(out, '\\', 'u', '0', '0', hexDigits[ch>>4], hexDigits[ch&0xf])
		default:
			out = append(out, ch)
		}
	}
	return out
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
