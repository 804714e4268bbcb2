package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

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
	// StopAtEnd, with FromBeginning, stops Tail (it returns nil) once it
	// has delivered every record up to the end offsets the topics had when
	// it started, instead of following them: a bounded read of what they
	// hold. (A partition whose last offsets hold transaction markers is
	// never seen to end: bound such reads with ctx too.)
	StopAtEnd bool
	// Bulk fetches as the consumer groups do (Config.FetchMinBytes and
	// FetchMaxWait): for a reader that counts records rather than shows
	// them as they come; a record may then be read up to FetchMaxWait
	// after it was written.
	Bulk bool
	// WaitForTopics waits for topics that do not exist yet, until ctx
	// ends, instead of failing: a topic is made with its first record, and
	// a reader started just before that record must not miss it. A topic
	// that appears while Tail waits is read from its beginning (every
	// record in it was produced after Tail started). Ignored with
	// StopAtEnd, where a missing topic is an error.
	WaitForTopics bool
	// OnWait, if set, is called once with the missing topics when Tail
	// starts waiting for them (WaitForTopics).
	OnWait func(missing []string)
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
// as a missing topic, wrapping kerr.UnknownTopicOrPartition; with
// WaitForTopics, the same error when ctx ends before the topic exists).
func Tail(ctx context.Context, cfg TailConfig, fn func(Record) error) error {
	if len(cfg.Topics) == 0 {
		return errors.New("kafka tail: no topics")
	}
	if fn == nil {
		return errors.New("kafka tail: nil function")
	}
	offsets, ends, err := tailOffsets(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
			return nil
		}
		return err
	}
	// pending: partitions with records still to deliver before their end
	// (StopAtEnd only).
	pending := map[string]map[int32]int64{}
	if cfg.StopAtEnd && cfg.FromBeginning {
		for t, ps := range ends {
			for p, end := range ps {
				if end.end > end.start {
					if pending[t] == nil {
						pending[t] = map[int32]int64{}
					}
					pending[t][p] = end.end
				}
			}
		}
		if len(pending) == 0 {
			return nil
		}
	}
	opts := []kgo.Opt{kgo.ConsumePartitions(offsets)}
	if cfg.Bulk {
		opts = append(opts, cfg.Kafka.bulkFetchOpts()...)
	}
	cl, err := NewClient(cfg.Kafka, opts...)
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
			if end, ok := pending[r.Topic][r.Partition]; ok && r.Offset+1 >= end {
				delete(pending[r.Topic], r.Partition)
				if len(pending[r.Topic]) == 0 {
					delete(pending, r.Topic)
				}
				if len(pending) == 0 {
					return nil
				}
			}
		}
	}
}

// partitionBounds are a partition's log start and end offsets.
type partitionBounds struct{ start, end int64 }

// tailOffsets lists the partitions of the topics and where to start each,
// and their start and end offsets now. With WaitForTopics (and not
// StopAtEnd) it waits for missing topics to appear.
func tailOffsets(ctx context.Context, cfg TailConfig) (map[string]map[int32]kgo.Offset, map[string]map[int32]partitionBounds, error) {
	cl, err := NewClient(cfg.Kafka)
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	wait := cfg.WaitForTopics && !cfg.StopAtEnd
	offsets := make(map[string]map[int32]kgo.Offset, len(cfg.Topics))
	bounds := make(map[string]map[int32]partitionBounds, len(cfg.Topics))
	topics := cfg.Topics
	fromStart := cfg.FromBeginning
	delay := 100 * time.Millisecond
	waited := false
	var lastErr error // of a listing while waiting
	for {
		missing, err := listTailOffsets(ctx, adm, cfg, topics, fromStart, offsets, bounds)
		if err == nil {
			lastErr = nil
		}
		switch {
		case err != nil && !waited:
			return nil, nil, err
		case err != nil:
			// While a topic is being made its partitions may have no
			// leader yet, and a listing can fail as ctx ends: wait on.
			missing, lastErr = topics, err
		case len(missing) == 0:
			return offsets, bounds, nil
		case !wait:
			return nil, nil, fmt.Errorf("kafka tail: topic %s does not exist: %w", missing[0], kerr.UnknownTopicOrPartition)
		}
		if !waited && cfg.OnWait != nil {
			cfg.OnWait(missing)
		}
		waited = true
		// Every record of a topic made from now on was produced after
		// Tail started: read the late ones from their beginning.
		topics, fromStart = missing, true
		select {
		case <-ctx.Done():
			last := ""
			if lastErr != nil && !errors.Is(lastErr, context.Canceled) && !errors.Is(lastErr, context.DeadlineExceeded) {
				last = fmt.Sprintf("; last listing error: %v", lastErr)
			}
			return nil, nil, fmt.Errorf("kafka tail: topic %s does not exist (stopped waiting for it: %w%s): %w", missing[0], context.Cause(ctx), last, kerr.UnknownTopicOrPartition)
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}

// listTailOffsets fills offsets and bounds for topics (reading each from
// its start with fromStart) and returns those that do not exist.
func listTailOffsets(ctx context.Context, adm *kadm.Client, cfg TailConfig, topics []string, fromStart bool, offsets map[string]map[int32]kgo.Offset, bounds map[string]map[int32]partitionBounds) ([]string, error) {
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("kafka tail: list offsets of %v: %w", topics, err)
	}
	var starts kadm.ListedOffsets
	if cfg.FromBeginning && cfg.StopAtEnd {
		if starts, err = adm.ListStartOffsets(ctx, topics...); err != nil {
			return nil, fmt.Errorf("kafka tail: list offsets of %v: %w", topics, err)
		}
	}
	var missing []string
	for _, t := range topics {
		ps, ok := ends[t]
		if !ok {
			return nil, fmt.Errorf("kafka tail: topic %s: no partitions", t)
		}
		if unknownTopic(ps, fromStart) {
			missing = append(missing, t)
			continue
		}
		to := make(map[int32]kgo.Offset, len(ps))
		tb := make(map[int32]partitionBounds, len(ps))
		for p, lo := range ps {
			if lo.Err != nil {
				return nil, fmt.Errorf("kafka tail: topic %s: %w", t, lo.Err)
			}
			b := partitionBounds{end: lo.Offset}
			if so, ok := starts.Lookup(t, p); ok && so.Err == nil {
				b.start = so.Offset
			}
			tb[p] = b
			if fromStart {
				to[p] = kgo.NewOffset().AtStart()
			} else {
				to[p] = kgo.NewOffset().At(lo.Offset)
			}
		}
		offsets[t], bounds[t] = to, tb
	}
	return missing, nil
}

// unknownTopic reports whether the listing of a topic's partitions says the
// topic does not exist: kadm's entry for partition -1 (the metadata does not
// know the topic). With anyPartition, for a topic that will be read from
// its beginning anyway, a partition whose leader does not know it yet, or
// that has no leader yet, counts too: the topic is being made.
func unknownTopic(ps map[int32]kadm.ListedOffset, anyPartition bool) bool {
	for p, lo := range ps {
		switch {
		case p == -1 && errors.Is(lo.Err, kerr.UnknownTopicOrPartition):
			return true
		case anyPartition && (errors.Is(lo.Err, kerr.UnknownTopicOrPartition) || errors.Is(lo.Err, kerr.LeaderNotAvailable) || errors.Is(lo.Err, kerr.NotLeaderForPartition)):
			return true
		}
	}
	return false
}
