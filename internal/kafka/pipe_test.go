package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// refuseProduce answers req with err for every partition of it.
func refuseProduce(req *kmsg.ProduceRequest, err *kerr.Error) *kmsg.ProduceResponse {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.ErrorCode = err.Code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// TestPipeCommitsAfterProduce: while Kafka refuses the outputs of the batch
// holding offset N (NOT_ENOUGH_REPLICAS, transient: retried), nothing from
// N on is committed; the member stopping then returns the failure within
// ShutdownTimeout, and the group's next member receives N again and
// produces every output. On a loop that commits before the produce is
// acknowledged, the committed offset is past N and N is never seen again.
func TestPipeCommitsAfterProduce(t *testing.T) {
	const n = 15
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "in", "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	produceN(t, brokers, "in", 0, 20)

	// Once the first member's transform has seen n, every produce is
	// refused until refuse is cleared.
	var refuse atomic.Bool
	refused := make(chan struct{})
	var once sync.Once
	cluster.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if !refuse.Load() {
			return nil, nil, false
		}
		cluster.KeepControl()
		once.Do(func() { close(refused) })
		return refuseProduce(req.(*kmsg.ProduceRequest), kerr.NotEnoughReplicas), nil, true
	})
	var mu sync.Mutex
	seen := map[string]int{} // input values transformed, by value
	tf := func(_ context.Context, recs []Record, out []Message) []Message {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range recs {
			seen[string(r.Value)]++
			out = append(out, Message{Topic: "out", Value: r.Value})
		}
		return out
	}
	cfg := PipeConfig{Kafka: Config{Brokers: brokers}, Group: "proc", Topics: []string{"in"}, ShutdownTimeout: 300 * time.Millisecond}

	// The first member stops while the batch holding n is refused.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	p, err := NewPipe(cfg, func(ctx context.Context, recs []Record, out []Message) []Message {
		if holds(recs, n) {
			refuse.Store(true)
		}
		return tf(ctx, recs, out)
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	select {
	case <-refused:
	case <-deadline.C:
		t.Fatalf("no produce of the batch holding offset %d within 10 s", n)
	}
	if o := committed(t, brokers, "proc", "in"); o > n {
		t.Errorf("committed offset %d while the outputs of offset %d are refused", o, n)
	}
	cancel()
	// The produce given up at the shutdown bound.
	if err := awaitRun(t, done); !errors.Is(err, context.Canceled) && !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Errorf("Run: %v, want the refused produce reported", err)
	}
	if o := committed(t, brokers, "proc", "in"); o > n {
		t.Errorf("committed offset %d after the outputs of offset %d were refused", o, n)
	}

	// Kafka takes records again: the group's next member receives n again.
	refuse.Store(false)
	mu.Lock()
	clear(seen)
	mu.Unlock()
	ctx2, cancel2 := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel2()
	cfg.OnBatch = func(int, int) {
		mu.Lock()
		defer mu.Unlock()
		if seen["19"] > 0 {
			cancel2()
		}
	}
	p2, err := NewPipe(cfg, tf)
	if err != nil {
		t.Fatal(err)
	}
	if err := p2.Run(ctx2); err != nil {
		t.Fatal(err)
	}
	if seen[fmt.Sprint(n)] == 0 {
		t.Errorf("the next member did not receive offset %d again (transformed %v)", n, seen)
	}
	if o := committed(t, brokers, "proc", "in"); o != 20 {
		t.Errorf("committed offset %d after the next member produced everything, want 20", o)
	}
	out := readAll(t, brokers, "out", 20)
	var missing []int
	for i := range 20 {
		if out[fmt.Sprint(i)] == 0 {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 {
		t.Errorf("outputs of %v never produced", missing)
	}
}
