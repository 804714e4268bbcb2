package filesink

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/sink"
	"github.com/eventlogging/eventlogging/internal/testsupport"
	"github.com/eventlogging/eventlogging/internal/vfs"
)

// The file sink through sink.Run with the dedupe window (sink.dedupe_window)
// over a kfake topic of three partitions whose records are keyed by uuid,
// as the processor keys them: copies of an event (a processor's batch
// produced again after a crash, a spooled POST produced twice) are
// published once, within a run, across a restart, and when the copies are
// the last records of a partition (the manifest then ends before the
// partition does, and the restart reads them again). With the window off
// every copy is published.

const dedupeTopic = "eventlogging_Test"

// eventRecord is event i: a capsule of Test/1 (testsupport.CapsuleRecord)
// whose uuid is the key, received i seconds after base. A copy is the same
// key and value.
func eventRecord(i int) (uuid string, value []byte) {
	r := testsupport.CapsuleRecord(dedupeTopic, 0, int64(i), base.Add(time.Duration(i)*time.Second))
	return testsupport.EventUUID(dedupeTopic, 0, int64(i)), r.Value
}

// produce produces events (a number again is a copy), in order.
func produce(k *testsupport.KeyedTopic, events ...int) {
	recs := make([]testsupport.KeyedRecord, 0, len(events))
	for _, i := range events {
		u, v := eventRecord(i)
		recs = append(recs, testsupport.KeyedRecord{UUID: u, Value: v})
	}
	k.Produce(recs...)
}

