package sink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"time"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/sink/filesink"
	"github.com/eventlogging/eventlogging/internal/sink/sqlsink"
)

// DefaultErrorTopic receives records a sink can never write.
const DefaultErrorTopic = "eventlogging_SinkError"

// Config configures one sink's consume loop.
type Config struct {
	Kafka kafka.Config
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
	// Producer writes poison records; required.
	Producer *kafka.Producer
	// Topics creates the error topic; may be nil when it exists.
	Creator *kafka.Topics
	Logger  *slog.Logger
	// Metrics measures the sink; nil measures nothing.
	Metrics *Metrics
}

func (c *Config) defaults() {
	if c.ErrorTopic == "" {
		c.ErrorTopic = DefaultErrorTopic
	}
	if len(c.Topics) == 0 {
		c.Topics, c.TopicRegex = []string{`^eventlogging_.+`}, true
	}
	c.Exclude = append(c.Exclude, "^"+regexp.QuoteMeta(c.ErrorTopic)+"$", `^eventlogging_EventError$`, `^eventlogging_ip_key$`, `^_`)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// ErrorRecord is the value of a record in the sink-error topic.
type ErrorRecord struct {
	Sink   string         `json:"sink"`
	Reason string         `json:"reason"`
	Source capsule.Source `json:"source"`
	Value  string         `json:"value"`
}

// poison sends records that can never be written to the error topic and
// waits for the acknowledgement, so the batch can be committed.
func (c *Config) poison(ctx context.Context, sinkName string, recs []kafka.Record, reasons []string) error {
	if len(recs) == 0 {
		return nil
	}
	if c.Creator != nil {
		if err := c.Creator.Ensure(ctx, c.ErrorTopic); err != nil {
			return err
		}
	}
	msgs := make([]kafka.Message, len(recs))
	for i, r := range recs {
		v, err := json.Marshal(ErrorRecord{Sink: sinkName, Reason: reasons[i], Source: capsule.Source{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}, Value: string(r.Value)})
		if err != nil {
			return err
		}
		msgs[i] = kafka.Message{Topic: c.ErrorTopic, Value: v}
	}
	c.Logger.Warn("records a sink can never write sent to the error topic", "sink", sinkName, "records", len(recs), "topic", c.ErrorTopic, "first_reason", reasons[0])
	return c.Producer.ProduceSync(ctx, msgs)
}

func (c *Config) batchConfig(group string) kafka.BatchConfig {
	return kafka.BatchConfig{Kafka: c.Kafka, Group: group, Topics: c.Topics, TopicRegex: c.TopicRegex, Exclude: c.Exclude, MaxBatch: c.MaxBatch, BatchTime: c.BatchTime, Logger: c.Logger}
}

// RunSQL runs the SQL sink until ctx is done: each batch of capsules and
// Event Platform events (JSON, or Avro decoded through the registry; see
// sqlsink.Writer.Decode) is inserted (duplicates skipped row by row) before
// its offsets are committed.
func RunSQL(ctx context.Context, cfg Config, w *sqlsink.Writer) error {
	cfg.defaults()
	log := cfg.Logger.With("sink", "sql")
	bc := cfg.batchConfig(cfg.Group)
	return kafka.ConsumeBatches(ctx, bc, func(ctx context.Context, all []kafka.Record) error {
		start := time.Now()
		batch := cfg.dropCanaries("sql", slices.Clone(all))
		rows := make([]map[string]any, 0, len(batch))
		idx := make([]int, 0, len(batch)) // rows[i] came from batch[idx[i]]
		var bad []kafka.Record
		var why []string
		for i, r := range batch {
			m, reason, err := w.Decode(ctx, r.Value)
			if err != nil {
				cfg.Metrics.retried("sql")
				return err // transient (the schema registry): retried
			}
			if reason != "" {
				bad = append(bad, r)
				why = append(why, reason)
				continue
			}
			rows = append(rows, m)
			idx = append(idx, i)
		}
		res, err := w.Write(ctx, rows)
		if err != nil {
			cfg.Metrics.retried("sql")
			return err // transient: retried
		}
		for _, p := range res.Poison {
			bad = append(bad, batch[idx[p.Index]])
			why = append(why, p.Reason)
		}
		log.Debug("batch written", "rows", len(rows), "inserted", res.Inserted, "duplicates", res.Duplicates, "poison", len(bad))
		if err := cfg.poison(ctx, "sql", bad, why); err != nil {
			cfg.Metrics.retried("sql")
			return err
		}
		cfg.Metrics.written("sql", batch, bad, start)
		return nil
	})
}

// RunFiles runs the file sink until ctx is done: records go to hour
// partitions, published exactly once (the sink's own offsets decide where
// consumption resumes); hours are closed with _SUCCESS every closeEvery.
func RunFiles(ctx context.Context, cfg Config, s *filesink.Sink, closeEvery time.Duration) error {
	cfg.defaults()
	log := cfg.Logger.With("sink", "files")
	bc := cfg.batchConfig(cfg.Group)
	bc.StartOffsets = s.StartOffsets
	if closeEvery <= 0 {
		closeEvery = time.Minute
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var broken error // set by the hour closer before it stops the run
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(closeEvery)
		defer t.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-t.C:
				err := s.CloseHours(runCtx)
				if errors.Is(err, filesink.ErrBroken) {
					broken = fmt.Errorf("%w: %w", kafka.ErrFatalBatch, err)
					stop()
					return
				}
				if err != nil {
					log.Warn("closing hours", "err", err)
				}
			}
		}
	}()
	err := kafka.ConsumeBatches(runCtx, bc, func(ctx context.Context, all []kafka.Record) error {
		start := time.Now()
		batch := cfg.dropCanaries("files", slices.Clone(all))
		res, err := s.Write(ctx, batch)
		if errors.Is(err, filesink.ErrBroken) {
			return fmt.Errorf("%w: %w", kafka.ErrFatalBatch, err)
		}
		if err != nil {
			cfg.Metrics.retried("files")
			return err
		}
		bad := make([]kafka.Record, len(res.Poison))
		why := make([]string, len(res.Poison))
		for i, p := range res.Poison {
			bad[i], why[i] = p.Record, p.Reason
		}
		if err := cfg.poison(ctx, "files", bad, why); err != nil {
			cfg.Metrics.retried("files")
			return err
		}
		cfg.Metrics.written("files", batch, bad, start)
		return nil
	})
	stop()
	<-done
	if broken != nil {
		return broken // the process restarts and the sink resumes from its manifests
	}
	return err
}
