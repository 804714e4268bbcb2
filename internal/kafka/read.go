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

// ReadConfig says which part of a topic Read reads.
type ReadConfig struct {
	Kafka Config
	Topic string
	// LastN, if > 0, reads at most the last LastN records of each partition.
	LastN int64
	// Since, if set, starts each partition at its first record at or after
	// Since (it narrows LastN further when both are set).
	Since time.Time
	// Without AllPartitions, only Partition is read, within
	// [FromOffset, ToOffset) (ToOffset 0: to the end).
	Partition  int32
	FromOffset int64
	ToOffset   int64
	// AllPartitions reads every partition; Partition and the offsets are
	// then ignored. It must be set explicitly, so that the zero value of
	// Partition does not silently mean partition 0 only.
	AllPartitions bool
}

// Read reads a bounded part of a topic — up to each partition's end offset
// when Read starts — and calls fn for each record in offset order per
// partition. It returns fn's first error (ErrStopTail stops cleanly), or
// nil once every partition reached its end. A missing topic is an error
// wrapping kerr.UnknownTopicOrPartition.
//
// A partition is done when the record just before its end offset was
// delivered; on a topic written by transactional producers (whose last
// offset can be a commit marker) Read would wait for ctx instead, so the
// pipeline's topics, written by idempotent producers only, are what it is
// for.
func Read(ctx context.Context, cfg ReadConfig, fn func(Record) error) error {
	cl, err := NewClient(cfg.Kafka)
	if err != nil {
		return err
	}
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, cfg.Topic)
	if err == nil {
		err = starts.Error()
	}
	var ends kadm.ListedOffsets
	if err == nil {
		ends, err = adm.ListEndOffsets(ctx, cfg.Topic)
		if err == nil {
			err = ends.Error()
		}
	}
	var after kadm.ListedOffsets
	if err == nil && !cfg.Since.IsZero() {
		after, err = adm.ListOffsetsAfterMilli(ctx, cfg.Since.UnixMilli(), cfg.Topic)
		if err == nil {
			err = after.Error()
		}
	}
	cl.Close()
	if err != nil {
		if errors.Is(err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("kafka read: topic %s does not exist: %w", cfg.Topic, err)
		}
		return fmt.Errorf("kafka read %s: %w", cfg.Topic, err)
	}
	offsets := map[int32]kgo.Offset{}
	remaining := map[int32]int64{} // partition -> end offset still to reach
	ends.Each(func(e kadm.ListedOffset) {
		if !cfg.AllPartitions && e.Partition != cfg.Partition {
			return
		}
		s, _ := starts.Lookup(e.Topic, e.Partition)
		from, to := s.Offset, e.Offset
		if cfg.LastN > 0 && to-cfg.LastN > from {
			from = to - cfg.LastN
		}
		if a, ok := after.Lookup(e.Topic, e.Partition); ok && a.Offset > from {
			from = a.Offset
		}
		if !cfg.AllPartitions {
			from = max(from, cfg.FromOffset)
			if cfg.ToOffset > 0 {
				to = min(to, cfg.ToOffset)
			}
		}
		if from < to {
			offsets[e.Partition] = kgo.NewOffset().At(from)
			remaining[e.Partition] = to
		}
	})
	if len(offsets) == 0 {
		return nil
	}
	cl, err = NewClient(cfg.Kafka, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{cfg.Topic: offsets}))
	if err != nil {
		return err
	}
	defer cl.Close()
	for len(remaining) > 0 {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		var ferr error
		fetches.EachError(func(t string, p int32, err error) {
			if ferr == nil {
				ferr = fmt.Errorf("kafka read %s/%d: %w", t, p, err)
			}
		})
		if ferr != nil {
			return ferr
		}
		for it := fetches.RecordIter(); !it.Done(); {
			r := it.Next()
			end, ok := remaining[r.Partition]
			if !ok || r.Offset >= end {
				continue
			}
			err := fn(recordOf(r))
			if errors.Is(err, ErrStopTail) {
				return nil
			}
			if err != nil {
				return err
			}
			if r.Offset+1 >= end {
				delete(remaining, r.Partition)
			}
		}
	}
	return nil
}
