package sink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/eventlogging/eventlogging/internal/avrowire"
	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/schema"
)

// Schemas resolves the schema of an event for the sinks that write typed
// columns. *schema.Resolver implements it. Both methods are safe for
// concurrent use; ctx bounds the lookup. Errors wrapping
// schema.ErrNotFound, schema.ErrInvalidSchema or schema.ErrInvalidID are
// permanent (the record becomes poison); any other error is transient
// (the batch fails and is retried).
type Schemas interface {
	// Resolve returns the schema of a legacy EventLogging event
	// ("schema" and "revision" in its capsule).
	Resolve(ctx context.Context, id schema.ID) (*schema.Schema, error)
	// ResolveURI returns the schema of an Event Platform event, given its
	// canonical $schema path; the schema's ID has the path as Name.
	ResolveURI(ctx context.Context, uri string) (*schema.Schema, error)
}

// PermanentSchemaError reports whether an error of Schemas is permanent:
// it wraps schema.ErrNotFound, schema.ErrInvalidSchema or
// schema.ErrInvalidID, and the record is poison.
func PermanentSchemaError(err error) bool {
	return errors.Is(err, schema.ErrNotFound) || errors.Is(err, schema.ErrInvalidSchema) || errors.Is(err, schema.ErrInvalidID)
}

// AvroDecoder decodes a record in the Confluent Avro wire format (magic
// byte 0, 4-byte schema id, Avro binary), as the processor writes the
// events of a stream with format avro, back to the event it encoded: the
// JSON object (numbers as json.Number) a JSON stream would have carried.
// *avrowire.Codec satisfies it. Safe for concurrent use; ctx bounds the
// schema lookup. An error wrapping avrowire.ErrUndecodable means the
// record can never be decoded (poison); any other error is transient.
type AvroDecoder interface {
	DecodeEvent(ctx context.Context, record []byte) (map[string]any, error)
}

// IsAvro reports whether a record value is in the Avro wire format (its
// first byte is avrowire.Magic). Check it before trimming a value: the
// Avro binary may end in bytes that look like white space.
func IsAvro(value []byte) bool {
	return len(value) > 0 && value[0] == avrowire.Magic
}

// DecodeAvro decodes a record value in the Avro wire format through dec. A
// non-empty reason means the record can never be decoded (poison):
// noDecoder when dec is nil, or bytes that do not match their schema. An
// error is transient (the schema registry could not be asked); op, the
// caller's package, prefixes it.
func DecodeAvro(ctx context.Context, dec AvroDecoder, value []byte, noDecoder, op string) (m map[string]any, reason string, err error) {
	if dec == nil {
		return nil, noDecoder, nil
	}
	m, err = dec.DecodeEvent(ctx, value)
	switch {
	case errors.Is(err, avrowire.ErrUndecodable):
		return nil, "Avro wire format: " + err.Error(), nil
	case err != nil:
		return nil, "", fmt.Errorf("%s: decode Avro record: %w", op, err)
	}
	return m, "", nil
}

// DecodeJSON reads a record value holding a JSON object: it returns the
// object and the value trimmed of white space, or the reason the record is
// poison.
func DecodeJSON(value []byte) (m map[string]any, text []byte, reason string) {
	v := bytes.TrimSpace(value)
	if len(v) == 0 {
		return nil, nil, "empty record value"
	}
	doc, err := capsule.Decode(v)
	if err != nil {
		return nil, nil, "not JSON: " + err.Error()
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, nil, "not a JSON object"
	}
	return m, v, ""
}

// ReceiveTime returns the time an event was received, which places it in
// an hour partition: the capsule's "dt", or "meta.dt" for an Event
// Platform event (whose own "dt" is the client's event time and never
// trusted for partitioning), or else ts, the Kafka record's timestamp. ok
// is false when none of them is a time in a year an hour partition can
// name.
func ReceiveTime(m map[string]any, platform bool, ts time.Time) (t time.Time, ok bool) {
	if t, ok := receiveTime(m, platform); ok {
		return t, true
	}
	if ts = ts.UTC(); saneTime(ts) {
		return ts, true
	}
	return time.Time{}, false
}

// receiveTime returns the receive time an event holds: the capsule's "dt",
// or "meta.dt" for an Event Platform event.
func receiveTime(m map[string]any, platform bool) (time.Time, bool) {
	var v any
	if platform {
		meta, _ := m["meta"].(map[string]any)
		v = meta["dt"]
	} else {
		v = m["dt"]
	}
	str, ok := v.(string)
	if !ok {
		return time.Time{}, false
	}
	return ReceiveTimeText(str)
}

// ReceiveTimeText is the receive time s (a dt or meta.dt) names, in UTC,
// as ReceiveTime reads it; false when it is not one.
func ReceiveTimeText(s string) (time.Time, bool) {
	t, ok := parseDT(s)
	if !ok || !saneTime(t) {
		return time.Time{}, false
	}
	return t, true
}

// parseDT parses an ISO-8601 time: the pipeline's own
// "2006-01-02T15:04:05Z" quickly, anything RFC 3339 otherwise. The result
// is in UTC.
func parseDT(s string) (time.Time, bool) {
	if len(s) == 20 && s[4] == '-' && s[7] == '-' && s[10] == 'T' && s[13] == ':' && s[16] == ':' && s[19] == 'Z' {
		y, ok1 := digits(s[0:4])
		mo, ok2 := digits(s[5:7])
		d, ok3 := digits(s[8:10])
		h, ok4 := digits(s[11:13])
		mi, ok5 := digits(s[14:16])
		sec, ok6 := digits(s[17:19])
		if ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && mo >= 1 && mo <= 12 && d >= 1 && d <= 31 && h < 24 && mi < 60 && sec < 60 {
			t := time.Date(y, time.Month(mo), d, h, mi, sec, 0, time.UTC)
			if t.Day() == d { // not 31 February
				return t, true
			}
		}
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, false
	}
	return t.UTC(), true
}

// digits parses a run of ASCII digits.
func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// saneTime reports whether t is in a year an hour partition can name
// (1970 to 9999): the bounds of receive times.
func saneTime(t time.Time) bool {
	y := t.Year()
	return y >= 1970 && y <= 9999
}
