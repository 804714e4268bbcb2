package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BatchConfig configures a consume→write→commit loop for sinks.
type BatchConfig struct {
	Kafka Config
	// Group is the sink's own consumer group; required.
	Group string
	// Topics to consume; with TopicRegex each is a regular expression
	// (e.g. "^eventlogging_.+"), matched against topics as they appear.
	Topics     []string
	TopicRegex bool
	// Exclude lists regular expressions of topics not to consume even when
	// they match Topics (TopicRegex only).
	Exclude []string
	// MaxBatch bounds one batch; default 1,000 records.
	MaxBatch int
	// BatchTime bounds how long a record waits in a batch that is not full:
	// a quiet topic's tail is written within it; default 5s.
	BatchTime time.Duration
	// SessionTimeout of the group member; default 10s.
	SessionTimeout time.Duration
	// ShutdownTimeout bounds the work on the batch in hand once ctx is
	// done (write and commit): after it the handler's context is cancelled
	// and ConsumeBatches returns; default 30s, as for Pipe.
	ShutdownTimeout time.Duration
	// StartOffsets, if set, is asked on each assignment for the offsets to
	// resume from (a sink that records its own offsets, such as a file
	// sink, overrides the group's committed ones). Partitions it leaves out
	// resume from the committed offset.
	StartOffsets func(ctx context.Context, assigned map[string][]int32) (map[string]map[int32]int64, error)
	// Revoked, if set, is told of the partitions taken from this member,
	// between batches: by a rebalance or as it leaves the group (lost
	// false: nobody else consumes them before Revoked returns), or
	// because its session expired (lost: another member may own them
	// already).
	Revoked func(ctx context.Context, revoked map[string][]int32, lost bool)
	// Logger; nil discards.
	Logger *slog.Logger
}

// ErrFatalBatch stops ConsumeBatches at once when a handler's error wraps it
// (without committing the batch) instead of retrying: the sink cannot go on
// in this process, and a restart resumes it.
var ErrFatalBatch = errors.New("sink cannot continue")

// BatchHandler writes a batch durably; nil means durable, and the batch's
// offsets are committed. An error is retried with capped exponential
// backoff (1s to 30s) until it succeeds or the context ends: a handler
// deals with records that can never be written itself (e.g. sends them to
// an error topic) and returns errors only for transient failures. ctx
// outlives ConsumeBatches' own by at most BatchConfig.ShutdownTimeout; the
// handler must return soon after ctx is done.
type BatchHandler func(ctx context.Context, batch []Record) error

