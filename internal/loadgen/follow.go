package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/kafka"
)

// FollowConfig says where the pipeline writes its output. Zero values are
// documented per field.
type FollowConfig struct {
	// Kafka reaches the pipeline's brokers; Brokers is required.
	Kafka kafka.Config
	// TopicTemplate names the per-schema topics ({schema}, {revision});
	// default eventlogging_{schema}.
	TopicTemplate string
	// ErrorTopic receives EventErrors; default eventlogging_EventError.
	ErrorTopic string
	// Timeout is how long following goes on after the last answer, for
	// events still in the pipeline; default 60s.
	Timeout time.Duration
	// StartTimeout bounds connecting to Kafka and fixing the start offsets
	// before the first request; default 30s.
	StartTimeout time.Duration
}

func (c *FollowConfig) setDefaults() {
	if c.TopicTemplate == "" {
		c.TopicTemplate = capsule.DefaultTopicTmpl
	}
	if c.ErrorTopic == "" {
		c.ErrorTopic = capsule.TopicEventError
	}
	if c.Timeout <= 0 {
		c.Timeout = 60 * time.Second
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 30 * time.Second
	}
}

// follower reads the output topics from where they ended before the run
// (or from the beginning of topics created during the run) and marks the
// run's events it finds.
type follower struct {
	cfg       FollowConfig
	tr        *tracker
	prefix    []byte
	log       *slog.Logger
	adm       *kafka.Admin
	cancel    context.CancelFunc
	stopOnce  sync.Once
	startNano atomic.Int64 // wall clock of the run's start, once sending begins
	lastMilli atomic.Int64 // largest Kafka timestamp of a first sighting
	wg        sync.WaitGroup
	mu        sync.Mutex // guards hist, readHist and errs
	hist      Histogram  // Kafka timestamp - send time
	readHist  Histogram  // time read by the follower - send time
	errs      []string
}

// outputTopics lists the per-schema topics of the schemas and the error topic.
func outputTopics(cfg FollowConfig, schemas []*Schema) ([]string, error) {
	tt, err := capsule.ParseTopicTemplate(cfg.TopicTemplate)
	if err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	var topics []string
	for _, s := range schemas {
		if t := tt.Format(s.ID.Name, s.ID.Revision); !slices.Contains(topics, t) {
			topics = append(topics, t)
		}
	}
	if !slices.Contains(topics, cfg.ErrorTopic) {
		topics = append(topics, cfg.ErrorTopic)
	}
	return topics, nil
}

// startFollower starts the readers and returns once every existing topic's
// start offset is fixed: records produced afterwards are all read. The
// topics that exist are read by one client (one fetch a round trip for all
// of them: a client per topic multiplied the broker's fetch requests, and
// on a shared machine the broker's CPU, by the number of topics); each
// topic that does not exist yet gets a reader of its own that reads it
// from its beginning once it appears.
func startFollower(ctx context.Context, cfg FollowConfig, tr *tracker, runID string, topics []string, log *slog.Logger) (*follower, error) {
	if len(cfg.Kafka.Brokers) == 0 {
		return nil, errNoBrokers
	}
	cfg.Kafka.ClientID = "eventlogging-bench"
	if cfg.Kafka.Logger == nil {
		cfg.Kafka.Logger = log
	}
	adm, err := kafka.NewAdmin(cfg.Kafka)
	if err != nil {
		return nil, fmt.Errorf("loadgen: follow: %w", err)
	}
	f := &follower{cfg: cfg, tr: tr, prefix: []byte(MarkerPrefix(runID)), log: log, adm: adm}
	lctx, cancelStart := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancelStart()
	existing, err := adm.ListTopics(lctx)
	if err != nil {
		adm.Close()
		return nil, fmt.Errorf("loadgen: follow: cannot reach Kafka at %v (--no-follow skips following): %w", cfg.Kafka.Brokers, err)
	}
	ctx, f.cancel = context.WithCancel(ctx)
	var ready sync.WaitGroup
	var present []string
	for _, t := range topics {
		if slices.Contains(existing, t) {
			present = append(present, t)
			continue
		}
		f.wg.Go(func() { f.follow(ctx, []string{t}, false, func() {}) })
	}
	if len(present) > 0 {
		ready.Add(1)
		var once sync.Once
		done := func() { once.Do(ready.Done) }
		f.wg.Go(func() {
			defer done()
			f.follow(ctx, present, true, done)
		})
	}
	waited := make(chan struct{})
	go func() { ready.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-lctx.Done():
		f.stop()
		return nil, fmt.Errorf("loadgen: follow: the start offsets of %v were not fixed within %v", topics, cfg.StartTimeout)
	}
	f.mu.Lock()
	errs := f.errs
	f.mu.Unlock()
	if len(errs) > 0 {
		f.stop()
		return nil, fmt.Errorf("loadgen: follow: %s", errs[0])
	}
	return f, nil
}

