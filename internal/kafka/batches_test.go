package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func produceN(t *testing.T, brokers []string, topic string, from, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := from; i < from+n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "%d", i)})
	}
	if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// collector records what a handler saw and cancels the run once it has want records.
type collector struct {
	mu      sync.Mutex
	seen    map[string]int
	batches []int
	want    int
	cancel  context.CancelFunc
	failN   int // fail this many calls first
}

func (c *collector) handle(_ context.Context, b []Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failN > 0 {
		c.failN--
		return errors.New("transient")
	}
	c.batches = append(c.batches, len(b))
	for _, r := range b {
		c.seen[string(r.Value)]++
	}
	if len(c.seen) >= c.want {
		c.cancel()
	}
	return nil
}

func TestConsumeBatches(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	produceN(t, brokers, "events", 0, 2500)
	cfg := BatchConfig{Kafka: Config{Brokers: brokers}, Group: "sink", Topics: []string{"events"}, MaxBatch: 1000, BatchTime: 200 * time.Millisecond}

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	c := &collector{seen: map[string]int{}, want: 2500, cancel: cancel, failN: 2}
	if err := ConsumeBatches(ctx, cfg, c.handle); err != nil {
		t.Fatal(err)
	}
	cancel()
	if len(c.seen) != 2500 {
		t.Fatalf("saw %d records", len(c.seen))
	}
	for _, n := range c.batches {
		if n > 1000 {
			t.Errorf("batch of %d > MaxBatch", n)
		}
	}

	// Committed: a second member of the group sees only new records, and
	// a quiet tail is written within BatchTime.
	produceN(t, brokers, "events", 2500, 3)
	ctx, cancel = context.WithTimeout(t.Context(), 30*time.Second)
	c2 := &collector{seen: map[string]int{}, want: 3, cancel: cancel}
	start := time.Now()
	if err := ConsumeBatches(ctx, cfg, c2.handle); err != nil {
		t.Fatal(err)
	}
	cancel()
	if len(c2.seen) != 3 || c2.seen["2500"] != 1 {
		t.Fatalf("second run saw %v", c2.seen)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("quiet tail took %v", took)
	}
}

func TestConsumeBatchesStartOffsets(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	produceN(t, brokers, "events", 0, 100)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c := &collector{seen: map[string]int{}, want: 10, cancel: cancel}
	cfg := BatchConfig{
		Kafka: Config{Brokers: brokers}, Group: "files", Topics: []string{"^ev.*"}, TopicRegex: true, BatchTime: 100 * time.Millisecond,
		StartOffsets: func(context.Context, map[string][]int32) (map[string]map[int32]int64, error) {
			return map[string]map[int32]int64{"events": {0: 90}}, nil
		},
	}
	if err := ConsumeBatches(ctx, cfg, c.handle); err != nil {
		t.Fatal(err)
	}
	if len(c.seen) != 10 || c.seen["90"] != 1 || c.seen["89"] != 0 {
		t.Fatalf("resumed at the wrong offset: %v", c.seen)
	}
}
