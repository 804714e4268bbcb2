package intake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/spool"
)

// ErrUnavailable means an event could be put neither into Kafka nor into the
// spool: the caller answers 503 with Retry-After.
var ErrUnavailable = errors.New("intake: cannot accept events now (Kafka unreachable and spool full)")

// Producer is the Kafka side of a Writer (kafka.Producer).
type Producer interface {
	TryProduce(m kafka.Message, cb func(error))
	// ProduceEach produces msgs and returns each one's outcome once all
	// are acknowledged or failed (kafka.Producer.ProduceEach); topicErr
	// is the error of creating their topics.
	ProduceEach(ctx context.Context, msgs []kafka.Message, topicErr error) kafka.Outcome
	Ping(ctx context.Context) error
}

// TopicCreator creates topics that do not exist yet (kafka.Topics); the
// broker does not auto-create the per-schema topics the synchronous path
// writes to.
type TopicCreator interface {
	Ensure(ctx context.Context, names ...string) error
}

// WriterConfig tunes a Writer.
type WriterConfig struct {
	// Topics creates output topics before the first produce to them; nil
	// means every topic exists.
	Topics TopicCreator
	// SyncTimeout bounds a synchronous produce before its records are
	// spooled instead; default 10s.
	SyncTimeout time.Duration
	// ReplayBatch is how many spooled records are sent per produce; default 1000.
	ReplayBatch int
	// OnRefused, if set, gives the record to write in place of one Kafka
	// refused for good when the spool's replay meets it (the processor's
	// EventError saying why: an event answered 201 while Kafka was away
	// must not vanish without a trace); false or nil: counted and logged.
	OnRefused func(m kafka.Message, err error) (kafka.Message, bool)
	Logger    *slog.Logger
}

// Writer gets accepted records to Kafka. While Kafka is unreachable (or
// while older records wait in the spool, to keep their order) records go to
// the spool, which Run replays when Kafka answers again. Safe for concurrent
// use.
type Writer struct {
	prod  Producer
	spool *spool.Queue
	cfg   WriterConfig
	log   *slog.Logger

	down atomic.Bool   // Kafka failed; spool until the replay drains
	wake chan struct{} // nudges the replayer
	mu   sync.Mutex    // orders spool appends against the replayer's drain check
	lost atomic.Int64  // records lost: delivery failed and the spool refused them
	// refused counts records Kafka refused for good (kafka.IsPermanent):
	// never retried nor spooled.
	refused atomic.Int64

	// Every record in the producer buffer has room in the spool set aside,
	// so that a delivery failure can always spool it: reserved is the
	// frame bytes of the buffered records, room the spool's Room() as
	// last read (refreshed every roomMaxAge, and after every append).
	reserved atomic.Int64
	room     atomic.Int64
	roomAt   atomic.Int64 // unix nanoseconds of the last read; 0: stale
	spools   atomic.Int64 // records written to the spool
	replayed atomic.Int64 // spooled records acknowledged by Kafka
}

