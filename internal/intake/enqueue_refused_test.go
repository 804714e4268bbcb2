package intake

import (
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/kafka"
)

// TestEnqueueNeighboursOfRefusedRecord: beacons answered 204 (Enqueue)
// that are batched with one record Kafka refuses for good are stored; only
// the refused one is skipped. franz-go fails every buffered record of the
// batch with its MESSAGE_TOO_LARGE: they go to the spool, whose replay
// produces a refused batch's records one by one (found by review: the
// callback dropped them all as permanent).
func TestEnqueueNeighboursOfRefusedRecord(t *testing.T) {
	brokers, q := refusingKafka(t)
	prod, err := kafka.NewProducer(kafka.ProducerConfig{Kafka: kafka.Config{Brokers: brokers}})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	w := NewWriter(prod, q, WriterConfig{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var msgs []kafka.Message
	for i := range 20 {
		v := fmt.Appendf(nil, "event-%02d", i)
		if i == 5 {
			v = make([]byte, 5000)
			_, _ = rand.Read(v)
		}
		msgs = append(msgs, kafka.Message{Topic: "raw", Value: v})
	}
	if err := w.Enqueue(msgs); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for (w.reserved.Load() != 0 || q.Len() != 0) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // polling the callbacks and the replay
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.Refused != 1 || st.Lost != 0 || st.SpoolRecords != 0 {
		t.Errorf("stats %+v: want the oversized record refused, no other lost, the spool empty", st)
	}
	ti := &testIntake{brokers: brokers}
	seen := map[string]int{}
	for _, r := range ti.consume(t, "raw", 19) {
		seen[string(r.Value)]++
	}
	if len(seen) != 19 || notOnceCount(seen) != 0 {
		t.Errorf("raw topic: %d distinct records, %d not once; want the 19 good ones once each", len(seen), notOnceCount(seen))
	}
}

func notOnceCount(m map[string]int) int {
	n := 0
	for _, c := range m {
		if c != 1 {
			n++
		}
	}
	return n
}
