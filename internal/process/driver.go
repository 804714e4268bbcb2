package process

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"unicode/utf8"

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

// Refused returns the EventError to produce in place of an output record
// Kafka refused for good (err says why: too large for the topic's
// max.message.bytes, a topic name Kafka refuses, …), with the refused
// record, cut, as its raw event. An EventError refused in turn has none:
// the pipe counts and skips it. For kafka.PipeConfig.OnRefused.
func (p *Processor) Refused(m Output, err error) (Output, bool) {
	if m.Topic == p.cfg.ErrorTopic {
		return Output{}, false
	}
	now := p.cfg.Now()
	raw := m.Value
	if len(raw) > p.cfg.MaxRawErrorBytes {
		n := p.cfg.MaxRawErrorBytes
		for n > 0 && n < len(raw) && !utf8.RuneStart(raw[n]) {
			n-- // on a character's boundary
		}
		raw = raw[:n]
	}
	ec := capsule.ErrorCapsule{
		Event: capsule.EventError{
			RawEvent: string(raw),
			Message:  fmt.Sprintf("Kafka refused the record of %d bytes for topic %s: %v", len(m.Value), m.Topic, err),
			Code:     capsule.CodeProcessor,
			Schema:   "unknown", Revision: -1,
			ProcessorID: p.cfg.ProcessorID,
		},
		Schema:    capsule.EventErrorSchema,
		Revision:  capsule.EventErrorRevision,
		Timestamp: now.Unix(),
		DT:        capsule.FormatDT(now),
		UUID:      refusedUUID(m),
		Topic:     p.cfg.ErrorTopic,
	}
	if len(raw) < len(m.Value) {
		ec.Event.RawEventBytes = len(m.Value)
	}
	if s, r := capsule.RecoverSchema(raw); s != "unknown" {
		ec.Event.Schema, ec.Event.Revision = s, r
	}
	if !utf8.Valid(raw) {
		ec.Event.RawEventBase64 = raw
	}
	// Well below the record limit: a topic whose max.message.bytes
	// refused the record may take this one.
	return Output{Topic: p.cfg.ErrorTopic, Value: ec.Fit(nil, min(p.cfg.MaxRecordBytes, 2*p.cfg.MaxRawErrorBytes))}, true
}

// refusedUUID is the uuid of a refused record's EventError: the event's
// own (a capsule's uuid, an Event Platform event's meta.id as 32 hex
// digits), so that the answer's uuid and the EventError agree; else one
// derived from the record.
func refusedUUID(m Output) string {
	var ev struct {
		UUID string `json:"uuid"`
		Meta struct {
			ID string `json:"id"`
		} `json:"meta"`
	}
	if json.Unmarshal(m.Value, &ev) == nil {
		if ev.UUID != "" && len(ev.UUID) <= capsule.MaxFieldBytes {
			return ev.UUID
		}
		if ev.Meta.ID != "" && len(ev.Meta.ID) <= capsule.MaxFieldBytes {
			return ev.Meta.ID
		}
	}
	return capsule.UUIDFromURL("refused://" + m.Topic + "/" + string(m.Value))
}

// OfflineStats counts what an offline run did.
type OfflineStats struct {
	Lines, Valid, Invalid int
}

// MaxOfflineLine bounds one line of offline input (longer lines become
// EventErrors, and reading goes on).
const MaxOfflineLine = 8 << 20

// OfflineConfig tunes RunOffline. The zero value is valid.
type OfflineConfig struct {
	// Workers is how many goroutines process lines; 0 means
	// runtime.GOMAXPROCS(0). The output is the same for every value.
	Workers int
	// Logger reports the end of the run; nil logs nothing.
	Logger *slog.Logger
}

// Offline input is cut into chunks of consecutive lines: a chunk is full at
// offlineChunkLines lines or offlineChunkBytes bytes (a chunk always holds
// at least one line, so one line of up to MaxOfflineLine is a chunk too).
// A run has 2 × workers + 2 chunks, each being read, queued, processed or
// waiting for its turn to be written; the reader waits for the writer to
// free one, which bounds memory whatever the input size.
const (
	offlineChunkLines = 512
	offlineChunkBytes = 256 << 10
)

// offlineChunk is a run of consecutive input lines and, once processed,
// their encoded output.
type offlineChunk struct {
	data []byte // the lines, concatenated
	ends []int  // end offset of each line in data
	out  []byte // the output records, one JSON line each
	// valid and invalid count the chunk's lines by outcome.
	valid, invalid int
	done           chan struct{} // receives once the chunk is processed
}

func (c *offlineChunk) reset() {
	if cap(c.data) > 4*offlineChunkBytes {
		c.data = nil // held one very long line: do not keep it
	}
	if cap(c.out) > 16*offlineChunkBytes {
		c.out = nil
	}
	c.data, c.ends, c.out = c.data[:0], c.ends[:0], c.out[:0]
	c.valid, c.invalid = 0, 0
}