// NewWriter returns a Writer; Run must be running for spooled records to be
// replayed.
func NewWriter(prod Producer, q *spool.Queue, cfg WriterConfig) *Writer {
	if cfg.SyncTimeout <= 0 {
		cfg.SyncTimeout = 10 * time.Second
	}
	if cfg.ReplayBatch <= 0 {
		cfg.ReplayBatch = 1000
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	w := &Writer{prod: prod, spool: q, cfg: cfg, log: cfg.Logger, wake: make(chan struct{}, 1)}
	if q.Len() > 0 {
		w.down.Store(true) // replay what an earlier run left, before new records
	}
	return w
}

// Stats are the Writer's counters.
type Stats struct {
	Spooled, Lost int64
	// Refused are records Kafka refused for good, skipped.
	Refused      int64
	SpoolRecords int
	SpoolBytes   int64
	KafkaDown    bool
}

// Stats returns the current counters.
func (w *Writer) Stats() Stats {
	return Stats{Spooled: w.spools.Load(), Lost: w.lost.Load(), Refused: w.refused.Load(), SpoolRecords: w.spool.Len(), SpoolBytes: w.spool.Bytes(), KafkaDown: w.down.Load()}
}

// roomMaxAge is how long a reading of the spool's room is used before it
// is read again (a statfs), on the asynchronous path's hot path.
const roomMaxAge = 100 * time.Millisecond

// Enqueue accepts records for asynchronous delivery (beacon, hasty POST).
// It returns once each record is in the producer's bounded buffer, with
// room set aside in the spool, or in the spool. A record whose delivery
// later fails is spooled then, into the room set aside for it. When the
// spool cannot take what the buffer already holds plus msgs, it returns
// ErrUnavailable (503): an answered event must never find the spool full.
func (w *Writer) Enqueue(msgs []kafka.Message) error {
	if w.down.Load() || w.spool.Len() > 0 {
		return w.toSpool(msgs)
	}
	var size int64
	for _, m := range msgs {
		size += spool.FrameSize(m)
	}
	if w.reserved.Add(size) > w.spoolRoom() {
		w.reserved.Add(-size)
		return fmt.Errorf("%w: the spool has no room left for the records in the producer buffer", ErrUnavailable)
	}
	for _, m := range msgs {
		w.prod.TryProduce(m, func(err error) {
			defer w.reserved.Add(-spool.FrameSize(m))
			if err == nil {
				return
			}
			// A permanent refusal may not be this record's own: Kafka
			// refuses a whole batch for one record, and the producer
			// fails every record of it. It goes to the spool like any
			// failure (its room is set aside), whose replay produces
			// records one by one where a batch is refused, so that only
			// the record at fault is refused, and never again. Kafka is
			// not down then.
			if !errors.Is(err, kafka.ErrBufferFull) && !kafka.IsPermanent(err) && w.down.CompareAndSwap(false, true) {
				w.log.Warn("kafka delivery failed; spooling until it answers again", "err", err)
			}
			if serr := w.appendSpool([]kafka.Message{m}, true); serr != nil {
				w.lost.Add(1)
				w.log.Error("event lost: delivery failed and the spool refused it", "topic", m.Topic, "delivery_err", err, "spool_err", serr)
			}
		})
	}
	return nil
}

// spoolRoom returns the spool's room as read at most roomMaxAge ago.
func (w *Writer) spoolRoom() int64 {
	now := time.Now().UnixNano()
	if at := w.roomAt.Load(); at == 0 || now-at > int64(roomMaxAge) {
		w.room.Store(w.spool.Room())
		w.roomAt.Store(now)
	}
	return w.room.Load()
}

// Deliver produces records and returns when all are acknowledged by all
// in-sync replicas — or, when Kafka does not answer in SyncTimeout, once
// they are fsync'd in the spool. A record Kafka refuses for good
// (kafka.IsPermanent) is neither retried nor spooled: its error is in the
// returned Outcome (nil when there is none), and its neighbours are
// acknowledged.
func (w *Writer) Deliver(ctx context.Context, msgs []kafka.Message) (kafka.Outcome, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	if w.down.Load() || w.spool.Len() > 0 {
		return nil, w.toSpool(msgs)
	}
	if err := ctx.Err(); err != nil { // the client is gone already
		return nil, fmt.Errorf("intake: deliver: %w", err)
	}
	// The records are produced without the request's cancellation: the
	// producer fails a whole batch by the context of its first record, so
	// one client going away would fail the other requests' records in the
	// same batch, and the writer would take that for Kafka failing and
	// spool everything after it. The records of a client that went away
	// meanwhile are written anyway (a retry has the same uuid).
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.SyncTimeout)
	res, err := w.produce(sctx, msgs)
	cancel()
	if err == nil {
		for _, i := range res.Refused() {
			w.refuse(msgs[i], res[i])
		}
		return res, nil
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("intake: deliver: %w", ctx.Err())
	}
	if w.down.CompareAndSwap(false, true) {
		w.log.Warn("kafka produce failed; spooling until it answers again", "err", err)
	}
	// Some records may have been written before the failure; replaying
	// them duplicates, which the deterministic uuid makes harmless. The
	// ones Kafka refused for good are not spooled.
	if refused := res.Refused(); len(refused) > 0 {
		keep := make([]kafka.Message, 0, len(msgs))
		for i, m := range msgs {
			if res[i] != nil && kafka.IsPermanent(res[i]) {
				w.refuse(m, res[i])
				continue
			}
			keep = append(keep, m)
		}
		return res.OnlyRefused(), w.toSpool(keep)
	}
	return nil, w.toSpool(msgs)
}

// produce creates msgs' topics and produces them; the error is the first
// that is not the failure of one record for good (Kafka unreachable, a
// timeout).
func (w *Writer) produce(ctx context.Context, msgs []kafka.Message) (kafka.Outcome, error) {
	err := w.ensureTopics(ctx, msgs)
	var tr *kafka.TopicsRefusedError
	if err != nil && !errors.As(err, &tr) {
		return nil, err
	}
	res := w.prod.ProduceEach(ctx, msgs, err)
	return res, res.Err()
}

// refuse counts and logs a record Kafka refused for good.
func (w *Writer) refuse(m kafka.Message, err error) {
	w.refused.Add(1)
	w.log.Error("record refused by Kafka for good: not retried", "topic", m.Topic, "bytes", len(m.Value), "err", err)
}

// ensureTopics creates the topics of msgs that do not exist yet.
func (w *Writer) ensureTopics(ctx context.Context, msgs []kafka.Message) error {
	if w.cfg.Topics == nil {
		return nil
	}
	var names []string
	for _, m := range msgs {
		if !slices.Contains(names, m.Topic) {
			names = append(names, m.Topic)
		}
	}
	return w.cfg.Topics.Ensure(ctx, names...)
}

