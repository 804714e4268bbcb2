package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
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

// committed returns group's committed offset of partition 0 of topic, -1
// when there is none.
func committed(t *testing.T, brokers []string, group, topic string) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).FetchOffsets(t.Context(), group)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := offs.Lookup(topic, 0)
	if !ok {
		return -1
	}
	if o.Err != nil {
		t.Fatal(o.Err)
	}
	return o.At
}

// holds reports whether batch holds the record at offset n.
func holds(batch []Record, n int64) bool {
	for _, r := range batch {
		if r.Offset == n {
			return true
		}
	}
	return false
}

// awaitRun waits for a run's result, failing the test if none comes
// within 10 s.
func awaitRun(t *testing.T, done <-chan error) error {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	select {
	case err := <-done:
		return err
	case <-deadline.C:
		t.Fatal("the run did not return within 10 s")
		return nil
	}
}

// TestConsumeBatchesRedeliversUnwritten: when the batch holding offset N is
// not written (the handler fails, or hangs on its store until the member
// stops: for the group, a member gone without committing), nothing from N
// on is committed and the group's next member receives N again. On a
// loop that commits before the handler returns, the committed offset is
// past N and N is never seen again.
func TestConsumeBatchesRedeliversUnwritten(t *testing.T) {
	const n = 15
	for _, tc := range []struct {
		name string
		fail BatchHandler // what the handler does with the batch holding n
	}{
		{"handler fails", func(context.Context, []Record) error { return errors.New("store away") }},
		{"member stops mid-write", func(ctx context.Context, _ []Record) error { <-ctx.Done(); return ctx.Err() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "events"))
			if err != nil {
				t.Fatal(err)
			}
			defer cluster.Close()
			brokers := cluster.ListenAddrs()
			produceN(t, brokers, "events", 0, 20)
			cfg := BatchConfig{Kafka: Config{Brokers: brokers}, Group: "sink", Topics: []string{"events"},
				BatchTime: 20 * time.Millisecond, ShutdownTimeout: 200 * time.Millisecond}

			// The first member: batches before n are written, the one
			// holding n is not; the member stops once it saw it.
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			saw := make(chan struct{})
			var once sync.Once
			done := make(chan error, 1)
			go func() {
				done <- ConsumeBatches(ctx, cfg, func(ctx context.Context, b []Record) error {
					if !holds(b, n) {
						return nil
					}
					once.Do(func() { close(saw) })
					return tc.fail(ctx, b)
				})
			}()
			deadline := time.NewTimer(10 * time.Second)
			defer deadline.Stop()
			select {
			case <-saw:
			case <-deadline.C:
				t.Fatalf("no batch holding offset %d within 10 s", n)
			}
			cancel()
			if err := awaitRun(t, done); err == nil {
				t.Error("ConsumeBatches returned nil: want the unwritten batch reported")
			}
			if o := committed(t, brokers, "sink", "events"); o > n {
				t.Errorf("committed offset %d after the batch holding %d was not written", o, n)
			}

			// The group's next member receives n again.
			ctx2, cancel2 := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel2()
			var mu sync.Mutex
			seen := map[int64]bool{}
			err = ConsumeBatches(ctx2, cfg, func(_ context.Context, b []Record) error {
				mu.Lock()
				defer mu.Unlock()
				for _, r := range b {
					seen[r.Offset] = true
				}
				if seen[19] {
					cancel2()
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !seen[n] {
				t.Errorf("the next member did not receive offset %d again (saw %d records)", n, len(seen))
			}
			if o := committed(t, brokers, "sink", "events"); o != 20 {
				t.Errorf("committed offset %d after the next member wrote everything, want 20", o)
			}
		})
	}
}

// TestConsumeBatchesShutdownBound: a handler stuck on a slow store does not
// hold the shutdown for ever: once ctx is done it has ShutdownTimeout to
// finish, then its context is cancelled and ConsumeBatches returns the
// failure, the batch uncommitted.
func TestConsumeBatchesShutdownBound(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	produceN(t, brokers, "events", 0, 3)
	const bound = 300 * time.Millisecond
	cfg := BatchConfig{Kafka: Config{Brokers: brokers}, Group: "sink", Topics: []string{"events"},
		BatchTime: 20 * time.Millisecond, ShutdownTimeout: bound}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	writing := make(chan struct{})
	var once sync.Once
	done := make(chan error, 1)
	go func() {
		done <- ConsumeBatches(ctx, cfg, func(ctx context.Context, _ []Record) error {
			once.Do(func() { close(writing) })
			<-ctx.Done() // the store never answers
			return ctx.Err()
		})
	}()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	select {
	case <-writing:
	case <-deadline.C:
		t.Fatal("no batch within 10 s")
	}
	stopped := time.Now()
	cancel()
	err = awaitRun(t, done)
	took := time.Since(stopped)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("ConsumeBatches: %v, want the write's context.Canceled", err)
	}
	if took < bound {
		t.Errorf("returned %v after ctx was done: the batch was not given its %v", took, bound)
	}
	if took > bound+5*time.Second {
		t.Errorf("returned %v after ctx was done, bound %v", took, bound)
	}
	if o := committed(t, brokers, "sink", "events"); o != -1 {
		t.Errorf("committed offset %d of a batch never written", o)
	}
}
