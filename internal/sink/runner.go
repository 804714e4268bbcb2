package sink

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"regexp"
	"slices"
	"time"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/kafka"
)

// DefaultErrorTopic receives records a sink can never write.
const DefaultErrorTopic = "eventlogging_SinkError"

// DefaultMaintainEvery is the interval of Maintainer.Maintain when
// Config.MaintainEvery is zero.
const DefaultMaintainEvery = time.Minute

// Config configures one sink's consume loop.
type Config struct {
	Kafka kafka.Config
	// Name labels the sink in metrics, logs and error records (sql,
	// files); required.
	Name string
	// Group is the sink's consumer group (e.g. eventlogging-sink-sql).
	Group string
	// Topics to read: names, or regular expressions with TopicRegex
	// (default "^eventlogging_.+").
	Topics     []string
	TopicRegex bool
	// Exclude: regular expressions of topics never read (with TopicRegex);
	// the error topics and the IP-key topic are always excluded.
	Exclude []string
	// ErrorTopic receives poison records; default eventlogging_SinkError.
	ErrorTopic string
	// MaxBatch and BatchTime bound a batch (defaults 1,000 and 5s).
	MaxBatch  int
	BatchTime time.Duration
	// ShutdownTimeout bounds the write and commit of the batch in hand
	// once ctx is done: after it the write's context is cancelled and Run
	// returns, the batch uncommitted; default 30s.
	ShutdownTimeout time.Duration
	// MaintainEvery is the interval of a Maintainer's Maintain; default
	// DefaultMaintainEvery.
	MaintainEvery time.Duration
	// Producer writes poison records; required.
	Producer *kafka.Producer
	// Topics creates the error topic; may be nil when it exists.
	Creator *kafka.Topics
	Logger  *slog.Logger
	// Metrics measures the sink; nil measures nothing.
	Metrics *Metrics
	// DedupeWindow, for a Resumer (the file and Iceberg sinks), is how
	// many records of each partition are remembered by key (the event's
	// uuid) so that a copy of an event within that distance is dropped
	// (see dedupe); each assignment rereads as many before the sink's
	// start offset. At most this many 16-byte keys per assigned partition
	// are held (about 50 bytes each). 0 or less: off, every record stored.
	DedupeWindow int
}