// ConsumeBatches runs one member of cfg.Group until ctx is done. Offsets are
// committed only after the handler returned nil for the batch holding them
// (at least once); a rebalance never happens while a batch is in hand.
// Once ctx is done the batch in hand is written and committed within
// cfg.ShutdownTimeout; after it the handler's context is cancelled and
// ConsumeBatches returns an error, the batch uncommitted (its records are
// consumed again by the group's next member).
func ConsumeBatches(ctx context.Context, cfg BatchConfig, handle BatchHandler) error {
	if cfg.Group == "" || len(cfg.Topics) == 0 {
		return errors.New("kafka batches: group and topics are required")
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 1000
	}
	if cfg.BatchTime <= 0 {
		cfg.BatchTime = 5 * time.Second
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 10 * time.Second
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = shutdownTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.TopicRegex {
		for _, t := range cfg.Topics {
			if _, err := regexp.Compile(t); err != nil {
				return fmt.Errorf("kafka batches: topic regex %q: %w", t, err)
			}
		}
	}
	log := cfg.Logger
	opts := append(cfg.Kafka.bulkFetchOpts(),
		kgo.ConsumerGroup(cfg.Group),
		kgo.ConsumeTopics(cfg.Topics...),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(cfg.SessionTimeout),
		kgo.HeartbeatInterval(cfg.SessionTimeout/10),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.MetadataMaxAge(5*time.Second), // new topics matching a regex are found within this
	)
	if cfg.TopicRegex {
		opts = append(opts, kgo.ConsumeRegex())
		if len(cfg.Exclude) > 0 {
			opts = append(opts, kgo.ConsumeExcludeTopics(cfg.Exclude...))
		}
	}
	// Rebalances are logged (which partitions came, went or were lost).
	rl := rebalanceLog{log: log, group: cfg.Group}
	opts = append(opts, kgo.OnPartitionsAssigned(rl.assigned), kgo.OnPartitionsRevoked(rl.revoked), kgo.OnPartitionsLost(rl.lost))
	if cfg.Revoked != nil {
		// Replace the hooks above: they log too.
		opts = append(opts, kgo.OnPartitionsRevoked(func(ctx context.Context, c *kgo.Client, m map[string][]int32) {
			rl.revoked(ctx, c, m)
			cfg.Revoked(ctx, m, false)
		}), kgo.OnPartitionsLost(func(ctx context.Context, c *kgo.Client, m map[string][]int32) {
			rl.lost(ctx, c, m)
			cfg.Revoked(ctx, m, true)
		}))
	}
	// startErr stops the loop: resuming from the committed offsets instead
	// of the sink's own could leave a gap.
	var startErr atomic.Pointer[error]
	if cfg.StartOffsets != nil {
		// Replaces the assignment hook above: it logs too.
		opts = append(opts, kgo.OnPartitionsAssigned(func(actx context.Context, c *kgo.Client, assigned map[string][]int32) {
			rl.assigned(actx, c, assigned)
			offs, err := cfg.StartOffsets(actx, assigned)
			if err != nil {
				err = fmt.Errorf("%w: sink start offsets: %w", ErrFatalBatch, err)
				startErr.Store(&err)
				c.PauseFetchTopics(topicsOf(assigned)...)
				return
			}
			set := map[string]map[int32]kgo.EpochOffset{}
			for t, ps := range offs {
				set[t] = map[int32]kgo.EpochOffset{}
				for p, o := range ps {
					set[t][p] = kgo.EpochOffset{Epoch: -1, Offset: o}
				}
			}
			c.SetOffsets(set)
		}))
	}
	cl, err := NewClient(cfg.Kafka, opts...)
	if err != nil {
		return err
	}
	defer func() {
		cl.AllowRebalance() // a blocked rebalance must not hold up leaving the group
		cl.Close()
	}()
	if cfg.Kafka.SASL != nil {
		// Refused credentials would only show as fetch errors, retried
		// forever: stop now, saying why.
		if err := checkAuth(ctx, cl); err != nil {
			return err
		}
	}

	// work outlives ctx by at most cfg.ShutdownTimeout, so the batch in
	// hand can be finished and committed, and a stuck store cannot hold
	// the shutdown for ever.
	work, cancelWork := workContext(ctx, cfg.ShutdownTimeout)
	defer cancelWork()
	var batch []Record
	var due time.Time
	for {
		pollCtx, cancel := ctx, context.CancelFunc(func() {})
		if len(batch) > 0 {
			pollCtx, cancel = context.WithDeadline(ctx, due)
		}
		fetches := cl.PollRecords(pollCtx, cfg.MaxBatch-len(batch))
		cancel()
		if fetches.IsClientClosed() {
			return nil
		}
		if err := startErr.Load(); err != nil {
			return *err
		}
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				log.Warn("fetch error", "topic", t, "partition", p, "err", err)
			}
		})
		fetches.EachRecord(func(r *kgo.Record) {
			if len(batch) == 0 {
				due = time.Now().Add(cfg.BatchTime)
			}
			batch = append(batch, recordOf(r))
		})
		stopping := ctx.Err() != nil
		if len(batch) > 0 && (len(batch) >= cfg.MaxBatch || !time.Now().Before(due) || stopping) {
			if err := writeWithRetry(work, handle, batch, log); err != nil {
				return err
			}
			// The batch is durable in the sink: only now commit its offsets.
			err := commitWithRetry(work, ctx, log, len(batch), cl.CommitUncommittedOffsets)
			if err != nil && !errors.Is(err, errGenerationLost) {
				return err
			}
			// Committed, or no longer ours (the partitions' next owner
			// writes the batch again, which the sink absorbs): go on.
			batch = batch[:0]
		}
		if len(batch) == 0 {
			cl.AllowRebalance()
		}
		if stopping {
			return nil
		}
	}
}

// writeWithRetry calls handle until it succeeds, retrying with capped
// backoff for as long as work lives: for ever while the run goes on, for
// at most the shutdown timeout once it has ended (see workContext). It then
// gives up, and the batch is not committed.
func writeWithRetry(work context.Context, handle BatchHandler, batch []Record, log *slog.Logger) error {
	backoff := time.Second
	for {
		err := handle(work, batch)
		if err == nil {
			return nil
		}
		if errors.Is(err, ErrFatalBatch) {
			return err
		}
		if work.Err() != nil {
			return fmt.Errorf("sink write failed at shutdown (the batch will be consumed again): %w", err)
		}
		log.Warn("sink write failed; retrying", "records", len(batch), "backoff", backoff, "err", err)
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-work.Done():
			t.Stop()
			return fmt.Errorf("sink write failed at shutdown (the batch will be consumed again): %w", err)
		}
		backoff = min(backoff*2, 30*time.Second)
	}
}

func topicsOf(m map[string][]int32) []string {
	out := make([]string, 0, len(m))
	for t := range m {
		out = append(out, t)
	}
	return out
}
