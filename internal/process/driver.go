package process

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/lineformat"
	"github.com/eventlogging/eventlogging/internal/schema"
)

// Input is one raw topic and the line format of its records.
type Input struct {
	Topic  string
	Format *lineformat.Format
}

// Transform adapts the Processor to the Kafka consume loop: each record of
// an input topic is parsed with that topic's format.
func (p *Processor) Transform(inputs []Input) (kafka.Transform, error) {
	formats := make(map[string]*lineformat.Format, len(inputs))
	for _, in := range inputs {
		if in.Format == nil {
			return nil, fmt.Errorf("input topic %s: no line format", in.Topic)
		}
		formats[in.Topic] = in.Format
	}
	// Outputs are kafka.Messages: the processor appends them to out as
	// they are.
	return func(ctx context.Context, recs []kafka.Record, out []kafka.Message) []kafka.Message {
		for i := range recs {
			r := &recs[i]
			src := &capsule.Source{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}
			if of, ok := r.HeaderValue(capsule.HeaderReplayOf); ok {
				out = p.processReplay(ctx, formats[r.Topic], r.Value, src, string(of), out)
			} else {
				out = p.Process(ctx, formats[r.Topic], r.Value, src, out)
			}
		}
		return out
	}, nil
}

// processReplay processes a raw record re-submitted by a replay of the
// EventError with uuid errUUID. Its schema is resolved afresh, never from
// the negative cache: the operator replays because the schema now exists,
// perhaps registered a moment ago. Its outcome is appended for the replay
// log, after the event's own outputs: the pipe produces them together and
// commits the raw offset only when all are acknowledged, so a replay
// recorded valid is in its output topic.
func (p *Processor) processReplay(ctx context.Context, f *lineformat.Format, raw []byte, src *capsule.Source, errUUID string, out []Output) []Output {
	out, res := p.processRaw(schema.WithoutNegativeCache(ctx), f, raw, src, out)
	if errUUID == "" || len(errUUID) > 256 {
		return out // not a uuid we could have written: nothing to record
	}
	o := capsule.ReplayOutcome{Status: capsule.ReplayValid, Time: p.cfg.Now().UTC(), UUID: res.UUID, Processor: p.cfg.ProcessorID}
	if !res.Valid() {
		o.Status, o.Code, o.Message = capsule.ReplayInvalid, res.Code, res.Message
	}
	v, err := json.Marshal(o)
	if err != nil {
		return out // cannot happen: strings and a time
	}
	return append(out, Output{Topic: p.cfg.ReplayTopic, Key: []byte(errUUID), Value: v})
}

// OfflineStats counts what an offline run did.
type OfflineStats struct {
	Lines, Valid, Invalid int
}

// MaxOfflineLine bounds one line of offline input (longer lines become
// EventErrors, and reading goes on).
const MaxOfflineLine = 8 << 20

// RunOffline reads raw lines from r, processes each with format f and writes
// every output record to w as one JSON line {"topic": ..., "key": null,
// "value": {...}} — the same processing as the Kafka path, for debugging,
// backfills and side-by-side comparison with the original.
func (p *Processor) RunOffline(ctx context.Context, f *lineformat.Format, r io.Reader, w io.Writer, log *slog.Logger) (OfflineStats, error) {
	var st OfflineStats
	br := bufio.NewReaderSize(r, 64<<10)
	bw := bufio.NewWriterSize(w, 64<<10)
	var outs []Output
	var line, enc []byte
	for {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		var err error
		line, err = readLine(br, line[:0])
		if len(line) == 0 && err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return st, fmt.Errorf("read input: %w", err)
		}
		st.Lines++
		outs = p.Process(ctx, f, line, nil, outs[:0])
		if len(outs) == 1 && outs[0].Topic == p.cfg.ErrorTopic {
			st.Invalid++
		} else {
			st.Valid++
		}
		for _, o := range outs {
			enc = append(enc[:0], `{"topic":`...)
			enc = capsule.AppendString(enc, o.Topic)
			enc = append(enc, `,"key":null,"value":`...)
			enc = append(enc, o.Value...)
			enc = append(enc, "}\n"...)
			if _, err := bw.Write(enc); err != nil {
				return st, fmt.Errorf("write output: %w", err)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	if err := bw.Flush(); err != nil {
		return st, fmt.Errorf("write output: %w", err)
	}
	if log != nil {
		log.Info("offline run done", "lines", st.Lines, "valid", st.Valid, "invalid", st.Invalid)
	}
	return st, nil
}

// readLine reads one line without its "\n" (and "\r\n"). Lines longer than
// MaxOfflineLine are cut there; the rest of the line is skipped, so the cut
// line fails the size check instead of stopping the run.
func readLine(br *bufio.Reader, buf []byte) ([]byte, error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf) < MaxOfflineLine {
			buf = append(buf, chunk[:min(len(chunk), MaxOfflineLine-len(buf))]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		n := len(buf)
		if n > 0 && buf[n-1] == '\n' {
			buf = buf[:n-1]
			if n > 1 && buf[n-2] == '\r' {
				buf = buf[:n-2]
			}
		}
		return buf, err
	}
}
