package filesink

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// The sink driven by kafka.ConsumeBatches, as the sink runner will: a crash
// in the middle of a checkpoint, after the group committed offsets beyond
// what was published, then a restart. StartOffsets rewinds to the manifest,
// and every record is published exactly once.
func TestWithConsumeBatches(t *testing.T) {
	const topic, partitions, perPartition = "eventlogging_Test", 3, int64(1000)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	var input []kafka.Record
	var recs []*kgo.Record
	for p := range int32(partitions) {
		for i := range perPartition {
			r := testsupport.CapsuleRecord(topic, p, i, base.Add(time.Duration(i)*10*time.Second))
			input = append(input, r)
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: r.Value})
		}
	}
	if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()

	for _, tc := range []struct {
		name         string
		hook         func(string) error
		maxFileBytes int64
	}{
		// A crash mid-rename, once every partition delivered records
		// (kfake serves one partition after the other).
		{"mid-rename", renameAfterWrites(22), 2 << 10},
		// A crash before any checkpoint: no manifest at all, yet the group
		// committed offsets for every partition.
		{"before any checkpoint", crashAt(pointWritten, 25), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runWithConsumeBatches(t, brokers, topic, partitions, perPartition, input, tc.hook, tc.maxFileBytes)
		})
	}
}

// renameAfterWrites crashes at the first rename after n Writes.
func renameAfterWrites(n int) func(string) error {
	writes := 0
	return func(p string) error {
		switch {
		case p == pointWritten:
			writes++
		case p == pointRenamed && writes >= n:
			return errCrash
		}
		return nil
	}
}

func runWithConsumeBatches(t *testing.T, brokers []string, topic string, partitions int, perPartition int64, input []kafka.Record, hook func(string) error, maxFileBytes int64) {
	root := t.TempDir()
	cfg := kafka.BatchConfig{
		Kafka: kafka.Config{Brokers: brokers}, Group: "filesink-" + root, Topics: []string{topic},
		MaxBatch: 100, BatchTime: 50 * time.Millisecond,
	}

	// Run 1 crashes. The handler returns nil, so the group commits offsets
	// the files do not hold.
	s := openSink(t, Config{Root: root, Format: JSONLines, MaxFileBytes: maxFileBytes, hook: hook})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	cfg.StartOffsets = s.StartOffsets
	seen := map[int32]int{}
	total, crashed := 0, false
	err := kafka.ConsumeBatches(ctx, cfg, func(ctx context.Context, batch []kafka.Record) error {
		for _, r := range batch {
			seen[r.Partition]++
		}
		total += len(batch)
		if _, err := s.Write(ctx, batch); err != nil {
			if !errors.Is(err, errCrash) {
				t.Errorf("Write: %v", err)
			}
			crashed = true
			cancel()
		}
		if total == len(input) && !crashed {
			cancel() // everything consumed without reaching the crash point
		}
		return nil
	})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if !crashed {
		t.Fatal("run 1 did not reach its crash point")
	}
	s.crash()
	t.Logf("run 1 consumed %v records per partition, then crashed", seen)
	if len(seen) != partitions {
		t.Fatalf("run 1 consumed from %d partitions, want all %d for this test to mean anything", len(seen), partitions)
	}

	// Run 2 resumes where the manifests say, not where the group committed.
	s = openSink(t, Config{Root: root, Format: JSONLines, MaxFileBytes: maxFileBytes})
	ctx, cancel = context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var starts []string
	cfg.StartOffsets = func(ctx context.Context, assigned map[string][]int32) (map[string]map[int32]int64, error) {
		offs, err := s.StartOffsets(ctx, assigned)
		mu.Lock()
		starts = append(starts, fmt.Sprint(offs))
		mu.Unlock()
		return offs, err
	}
	last := map[int32]int64{}
	err = kafka.ConsumeBatches(ctx, cfg, func(ctx context.Context, batch []kafka.Record) error {
		if _, err := s.Write(ctx, batch); err != nil {
			return err
		}
		for _, r := range batch {
			last[r.Partition] = r.Offset
		}
		done := len(last) == partitions
		for _, o := range last {
			done = done && o == perPartition-1
		}
		if done {
			cancel()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != context.Canceled {
		t.Fatalf("run 2 did not finish: last offsets %v", last)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	t.Logf("run 2 started at %v", starts)
	mu.Unlock()
	checkExactlyOnce(t, root, input)
	checkNoTemps(t, root)
}