func (c *Config) defaults() {
	if c.ErrorTopic == "" {
		c.ErrorTopic = DefaultErrorTopic
	}
	if len(c.Topics) == 0 {
		c.Topics, c.TopicRegex = []string{`^eventlogging_.+`}, true
	}
	c.Exclude = append(c.Exclude, "^"+regexp.QuoteMeta(c.ErrorTopic)+"$", `^eventlogging_EventError$`, `^eventlogging_ip_key$`, `^_`)
	if c.MaintainEvery <= 0 {
		c.MaintainEvery = DefaultMaintainEvery
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// ErrorRecord is the value of a record in the sink-error topic.
type ErrorRecord struct {
	Sink   string         `json:"sink"`
	Reason string         `json:"reason"`
	Source capsule.Source `json:"source"`
	// Value is the refused record's value, cut to MaxErrorValueBytes
	// (the whole record stays in its topic, at Source).
	Value string `json:"value"`
	// ValueBytes is the value's size when Value was cut; 0 when whole.
	ValueBytes int `json:"valueBytes,omitempty"`
}

// MaxErrorValueBytes bounds the value quoted in a sink-error record, so
// that the record always fits Kafka's (JSON escapes included).
const MaxErrorValueBytes = 128 << 10

// Run runs s in the consumer group cfg.Group until ctx is done: it
// consumes the topics in batches (cfg.MaxBatch records, or what cfg.BatchTime
// gathered), drops the canaries (measured, not stored), writes each batch
// with s.WriteRecords, sends its poison to the error topic (telling an
// Acknowledger once it is acknowledged) and only then lets the batch's
// offsets be committed. A failed write (or poison send) is retried with
// backoff; an error wrapping ErrFatal stops Run. A
// Resumer's StartOffsets decides where each assigned partition resumes, and
// a Maintainer's Maintain runs every cfg.MaintainEvery. Once ctx is done,
// the batch in hand has cfg.ShutdownTimeout to be written and committed;
// then WriteRecords' context is cancelled and Run returns an error.
//
// Run owns s: it closes s before returning, after the consumer left the
// group, and returns Close's error with its own.
func Run(ctx context.Context, cfg Config, s Sink) error {
	if cfg.Name == "" {
		return errors.Join(errors.New("sink: Config.Name is required"), s.Close())
	}
	if mi, ok := s.(maintainInterval); ok && cfg.MaintainEvery <= 0 {
		cfg.MaintainEvery = mi.MaintainInterval()
	}
	cfg.defaults()
	log := cfg.Logger.With("sink", cfg.Name)
	bc := kafka.BatchConfig{Kafka: cfg.Kafka, Group: cfg.Group, Topics: cfg.Topics, TopicRegex: cfg.TopicRegex,
		Exclude: cfg.Exclude, MaxBatch: cfg.MaxBatch, BatchTime: cfg.BatchTime,
		ShutdownTimeout: cfg.ShutdownTimeout, Logger: cfg.Logger}
	if r, ok := s.(Revoker); ok {
		bc.Revoked = r.Revoked
	}
	var dd *dedupe
	if r, ok := s.(Resumer); ok {
		bc.StartOffsets = r.StartOffsets
		if cfg.DedupeWindow > 0 {
			dd = newDedupe(cfg.DedupeWindow)
			bc.StartOffsets = dd.startOffsets(bc.StartOffsets)
			bc.Revoked = dd.revoked(bc.Revoked)
		}
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var fatal error // set by the maintainer before it stops the run
	done := make(chan struct{})
	if m, ok := s.(Maintainer); ok {
		go func() {
			defer close(done)
			if fatal = maintain(runCtx, m, cfg.MaintainEvery, log); fatal != nil {
				stop()
			}
		}()
	} else {
		close(done)
	}
	var kept []kafka.Record
	err := kafka.ConsumeBatches(runCtx, bc, func(ctx context.Context, all []kafka.Record) error {
		if dd == nil {
			return cfg.write(ctx, s, all)
		}
		var add []pendingKey
		var dups int
		kept, add, dups = dd.filter(all, kept)
		if err := cfg.write(ctx, s, kept); err != nil {
			return err
		}
		// Stored: only now are its keys remembered (a batch written
		// again after an error is filtered as the first time).
		dd.remember(add)
		cfg.Metrics.duplicates(cfg.Name, dups)
		return nil
	})
	stop()
	<-done
	if fatal != nil {
		err = fatal // the process restarts and the sink resumes from where it stored
	}
	// The consumer left the group: nothing writes to s any more.
	return errors.Join(err, s.Close())
}

// write is the batch handler: it writes one batch and sends its poison to
// the error topic. nil lets ConsumeBatches commit the batch's offsets: the
// sink reported it durable (or, for a Resumer, its own offsets cover what
// it stored) and every poison record of it was acknowledged by the error
// topic, so nothing of the batch is lost; a crash before the commit writes
// it again, which the sink absorbs (at least once).
func (c *Config) write(ctx context.Context, s Sink, all []kafka.Record) error {
	start := time.Now()
	batch := c.dropCanaries(c.Name, slices.Clone(all))
	bad, err := s.WriteRecords(ctx, batch)
	if errors.Is(err, ErrFatal) {
		return err // not retried: Run stops
	}
	if err != nil {
		c.Metrics.retried(c.Name)
		return err // transient: retried
	}
	if err := c.poison(ctx, c.Name, bad); err != nil {
		c.Metrics.retried(c.Name)
		return err
	}
	if a, ok := s.(Acknowledger); ok && len(bad) > 0 {
		a.AcknowledgePoison(bad) // in the error topic: the sink may cover it
	}
	c.Metrics.written(c.Name, batch, bad, start)
	return nil
}

// maintainInterval is a Maintainer that says how often Maintain must run
// (the Iceberg sink: often enough to commit within its commit interval);
// Config.MaintainEvery, when set, wins.
type maintainInterval interface {
	MaintainInterval() time.Duration
}

// maintain calls m.Maintain every interval until ctx is done, and returns
// the first error wrapping ErrFatal.
func maintain(ctx context.Context, m Maintainer, every time.Duration, log *slog.Logger) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			err := m.Maintain(ctx)
			if errors.Is(err, ErrFatal) {
				return err
			}
			if err != nil {
				log.Warn("sink maintenance failed", "err", err)
			}
		}
	}
}

// poison sends records that can never be written to the error topic and
// waits for the acknowledgement, so the batch can be committed.
func (c *Config) poison(ctx context.Context, sinkName string, bad []Poison) error {
	if len(bad) == 0 {
		return nil
	}
	if c.Creator != nil {
		if err := c.Creator.Ensure(ctx, c.ErrorTopic); err != nil {
			return err
		}
	}
	msgs := make([]kafka.Message, len(bad))
	for i, p := range bad {
		r := p.Record
		er := ErrorRecord{Sink: sinkName, Reason: capsule.Truncate(p.Reason, capsule.MaxMessageBytes), Source: capsule.Source{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}, Value: string(r.Value)}
		if len(er.Value) > MaxErrorValueBytes {
			er.Value, er.ValueBytes = capsule.Truncate(er.Value, MaxErrorValueBytes), len(r.Value)
		}
		v, err := json.Marshal(er)
		if err != nil {
			return err
		}
		msgs[i] = kafka.Message{Topic: c.ErrorTopic, Value: v}
	}
	c.Logger.Warn("records a sink can never write sent to the error topic", "sink", sinkName, "records", len(bad), "topic", c.ErrorTopic, "first_reason", bad[0].Reason)
	res := c.Producer.ProduceEach(ctx, msgs, nil)
	if err := res.Err(); err != nil {
		return err
	}
	// An error record Kafka refuses for good (a sink-error topic with a
	// smaller max.message.bytes) is logged and skipped, never retried:
	// the refused record itself stays in its topic, at its offset.
	for _, i := range res.Refused() {
		c.Logger.Error("sink-error record refused by Kafka for good: skipped", "sink", sinkName, "topic", bad[i].Record.Topic, "partition", bad[i].Record.Partition, "offset", bad[i].Record.Offset, "err", res[i])
	}
	return nil
}
