package capsule

import (
	"strconv"
	"time"
)

// Capsule is a valid event wrapped with the fields the pipeline adds. String
// fields that are empty and SeqID without HasSeqID are omitted from the JSON.
type Capsule struct {
	Event     map[string]any // the validated event, decoded with json.Decoder.UseNumber
	Schema    string
	Revision  int64
	Wiki      string
	WebHost   string
	RecvFrom  string
	SeqID     int64
	HasSeqID  bool
	Timestamp int64 // receive time, epoch seconds
	DT        string
	UUID      string
	UserAgent string
	ClientIP  string // per IP policy: hashed, raw, or empty (dropped)
	Topic     string // the per-schema topic the event is routed to

	// EventJSON, when not nil, is the validated event as compact JSON text
	// (the client's own bytes, keys in the client's order), written as is
	// in place of Event.
	EventJSON []byte
}

// AppendJSON appends the capsule as one compact JSON object to b. The
// event's key order is not part of the output: EventJSON is written as the
// client sent it, Event with sorted keys.
func (c *Capsule) AppendJSON(b []byte) []byte {
	b = append(b, `{"event":`...)
	if c.EventJSON != nil {
		b = append(b, c.EventJSON...)
	} else {
		b = AppendValue(b, c.Event)
	}
	b = append(b, `,"schema":`...)
	b = AppendString(b, c.Schema)
	b = append(b, `,"revision":`...)
	b = strconv.AppendInt(b, c.Revision, 10)
	b = appendOptString(b, `,"wiki":`, c.Wiki)
	b = appendOptString(b, `,"webHost":`, c.WebHost)
	b = appendOptString(b, `,"recvFrom":`, c.RecvFrom)
	if c.HasSeqID {
		b = append(b, `,"seqId":`...)
		b = strconv.AppendInt(b, c.SeqID, 10)
	}
	b = append(b, `,"timestamp":`...)
	b = strconv.AppendInt(b, c.Timestamp, 10)
	b = appendOptString(b, `,"dt":`, c.DT)
	b = appendOptString(b, `,"uuid":`, c.UUID)
	b = appendOptString(b, `,"userAgent":`, c.UserAgent)
	b = appendOptString(b, `,"clientIp":`, c.ClientIP)
	b = appendOptString(b, `,"topic":`, c.Topic)
	return append(b, '}')
}

func appendOptString(b []byte, key, v string) []byte {
	if v == "" {
		return b
	}
	b = append(b, key...)
	return AppendString(b, v)
}

// FormatDT formats a receive time as the ISO-8601 UTC `dt` field,
// e.g. 2013-01-19T23:16:38Z (second precision, as the original).
func FormatDT(t time.Time) string {
	t = t.UTC()
	y, mo, d := t.Date()
	h, mi, sec := t.Clock()
	if y < 0 || y > 9999 {
		return t.Format("2006-01-02T15:04:05Z")
	}
	b := [20]byte{0, 0, 0, 0, '-', 0, 0, '-', 0, 0, 'T', 0, 0, ':', 0, 0, ':', 0, 0, 'Z'}
	put := func(i, v, n int) {
		for j := i + n - 1; j >= i; j-- {
			b[j] = byte('0' + v%10)
			v /= 10
		}
	}
	put(0, y, 4)
	put(5, int(mo), 2)
	put(8, d, 2)
	put(11, h, 2)
	put(14, mi, 2)
	put(17, sec, 2)
	return string(b[:])
}
