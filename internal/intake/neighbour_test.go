package intake

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/spool"
)

// TestDeliverNeighbourGone: a client that goes away while its records
// share a produce batch with another request's does not fail the other
// request, nor put the writer into spool mode (the producer fails a batch
// by its first record's context). A long sync linger puts both requests'
// records in one batch.
func TestDeliverNeighbourGone(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "neighbours"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	prod, err := kafka.NewProducer(kafka.ProducerConfig{Kafka: kafka.Config{Brokers: cluster.ListenAddrs()}, SyncLinger: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	q, err := spool.Open(t.TempDir(), spool.Config{MaxBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = q.Close() }()
	w := NewWriter(prod, q, WriterConfig{})
	// Warm the producer (metadata, producer id), so that both records
	// below wait in the same linger.
	if _, err := w.Deliver(t.Context(), []kafka.Message{{Topic: "neighbours", Value: []byte("warm")}}); err != nil {
		t.Fatal(err)
	}
	goneCtx, gone := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var errGone, errStays error
	wg.Go(func() { _, errGone = w.Deliver(goneCtx, []kafka.Message{{Topic: "neighbours", Value: []byte("gone")}}) })
	time.Sleep(50 * time.Millisecond) // the first record of the batch is the one that goes away
	wg.Go(func() {
		_, errStays = w.Deliver(t.Context(), []kafka.Message{{Topic: "neighbours", Value: []byte("stays")}})
	})
	time.Sleep(50 * time.Millisecond)
	gone()
	wg.Wait()
	if errStays != nil {
		t.Fatalf("the request whose client stayed: %v", errStays)
	}
	if w.down.Load() || q.Len() != 0 {
		t.Fatalf("a client going away put the writer in spool mode (down %t, %d spooled)", w.down.Load(), q.Len())
	}
	t.Logf("the request whose client went away: %v", errGone)
}
