package intake

import (
	"context"
	"crypto/rand"
	"sync"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/kafka"
)

// TestDeliverConcurrentNeighbourRefused: two synchronous POSTs share the
// writer's sync client. One carries a record Kafka refuses; the other a
// single small record of the same partition. franz-go fails both with
// MESSAGE_TOO_LARGE; the second call's record, produced once more alone,
// is acknowledged (found by review: a call with one failure did not
// isolate it, and a valid event was answered invalid). The short wait
// puts B inside A's linger; when the machine is slower than that, the
// two do not share a batch and the test passes without testing.
func TestDeliverConcurrentNeighbourRefused(t *testing.T) {
	brokers, q := refusingKafka(t)
	prod, err := kafka.NewProducer(kafka.ProducerConfig{Kafka: kafka.Config{Brokers: brokers}, SyncLinger: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	// Warm the metadata so both calls buffer into the same batch.
	if res, err := NewWriter(prod, q, WriterConfig{}).Deliver(t.Context(), []kafka.Message{{Topic: "raw", Value: []byte("warm")}}); err != nil || res != nil {
		t.Fatal(res, err)
	}
	w := NewWriter(prod, q, WriterConfig{})
	big := make([]byte, 5000)
	_, _ = rand.Read(big)
	var wg sync.WaitGroup
	var resB kafka.Outcome
	var errB error
	wg.Go(func() {
		_, _ = w.Deliver(context.Background(), []kafka.Message{{Topic: "raw", Value: []byte("a-1")}, {Topic: "raw", Value: big}})
	})
	time.Sleep(10 * time.Millisecond) // B after A, inside A's linger
	wg.Go(func() {
		resB, errB = w.Deliver(context.Background(), []kafka.Message{{Topic: "raw", Value: []byte("b-1")}})
	})
	wg.Wait()
	if errB != nil || resB != nil {
		t.Fatalf("B's only (small) record: outcome %v, err %v; want acknowledged", resB, errB)
	}
}
