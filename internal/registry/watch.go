package registry

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/eventlogging/eventlogging/internal/kafka"
)

// SubjectOfKey returns the subject of a schema-log record key
// (schema/<subject>/<version>); ok is false for other keys.
func SubjectOfKey(key []byte) (subject string, ok bool) {
	k, found := strings.CutPrefix(string(key), keySchema)
	if !found {
		return "", false
	}
	i := strings.LastIndexByte(k, '/')
	if i <= 0 {
		return "", false
	}
	return k[:i], true
}

// WatchConfig configures [Watch].
type WatchConfig struct {
	Kafka kafka.Config
	// Topic is the registry's log (registry.topic).
	Topic string
	// Retry is the wait before following again when the log cannot be
	// read (it does not exist yet, the broker is down); default 5s.
	Retry time.Duration
	// OnStart, if set, is called each time following starts: every schema
	// registered after it returns is reported.
	OnStart func()
	Logger  *slog.Logger
}

// Watch follows the registry's log in Kafka from its end and calls fn with
// the subject of every schema version registered (or changed) from then
// on, until ctx is done. Processors and intakes use it to drop what their
// schema caches remember as unknown the moment a schema exists, however
// many registry instances there are. It retries, logging once, while the
// log does not exist or cannot be read, and returns nil when ctx is done.
// fn is called from one goroutine.
func Watch(ctx context.Context, cfg WatchConfig, fn func(subject string)) error {
	if cfg.Retry <= 0 {
		cfg.Retry = 5 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	warned := false
	for ctx.Err() == nil {
		err := kafka.Tail(ctx, kafka.TailConfig{Kafka: cfg.Kafka, Topics: []string{cfg.Topic}, OnStart: func() {
			if warned {
				log.Info("following the schema registry's log", "topic", cfg.Topic)
				warned = false
			}
			if cfg.OnStart != nil {
				cfg.OnStart()
			}
		}}, func(r kafka.Record) error {
			if s, ok := SubjectOfKey(r.Key); ok {
				fn(s)
			}
			return nil
		})
		if ctx.Err() != nil {
			return nil
		}
		if err != nil && !warned {
			log.Warn("cannot follow the schema registry's log yet; unknown schemas are looked up again after the negative cache TTL", "topic", cfg.Topic, "err", err)
			warned = true
		}
		select {
		case <-ctx.Done():
		case <-time.After(cfg.Retry):
		}
	}
	return nil
}