// RunOffline reads raw lines from r, processes each with format f and writes
// every output record to w as one JSON line {"topic": ..., "key": null,
// "value": {...}} — the same processing as the Kafka path, for debugging,
// backfills and side-by-side comparison with the original.
//
// Lines are processed in chunks on cfg.Workers goroutines, and the outputs
// are written strictly in input order: the bytes written do not depend on
// the number of workers. RunOffline returns once every goroutine it started
// has exited. When ctx is done it stops reading, writes the outputs of the
// chunks processed before, flushes and returns ctx's error: the output is
// then the complete output of a prefix of the input. A read error is
// returned after the outputs of every line read before it are written; a
// write error ends the run at once.
func (p *Processor) RunOffline(ctx context.Context, f *lineformat.Format, r io.Reader, w io.Writer, cfg OfflineConfig) (OfflineStats, error) {
	workers := cfg.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	inflight := 2*workers + 2
	free := make(chan *offlineChunk, inflight)
	for range inflight {
		free <- &offlineChunk{done: make(chan struct{}, 1)}
	}
	// order carries every chunk in input order, to the writer; work the
	// same chunks to the workers. Both hold at most inflight chunks, so
	// sends on them never block.
	order := make(chan *offlineChunk, inflight)
	work := make(chan *offlineChunk, inflight)
	stop := make(chan struct{}) // closed when the writer gives up
	var readErr error           // set by the reader before it closes order

	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the reader
		defer wg.Done()
		defer close(order)
		defer close(work)
		readErr = readOfflineChunks(ctx, r, free, order, work, stop)
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var outs []Output
			s := &scratch{borrow: true} // this worker's own
			for c := range work {
				outs = p.processOfflineChunk(ctx, s, f, c, outs)
				c.done <- struct{}{}
			}
		}()
	}

	// The writer: this goroutine.
	var st OfflineStats
	bw := bufio.NewWriterSize(w, 64<<10)
	var writeErr error
	for c := range order {
		<-c.done
		// Written only if ctx was not done when the chunk's processing
		// ended: no record of a line that saw a cancelled ctx (a schema
		// lookup failing with "context canceled") reaches the output.
		if writeErr == nil && ctx.Err() == nil {
			if _, err := bw.Write(c.out); err != nil {
				writeErr = fmt.Errorf("write output: %w", err)
				close(stop)
			} else {
				st.Lines += len(c.ends)
				st.Valid += c.valid
				st.Invalid += c.invalid
			}
		}
		c.reset()
		free <- c
	}
	wg.Wait()
	if writeErr != nil {
		return st, writeErr
	}
	if err := bw.Flush(); err != nil {
		return st, fmt.Errorf("write output: %w", err)
	}
	if readErr != nil {
		return st, readErr
	}
	if err := ctx.Err(); err != nil {
		return st, err
	}
	if cfg.Logger != nil {
		cfg.Logger.Info("offline run done", "lines", st.Lines, "valid", st.Valid, "invalid", st.Invalid, "workers", workers)
	}
	return st, nil
}

// readOfflineChunks reads r into chunks taken from free and sends each, in
// input order, on order and work. It returns at the end of the input (nil),
// when ctx is done or stop is closed (nil: the caller reports why), or on a
// read error, after sending the lines read before it.
func readOfflineChunks(ctx context.Context, r io.Reader, free <-chan *offlineChunk, order, work chan<- *offlineChunk, stop <-chan struct{}) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	var c *offlineChunk
	send := func() {
		if c != nil && len(c.ends) > 0 {
			order <- c
			work <- c
			c = nil
		}
	}
	for {
		if c == nil {
			select {
			case c = <-free:
			case <-ctx.Done():
				return nil
			case <-stop:
				return nil
			}
			// The writer closes stop before it recycles a chunk: once it
			// gave up, no chunk is filled again.
			select {
			case <-stop:
				return nil
			default:
			}
			if ctx.Err() != nil {
				return nil
			}
		}
		var err error
		line, err = readLine(br, line[:0])
		if len(line) == 0 && err != nil {
			send()
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read input: %w", err)
		}
		c.data = append(c.data, line...)
		c.ends = append(c.ends, len(c.data))
		if err != nil {
			// A last line without "\n", or a line cut by a read error:
			// the next read reports the error again, with no line.
			continue
		}
		if len(c.ends) >= offlineChunkLines || len(c.data) >= offlineChunkBytes {
			send()
		}
	}
}

// processOfflineChunk processes the lines of c into c.out; outs is scratch
// space, returned for reuse. s is the worker's scratch, in borrow mode: a
// value is copied into c.out before the next line overwrites it.
func (p *Processor) processOfflineChunk(ctx context.Context, s *scratch, f *lineformat.Format, c *offlineChunk, outs []Output) []Output {
	start := 0
	for _, end := range c.ends {
		// Capacity cut at the line's end: an append to it cannot
		// overwrite the next line.
		line := c.data[start:end:end]
		start = end
		outs, _ = p.processWith(ctx, s, f, line, nil, outs[:0])
		if len(outs) == 1 && outs[0].Topic == p.cfg.ErrorTopic {
			c.invalid++
		} else {
			c.valid++
		}
		for _, o := range outs {
			c.out = append(c.out, `{"topic":`...)
			c.out = capsule.AppendString(c.out, o.Topic)
			c.out = append(c.out, `,"key":null,"value":`...)
			c.out = append(c.out, o.Value...)
			c.out = append(c.out, "}\n"...)
		}
	}
	clear(outs) // drop references to the values
	return outs
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