// dedupeRun runs a new file sink over root through sink.Run until the
// group has committed every record produced, then stops it (Close
// publishes the open files).
func dedupeRun(t *testing.T, k *testsupport.KeyedTopic, root string, window, maxBatch int, m *sink.Metrics) {
	t.Helper()
	// The clock stands still within the data's hour: no hour closes, and
	// files publish when they reach MaxFileBytes (several checkpoints a
	// run) and at Close.
	clk := testsupport.NewClock(base.Add(30 * time.Minute))
	s := openSink(t, Config{Root: root, Format: Parquet, Schemas: testSchemas(t), Now: clk.Now, MaxFileBytes: 4 << 10})
	prod, err := kafka.NewProducer(kafka.ProducerConfig{Kafka: kafka.Config{Brokers: k.Brokers}})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	group := "files-dedupe"
	cfg := sink.Config{
		Kafka: kafka.Config{Brokers: k.Brokers}, Name: "files", Group: group,
		Topics: []string{dedupeTopic}, MaxBatch: maxBatch, BatchTime: 20 * time.Millisecond,
		MaintainEvery: 10 * time.Millisecond, Producer: prod, Logger: testsupport.Logger(t),
		Metrics: m, DedupeWindow: window,
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- sink.Run(ctx, cfg, s) }()
	deadline := time.Now().Add(30 * time.Second)
	for !k.Consumed(group) {
		select {
		case err := <-done:
			t.Fatalf("sink.Run returned before consuming everything: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("the group did not commit the end offsets %v within 30 s", k.Ends)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("sink.Run: %v", err)
	}
}

// manifestOffsets returns the last offset each partition's manifest
// publishes (-1: no manifest).
func manifestOffsets(t *testing.T, root string) map[int32]int64 {
	t.Helper()
	out := map[int32]int64{}
	for p := range int32(3) {
		m, err := readManifest(vfs.OS, filepath.Join(root, filepath.FromSlash(manifestPath(dedupeTopic, p))))
		switch {
		case os.IsNotExist(err):
			out[p] = -1
		case err != nil:
			t.Fatal(err)
		default:
			out[p] = m.LastOffset
		}
	}
	return out
}

// checkPublished compares how often each uuid is published under root
// with want: once each with the window on, as often as produced with it
// off. It returns the rows published and the uuids published more than
// once.
func checkPublished(t *testing.T, k *testsupport.KeyedTopic, root string, window int, when string) (rows, twice, files int) {
	t.Helper()
	p := readPublished(t, root)
	files = len(p.files)
	var bad []string
	for u, n := range k.Produced {
		want := n
		if window > 0 {
			want = 1
		}
		if got := p.byUUID[u]; got != want {
			bad = append(bad, fmt.Sprintf("%s (partition %d, produced %d): published %d, want %d", u[:8], k.PartOf[u], n, got, want))
		}
	}
	for u, n := range p.byUUID {
		rows += n
		if n > 1 {
			twice++
		}
		if _, ok := k.Produced[u]; !ok {
			bad = append(bad, fmt.Sprintf("%s: published %d, never produced", u, n))
		}
	}
	slices.Sort(bad)
	if len(bad) > 0 {
		t.Errorf("%s: %d of %d events published a wrong number of times, e.g.:\n%v", when, len(bad), len(k.Produced), bad[:min(10, len(bad))])
	}
	return rows, twice, files
}

// TestDedupeThroughRun: the file sink through sink.Run, restarted once
// (a new Sink over the same root, another batch size), with copies of
// events in the same run, after the restart, far back in the partition and
// at its end. With the window on (sink.dedupe_window's default) each uuid
// is published exactly once; off, each copy is published too.
func TestDedupeThroughRun(t *testing.T) {
	for _, c := range []struct {
		name   string
		window int
	}{
		{"window 20000", 20_000},
		{"off", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			k := testsupport.NewKeyedTopic(t, dedupeTopic, sink.DefaultErrorTopic)
			root := t.TempDir()
			reg := prometheus.NewRegistry()
			m := sink.NewMetrics(reg)

			// Run 1, batches of 7: copies in the same run (maybe the same
			// batch), and copies last in the partitions.
			produce(k, seq(0, 300)...)
			produce(k, 5, 5, 17, 150)
			produce(k, seq(280, 300)...)
			ends1 := maps.Clone(k.Ends)
			dedupeRun(t, k, root, c.window, 7, m)
			rows, twice, files := checkPublished(t, k, root, c.window, "after run 1")
			man1 := manifestOffsets(t, root)
			t.Logf("run 1: %d events, %d copies produced; %d rows published in %d files, %d uuids more than once; partition ends %v, manifests end at %v",
				len(k.Produced), k.Copies(), rows, files, twice, ends1, man1)
			if c.window > 0 {
				// The dropped copies at a partition's end are past its
				// manifest: the restart reads them again.
				gap := false
				for p, end := range ends1 {
					gap = gap || man1[p] < end-1
				}
				if !gap {
					t.Errorf("no partition ends with dropped copies (ends %v, manifests %v): the restart over them is not tested", ends1, man1)
				}
			}

			// Run 2, a restart with batches of 64: a processor's batch
			// produced again far back (still within the window), one
			// near the end, new events with copies among them, and copies
			// last again.
			produce(k, seq(0, 40)...)
			produce(k, seq(250, 300)...)
			produce(k, seq(300, 360)...)
			produce(k, seq(310, 320)...)
			produce(k, seq(360, 380)...)
			produce(k, seq(370, 380)...)
			dedupeRun(t, k, root, c.window, 64, m)
			rows, twice, files = checkPublished(t, k, root, c.window, "after run 2")
			dups := testsupport.DuplicatesDropped(t, reg, "files")
			t.Logf("run 2: %d events, %d copies produced; %d rows published in %d files, %d uuids more than once; duplicates dropped (metric) %v; partition ends %v, manifests end at %v; %v",
				len(k.Produced), k.Copies(), rows, files, twice, dups, k.Ends, manifestOffsets(t, root), time.Since(start).Round(time.Millisecond))
			switch {
			case c.window > 0 && (rows != len(k.Produced) || dups < float64(k.Copies())):
				t.Errorf("window on: %d rows, %v duplicates dropped; want %d rows, at least %d dropped", rows, dups, len(k.Produced), k.Copies())
			case c.window == 0 && (rows != len(k.Produced)+k.Copies() || dups != 0):
				t.Errorf("window off: %d rows, %v duplicates dropped; want %d rows, none dropped", rows, dups, len(k.Produced)+k.Copies())
			}
			checkNoTemps(t, root)
		})
	}
}

// seq is from, from+1, …, to-1.
func seq(from, to int) []int {
	out := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}
