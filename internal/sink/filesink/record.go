package filesink

import (
	"bytes"
	"context"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/sink"
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

// place decides r's file and encoding: by the direct path (direct.go)
// when it can, else from the decoded map. A record that can
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
	if !sink.IsAvro(r.Value) && !s.mapPathOnly {
		if ok, err := s.placeDirect(ctx, r.Value, &pl); ok || err != nil {
			return pl, err
		}
	}
	m, v, reason, err := s.decode(ctx, r.Value)
	if err != nil || reason != "" {
		pl.reason = reason
		return pl, err
	}
	uri, platform := m["$schema"].(string)
	dt, ok := sink.ReceiveTime(m, platform, r.Timestamp)
	if !ok {
		pl.reason = "no receive time: neither dt, meta.dt nor a Kafka timestamp"
		return pl, nil
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
	pq, reason, err := s.parquetSchema(ctx, platform, uri, m["schema"], m["revision"])
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
	if sink.IsAvro(value) {
		m, reason, err := sink.DecodeAvro(ctx, s.cfg.Avro, value,
			"Avro wire format (magic byte 0), but the file sink has no schema registry to decode it (registry.url)", "filesink")
		return m, nil, reason, err
	}
	m, line, reason = sink.DecodeJSON(value)
	return m, line, reason, nil
}

// reservedTopic reports whether a topic cannot be a directory of the root:
// the sink's own state directory, or a name no Kafka topic can have.
func reservedTopic(topic string) bool {
	return topic == stateDir || !capsule.ValidTopicName(topic) || strings.HasPrefix(topic, "..")
}