// setStart fixes the run's start (the base of the send times in markers).
func (f *follower) setStart(t time.Time) { f.startNano.Store(t.UnixNano()) }

// follow reads topics until ctx is done.
func (f *follower) follow(ctx context.Context, topics []string, exists bool, ready func()) {
	var h, rh Histogram
	defer func() {
		f.mu.Lock()
		f.hist.Merge(&h)
		f.readHist.Merge(&rh)
		f.mu.Unlock()
	}()
	delivered := false
	fn := func(r kafka.Record) error {
		delivered = true
		i := bytes.Index(r.Value, f.prefix)
		if i < 0 {
			return nil
		}
		seq, sentMicros, ok := parseMarker(r.Value[i+len(f.prefix):])
		if !ok || f.tr.see(seq, r.Topic == f.cfg.ErrorTopic) != first {
			return nil
		}
		ts := r.Timestamp.UnixMilli()
		sent := f.startNano.Load() + sentMicros*1000
		h.Record(time.Duration(r.Timestamp.UnixNano() - sent))
		rh.Record(time.Duration(time.Now().UnixNano() - sent))
		for {
			last := f.lastMilli.Load()
			if ts <= last || f.lastMilli.CompareAndSwap(last, ts) {
				break
			}
		}
		return nil
	}
	for {
		if !exists {
			if !f.awaitTopic(ctx, topics[0]) {
				return
			}
		}
		cfg := kafka.TailConfig{Kafka: f.cfg.Kafka, Topics: topics, FromBeginning: !exists, Bulk: true}
		if exists {
			cfg.OnStart = ready
		}
		err := kafka.Tail(ctx, cfg, fn)
		if err == nil || ctx.Err() != nil {
			return
		}
		if exists || delivered {
			// Reading again would skip records or see them twice.
			f.fail(fmt.Sprintf("topics %v: %v", topics, err))
			return
		}
		// Just created: its metadata may not be everywhere yet.
		f.log.Debug("bench: topic not readable yet", "topic", topics[0], "err", err)
		if !sleepCtx(ctx, 250*time.Millisecond) {
			return
		}
	}
}

// awaitTopic polls the topic list until topic exists; false when ctx ends.
func (f *follower) awaitTopic(ctx context.Context, topic string) bool {
	for {
		names, err := f.adm.ListTopics(ctx)
		if err == nil && slices.Contains(names, topic) {
			return true
		}
		if err != nil && ctx.Err() == nil {
			f.log.Warn("bench: listing topics failed", "err", err)
		}
		if !sleepCtx(ctx, 250*time.Millisecond) {
			return false
		}
	}
}

func (f *follower) fail(msg string) {
	f.mu.Lock()
	f.errs = append(f.errs, msg)
	f.mu.Unlock()
}

// stop stops the readers, waits for them and releases the admin client.
func (f *follower) stop() {
	f.stopOnce.Do(func() {
		f.cancel()
		f.wg.Wait()
		f.adm.Close()
	})
}

// parseMarker reads "<seq>-<sentMicros>" at the start of b.
func parseMarker(b []byte) (seq uint64, sentMicros int64, ok bool) {
	i := 0
	for ; i < len(b) && i < 20 && '0' <= b[i] && b[i] <= '9'; i++ {
		seq = seq*10 + uint64(b[i]-'0')
	}
	if i == 0 || i >= len(b) || b[i] != '-' {
		return 0, 0, false
	}
	i++
	j := i
	for ; i < len(b) && i-j < 18 && '0' <= b[i] && b[i] <= '9'; i++ {
		sentMicros = sentMicros*10 + int64(b[i]-'0')
	}
	return seq, sentMicros, i > j
}

// sleepCtx sleeps for d; false when ctx ended first.
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

var errNoBrokers = errors.New("loadgen: follow: no Kafka brokers")
