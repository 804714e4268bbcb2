package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TailConfig configures Tail.
type TailConfig struct {
	Kafka Config
	// Topics to read; required. Each must exist.
	Topics []string
	// FromBeginning reads every partition from its log start offset;
	// false reads only records produced after Tail started.
	FromBeginning bool
	// OnStart, if set, is called once the start offsets are fixed, before
	// the first record: every record produced after it returns is
	// delivered (when not FromBeginning, nothing produced before Tail was
	// called is).
	OnStart func()
}

// ErrStopTail stops Tail cleanly when the function given to it returns it
// (or an error wrapping it): Tail then returns nil.
var ErrStopTail = errors.New("stop tail")

// Tail consumes topics (no consumer group: direct partition assignment) from
// the end (or the beginning) and calls fn for each record until ctx is done
// or fn returns a non-nil error (ErrStopTail stops cleanly).
//
// "From the end" is the end offset of each partition when Tail starts:
// records produced after that are delivered, none from before. Records come
// in offset order within a partition; partitions are interleaved. Partitions
// added to a topic after the start are not read. fn is never called once
// ctx is done. Tail returns nil when ctx is done or fn returned ErrStopTail,
// fn's error otherwise, or the error that prevented it from starting (such
// as a missing topic).
func Tail(ctx context.Context, cfg TailConfig, fn func(Record) error) error {
	if len(cfg.Topics) == 0 {
		return errors.New("kafka tail: no topics")
	}
	if fn == nil {
		return errors.New("kafka tail: nil function")
	}
	offsets, err := tailOffsets(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	cl, err := NewClient(cfg.Kafka, kgo.ConsumePartitions(offsets))
	if err != nil {
		return err
	}
	defer cl.Close()
	if cfg.OnStart != nil {
		cfg.OnStart()
	}
	log := cfg.Kafka.Logger
	for {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil || fetches.IsClientClosed() {
			return nil
		}
		fetches.EachError(func(t string, p int32, err error) {
			if log != nil && !errors.Is(err, context.Canceled) {
				log.Warn("tail fetch error", "topic", t, "partition", p, "err", err)
			}
		})
		for it := fetches.RecordIter(); !it.Done(); {
			r := it.Next()
			if ctx.Err() != nil {
				return nil
			}
			err := fn(recordOf(r))
			if errors.Is(err, ErrStopTail) {
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
}

// tailOffsets lists the partitions of the topics and where to start each.
func tailOffsets(ctx context.Context, cfg TailConfig) (map[string]map[int32]kgo.Offset, error) {
	cl, err := NewClient(cfg.Kafka)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, cfg.Topics...)
	if err != nil {
		return nil, fmt.Errorf("kafka tail: list offsets of %v: %w", cfg.Topics, err)
	}
	offsets := make(map[string]map[int32]kgo.Offset, len(cfg.Topics))
	for _, t := range cfg.Topics {
		ps, ok := ends[t]
		if !ok {
			return nil, fmt.Errorf("kafka tail: topic %s: no partitions", t)
		}
		offsets[t] = make(map[int32]kgo.Offset, len(ps))
		for p, lo := range ps {
			if errors.Is(lo.Err, kerr.UnknownTopicOrPartition) {
				return nil, fmt.Errorf("kafka tail: topic %s does not exist: %w", t, lo.Err)
			}
			if lo.Err != nil {
				return nil, fmt.Errorf("kafka tail: topic %s: %w", t, lo.Err)
			}
			if cfg.FromBeginning {
				offsets[t][p] = kgo.NewOffset().AtStart()
			} else {
				offsets[t][p] = kgo.NewOffset().At(lo.Offset)
			}
		}
	}
	return offsets, nil
}
