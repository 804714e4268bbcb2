package sqlsink

import (
	"context"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/sink"
)

// AvroDecoder decodes a record in the Avro wire format back to the event
// it encoded (sink.AvroDecoder).
type AvroDecoder = sink.AvroDecoder

// Decode reads the value of a record of a valid-event topic into the row
// Write takes: a JSON capsule or Event Platform event, or an Event
// Platform event in the Avro wire format, decoded through Config.Avro, so
// that it is stored exactly as the same event from a JSON stream. A
// non-empty reason means the record can never be stored (poison: not a
// JSON object, Avro without a decoder, an unknown schema id, bytes that do
// not match the schema). err is transient (the schema registry could not
// be asked): retry the batch.
func (w *Writer) Decode(ctx context.Context, value []byte) (row map[string]any, reason string, err error) {
	if sink.IsAvro(value) {
		return sink.DecodeAvro(ctx, w.cfg.Avro, value,
			"Avro wire format (magic byte 0), but the SQL sink has no schema registry to decode it (registry.url)", "sqlsink")
	}
	v, err := capsule.Decode(value)
	m, ok := v.(map[string]any)
	if err != nil || !ok {
		return nil, "not a JSON object (the SQL sink stores JSON capsules and Event Platform events, JSON or Avro)", nil
	}
	return m, "", nil
}

// WriteRecords stores a batch of records of the valid-event topics as
// sink.Run calls it (sink.Sink): each record is decoded (Decode) and the
// rows are written (Write). The records that can never be stored are
// returned with the reason: first those Decode refused, then those Write
// did, each in batch order. An error is transient (the schema registry, the
// database): the batch is to be written again, and the rows already stored
// then count as duplicates.
func (w *Writer) WriteRecords(ctx context.Context, batch []kafka.Record) ([]sink.Poison, error) {
	rows := make([]map[string]any, 0, len(batch))
	idx := make([]int, 0, len(batch)) // rows[i] came from batch[idx[i]]
	var bad []sink.Poison
	for i, r := range batch {
		m, reason, err := w.Decode(ctx, r.Value)
		if err != nil {
			return nil, err
		}
		if reason != "" {
			bad = append(bad, sink.Poison{Record: r, Reason: reason})
			continue
		}
		rows = append(rows, m)
		idx = append(idx, i)
	}
	res, err := w.Write(ctx, rows)
	if err != nil {
		return nil, err
	}
	for _, p := range res.Poison {
		bad = append(bad, sink.Poison{Record: batch[idx[p.Index]], Reason: p.Reason})
	}
	w.log.Debug("batch written", "rows", len(rows), "inserted", res.Inserted, "duplicates", res.Duplicates, "poison", len(bad))
	return bad, nil
}

// The runner's view of a Writer.
var _ sink.Sink = (*Writer)(nil)
