package intake

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/spool"
)

// TestSpooledRecordsKeepTheirKeys: a synchronous POST's records delivered
// while the spool holds records (Kafka was away) are spooled with their
// keys (the event's uuid) and replayed with them, so a record produced
// once before an ambiguous failure and again from the spool lands in the
// same partition as its first copy, where the sinks drop the copy. On the
// spool without keys Deliver failed (the spool refused keyed records).
func TestSpooledRecordsKeepTheirKeys(t *testing.T) {
	const topic = "eventlogging_Keyed"
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(6, topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	q, err := spool.Open(t.TempDir(), spool.Config{MaxBytes: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	// One record waiting in the spool: the writer spools what comes next,
	// to keep the order.
	if err := q.Append([]kafka.Message{{Topic: topic, Value: []byte("older")}}); err != nil {
		t.Fatal(err)
	}
	prod, err := kafka.NewProducer(kafka.ProducerConfig{Kafka: kafka.Config{Brokers: brokers}})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	w := NewWriter(prod, q, WriterConfig{ReplayBatch: 7})
	var msgs []kafka.Message
	for i := range 40 {
		msgs = append(msgs, kafka.Message{Topic: topic, Key: fmt.Appendf(nil, "%032x", i), Value: fmt.Appendf(nil, "event-%d", i)})
	}
	if _, err := w.Deliver(t.Context(), msgs); err != nil {
		t.Fatalf("Deliver while records wait in the spool: %v", err)
	}
	if n := q.Len(); n != 41 {
		t.Fatalf("spool holds %d records, want 41", n)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	deadline := time.Now().Add(20 * time.Second)
	for q.Len() > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done

	// Where a direct produce of each key goes.
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic+"-direct"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ti := &testIntake{brokers: brokers}
	got := ti.consume(t, topic, 41)
	for _, r := range got {
		if string(r.Value) == "older" {
			continue
		}
		var i int
		if _, err := fmt.Sscanf(string(r.Value), "event-%d", &i); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("%032x", i); string(r.Key) != want {
			t.Errorf("%s replayed with key %q, want %q", r.Value, r.Key, want)
		}
		direct := kgo.StickyKeyPartitioner(nil).ForTopic(topic).Partition(&kgo.Record{Key: r.Key}, 6)
		if int(r.Partition) != direct {
			t.Errorf("%s in partition %d, a direct produce of its key goes to %d", r.Value, r.Partition, direct)
		}
	}
}