// toSpool appends records that were never in the producer buffer; it
// leaves alone the room set aside for those that are (see Enqueue).
func (w *Writer) toSpool(msgs []kafka.Message) error {
	return w.appendSpool(msgs, false)
}

// appendSpool appends msgs to the spool. reserved: their room was set
// aside when they entered the producer buffer (a delivery failure);
// otherwise they may use only the room nobody has set aside.
func (w *Writer) appendSpool(msgs []kafka.Message, reserved bool) error {
	recs := msgs // the spool takes the same records
	var size int64
	for _, m := range msgs {
		size += spool.FrameSize(m)
	}
	w.mu.Lock()
	var err error
	if !reserved && w.spool.Room()-w.reserved.Load() < size {
		err = fmt.Errorf("spool: the room left is set aside for the %d bytes of records in the producer buffer", w.reserved.Load())
	} else {
		err = w.spool.Append(recs)
	}
	w.mu.Unlock()
	w.roomAt.Store(0) // the room changed: read it again
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	w.spools.Add(int64(len(msgs)))
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return nil
}

// Ready reports whether Kafka answers.
func (w *Writer) Ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return w.prod.Ping(ctx)
}

// replayBackoffMax caps the wait between replay attempts while Kafka does
// not answer: the replay starts at most this long after it is back, and
// meanwhile every accepted event costs a spool fsync.
const replayBackoffMax = 2 * time.Second

// Run replays the spool into Kafka, oldest first, removing records only
// after they are acknowledged, until ctx is done.
func (w *Writer) Run(ctx context.Context) error {
	backoff := 250 * time.Millisecond
	failures := logThrottle{every: 30 * time.Second}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if w.spool.Len() == 0 && w.down.Load() {
			if w.Ready(ctx) == nil {
				w.mu.Lock()
				if w.spool.Len() == 0 {
					w.down.Store(false)
					w.log.Info("kafka answers again; spool drained", "spooled_total", w.spools.Load(), "replayed_total", w.replayed.Load(), "lost_total", w.lost.Load())
				}
				w.mu.Unlock()
			}
		}
		if w.spool.Len() > 0 {
			n, err := w.replayOnce(ctx)
			switch {
			case err != nil:
				if ok, held := failures.allow(time.Now()); ok {
					w.log.Warn("spool replay failed; retrying (logged at most every 30s)", "err", err, "backoff", backoff, "spooled", w.spool.Len(), "failures_since_last_line", held)
				}
				if !sleepCtx(ctx, backoff) {
					return nil
				}
				backoff = min(backoff*2, replayBackoffMax)
				continue
			case n > 0:
				backoff = 250 * time.Millisecond
				failures = logThrottle{every: 30 * time.Second}
				continue
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-w.wake:
		case <-tick.C:
		}
	}
}

func (w *Writer) replayOnce(ctx context.Context) (int, error) {
	if err := w.Ready(ctx); err != nil {
		return 0, err
	}
	recs, err := w.spool.Peek(w.cfg.ReplayBatch)
	if err != nil || len(recs) == 0 {
		return 0, err
	}
	msgs := recs // a spooled record is the message, key included
	sctx, cancel := context.WithTimeout(ctx, w.cfg.SyncTimeout)
	defer cancel()
	res, perr := w.produce(sctx, msgs)
	// The records leave the spool one by one, in order: every record up
	// to the first that must be tried again, each either acknowledged or
	// refused by Kafka for good (counted, logged, never tried again), so
	// that no record is produced twice because a neighbour failed. A
	// crash between the produce and the ack replays them (at least once).
	done := len(recs)
	if perr != nil {
		done = 0
		// res is nil when nothing was produced (the topics could not be
		// created): nothing is done.
		for res != nil && done < len(recs) && (res[done] == nil || kafka.IsPermanent(res[done])) {
			done++
		}
	}
	var repl []kafka.Message
	for i := range done {
		if res != nil && res[i] != nil {
			w.refuse(msgs[i], res[i])
			if w.cfg.OnRefused != nil {
				if m, ok := w.cfg.OnRefused(msgs[i], res[i]); ok {
					repl = append(repl, m)
				}
			}
		}
	}
	if len(repl) > 0 {
		// The replacements before the ack: a failure now replays the
		// prefix (at least once).
		rres, rerr := w.produce(sctx, repl)
		if rerr != nil {
			return 0, rerr
		}
		for _, i := range rres.Refused() {
			w.log.Error("the EventError of a refused record was refused too: skipped", "topic", repl[i].Topic, "bytes", len(repl[i].Value), "err", rres[i])
		}
	}
	if done > 0 {
		if err := w.spool.Ack(done); err != nil {
			return 0, err
		}
		w.roomAt.Store(0) // acked segments may have been deleted: read the room again
		w.replayed.Add(int64(done))
	}
	return done, perr
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
