package kafka

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// TestRefusedTopicDoesNotAllocate: produceEach looks every record's topic
// up among the refused ones; with none refused that costs no allocation.
func TestRefusedTopicDoesNotAllocate(t *testing.T) {
	if n := testing.AllocsPerRun(1000, func() { _ = refusedTopic(nil, "eventlogging_Foo") }); n != 0 {
		t.Errorf("refusedTopic(nil, …): %v allocations a record, want 0", n)
	}
}

// BenchmarkProduceEach produces 1,000 small records to kfake and waits for
// them: the allocations per call are the pipe's produce cost (1481bd2's
// produceAll made 64 a call of 1,000 records).
func BenchmarkProduceEach(b *testing.B) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "bench"))
	if err != nil {
		b.Fatal(err)
	}
	defer cluster.Close()
	cl, err := NewClient(Config{Brokers: cluster.ListenAddrs()})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	msgs := make([]Message, 1000)
	for i := range msgs {
		msgs[i] = Message{Topic: "bench", Value: []byte("a small event value of some bytes")}
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if res := produceEach(ctx, cl, [][]Message{msgs}, nil); res != nil {
			b.Fatal(res.First())
		}
	}
}
