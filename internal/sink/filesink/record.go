package filesink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/eventlogging/eventlogging/internal/avrowire"
	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/kafka"
)

// placed is one record of a batch, decoded and converted, ready to append.
type placed struct {
	rec    *kafka.Record
	st     *partState
	reason string    // non-empty: poison, with why
	dt     time.Time // receive time
	hour   int64     // unix seconds of dt's hour
	tag    string    // schema tag (Parquet)
	line   []byte    // JSON lines: the line without its newline
	pq     *pqSchema // Parquet
	row    parquet.Row
}

// place decodes r once and decides its file and encoding. A record that can
// never be written gets a reason; an error is transient (schema lookup).
func (s *Sink) place(ctx context.Context, r *kafka.Record) (placed, error) {
	pl := placed{rec: r}
	bad, ok := s.badTopic[r.Topic]
	if !ok {
		bad = reservedTopic(r.Topic)
		s.badTopic[r.Topic] = bad
	}
	if bad {
		pl.reason = "topic name " + r.Topic + " is not usable as a directory of the file sink"
		return pl, nil
	}
	m, v, reason, err := s.decode(ctx, r.Value)
	if err != nil || reason != "" {
		pl.reason = reason
		return pl, err
	}
	uri, platform := m["$schema"].(string)
	dt, ok := receiveTime(m, platform)
	if !ok {
		dt = r.Timestamp.UTC()
		if !saneTime(dt) {
			pl.reason = "no receive time: neither dt, meta.dt nor a Kafka timestamp"
			return pl, nil
		}
	}
	pl.dt = dt
	pl.hour = dt.Truncate(time.Hour).Unix()
	if s.cfg.Format == JSONLines {
		if v == nil || bytes.IndexByte(v, '\n') >= 0 || bytes.IndexByte(v, '\r') >= 0 {
			pl.line = capsule.AppendValue(nil, m) // decoded from Avro, or pretty-printed: one line as the processor writes it
		} else {
			pl.line = v
		}
		return pl, nil
	}
	pq, reason, err := s.parquetSchema(ctx, m, platform, uri)
	if err != nil || reason != "" {
		pl.reason = reason
		return pl, err
	}
	row, err := pq.row(m)
	if err != nil {
		pl.reason = err.Error()
		return pl, nil
	}
	pl.pq, pl.tag, pl.row = pq, pq.key, row
	return pl, nil
}

// decode reads a record value: a JSON object, or an Event Platform event
// in the Avro wire format, decoded through Config.Avro to the object a
// JSON stream would have carried (then line is nil: the record has no JSON
// text of its own). A reason makes the record poison; an error is
// transient (the schema registry could not be asked).
func (s *Sink) decode(ctx context.Context, value []byte) (m map[string]any, line []byte, reason string, err error) {
	// Checked before trimming: the Avro binary may end in bytes that
	// look like white space.
	if len(value) > 0 && value[0] == avrowire.Magic {
		if s.cfg.Avro == nil {
			return nil, nil, "Avro wire format (magic byte 0), but the file sink has no schema registry to decode it (registry.url)", nil
		}
		m, err := s.cfg.Avro.DecodeEvent(ctx, value)
		switch {
		case errors.Is(err, avrowire.ErrUndecodable):
			return nil, nil, "Avro wire format: " + err.Error(), nil
		case err != nil:
			return nil, nil, "", fmt.Errorf("filesink: decode Avro record: %w", err)
		}
		return m, nil, "", nil
	}
	v := bytes.TrimSpace(value)
	if len(v) == 0 {
		return nil, nil, "empty record value", nil
	}
	doc, err := capsule.Decode(v)
	if err != nil {
		return nil, nil, "not JSON: " + err.Error(), nil
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, nil, "not a JSON object", nil
	}
	return m, v, "", nil
}

// receiveTime returns the receive time of an event: the capsule's "dt", or
// "meta.dt" for an Event Platform event (whose own "dt" is the client's
// event time and never trusted for partitioning).
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
	t, ok := parseDT(str)
	if !ok || !saneTime(t) {
		return time.Time{}, false
	}
	return t, true
}

// parseDT parses an ISO-8601 time: the pipeline's own
// "2006-01-02T15:04:05Z" quickly, anything RFC 3339 otherwise.
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

// saneTime bounds receive times to years a partition directory can name.
func saneTime(t time.Time) bool {
	y := t.Year()
	return y >= 1970 && y <= 9999
}

// reservedTopic reports whether a topic cannot be a directory of the root:
// the sink's own state directory, or a name no Kafka topic can have.
func reservedTopic(topic string) bool {
	return topic == stateDir || !capsule.ValidTopicName(topic) || strings.HasPrefix(topic, "..")
}
