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
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

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

// dedupeKafka is a kfake cluster with dedupeTopic (3 partitions) and the
// sink-error topic, and what the test produced into it.
type dedupeKafka struct {
	t        *testing.T
	brokers  []string
	cl       *kgo.Client
	adm      *kadm.Client
	produced map[string]int   // uuid → records produced
	partOf   map[string]int32 // uuid → its partition
	ends     map[int32]int64  // partition → end offset (next to produce)
}

func newDedupeKafka(t *testing.T) *dedupeKafka {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, dedupeTopic), kfake.SeedTopics(1, sink.DefaultErrorTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	// The default partitioner hashes the key, as the processor's producer
	// does: every copy of an event lands in the partition of the first.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &dedupeKafka{t: t, brokers: c.ListenAddrs(), cl: cl, adm: kadm.NewClient(cl),
		produced: map[string]int{}, partOf: map[string]int32{}, ends: map[int32]int64{}}
}

// eventRecord is event i: a capsule of Test/1 (testsupport.CapsuleRecord)
// whose uuid is the key, received i seconds after base. A copy is the same
// key and value.
func eventRecord(i int) (uuid string, value []byte) {
	r := testsupport.CapsuleRecord(dedupeTopic, 0, int64(i), base.Add(time.Duration(i)*time.Second))
	return testsupport.EventUUID(dedupeTopic, 0, int64(i)), r.Value
}

// produce produces events (a number again is a copy), in order.
func (k *dedupeKafka) produce(events ...int) {
	k.t.Helper()
	var recs []*kgo.Record
	for _, i := range events {
		u, v := eventRecord(i)
		recs = append(recs, &kgo.Record{Topic: dedupeTopic, Key: []byte(u), Value: v})
	}
	res := k.cl.ProduceSync(k.t.Context(), recs...)
	if err := res.FirstErr(); err != nil {
		k.t.Fatal(err)
	}
	for _, r := range res {
		u := string(r.Record.Key)
		if p, ok := k.partOf[u]; ok && p != r.Record.Partition {
			k.t.Fatalf("a copy of %s produced to partition %d, the first to %d", u, r.Record.Partition, p)
		}
		k.partOf[u] = r.Record.Partition
		k.produced[u]++
		k.ends[r.Record.Partition] = max(k.ends[r.Record.Partition], r.Record.Offset+1)
	}
}

// consumed reports whether group committed the end offset of every
// partition: every record produced was stored or dropped as a copy.
func (k *dedupeKafka) consumed(group string) bool {
	offs, err := k.adm.FetchOffsets(k.t.Context(), group)
	if err != nil {
		return false
	}
	for p, end := range k.ends {
		o, ok := offs.Lookup(dedupeTopic, p)
		if !ok || o.Err != nil || o.At < end {
			return false
		}
	}
	return true
}

// copies counts the records produced beyond the first of their event.
func (k *dedupeKafka) copies() int {
	n := 0
	for _, c := range k.produced {
		n += c - 1
	}
	return n
}

// duplicatesDropped reads eventlogging_sink_duplicates_dropped_total of a
// sink from reg.
func duplicatesDropped(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "eventlogging_sink_duplicates_dropped_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "sink" && l.GetValue() == name {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// dedupeRun runs a new file sink over root through sink.Run until the
// group has committed every record produced, then stops it (Close
// publishes the open files).
func dedupeRun(t *testing.T, k *dedupeKafka, root string, window, maxBatch int, m *sink.Metrics) {
	t.Helper()
	// The clock stands still within the data's hour: no hour closes, and
	// files publish when they reach MaxFileBytes (several checkpoints a
	// run) and at Close.
	clk := testsupport.NewClock(base.Add(30 * time.Minute))
	s := openSink(t, Config{Root: root, Format: Parquet, Schemas: testSchemas(t), Now: clk.Now, MaxFileBytes: 4 << 10})
	prod, err := kafka.NewProducer(kafka.ProducerConfig{Kafka: kafka.Config{Brokers: k.brokers}})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	group := "files-dedupe"
	cfg := sink.Config{
		Kafka: kafka.Config{Brokers: k.brokers}, Name: "files", Group: group,
		Topics: []string{dedupeTopic}, MaxBatch: maxBatch, BatchTime: 20 * time.Millisecond,
		MaintainEvery: 10 * time.Millisecond, Producer: prod, Logger: testsupport.Logger(t),
		Metrics: m, DedupeWindow: window,
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- sink.Run(ctx, cfg, s) }()
	deadline := time.Now().Add(30 * time.Second)
	for !k.consumed(group) {
		select {
		case err := <-done:
			t.Fatalf("sink.Run returned before consuming everything: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("the group did not commit the end offsets %v within 30 s", k.ends)
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
func checkPublished(t *testing.T, k *dedupeKafka, root string, window int, when string) (rows, twice, files int) {
	t.Helper()
	p := readPublished(t, root)
	files = len(p.files)
	var bad []string
	for u, n := range k.produced {
		want := n
		if window > 0 {
			want = 1
		}
		if got := p.byUUID[u]; got != want {
			bad = append(bad, fmt.Sprintf("%s (partition %d, produced %d): published %d, want %d", u[:8], k.partOf[u], n, got, want))
		}
	}
	for u, n := range p.byUUID {
		rows += n
		if n > 1 {
			twice++
		}
		if _, ok := k.produced[u]; !ok {
			bad = append(bad, fmt.Sprintf("%s: published %d, never produced", u, n))
		}
	}
	slices.Sort(bad)
	if len(bad) > 0 {
		t.Errorf("%s: %d of %d events published a wrong number of times, e.g.:\n%v", when, len(bad), len(k.produced), bad[:min(10, len(bad))])
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
			k := newDedupeKafka(t)
			root := t.TempDir()
			reg := prometheus.NewRegistry()
			m := sink.NewMetrics(reg)

			// Run 1, batches of 7: copies in the same run (maybe the same
			// batch), and copies last in the partitions.
			k.produce(seq(0, 300)...)
			k.produce(5, 5, 17, 150)
			k.produce(seq(280, 300)...)
			ends1 := maps.Clone(k.ends)
			dedupeRun(t, k, root, c.window, 7, m)
			rows, twice, files := checkPublished(t, k, root, c.window, "after run 1")
			man1 := manifestOffsets(t, root)
			t.Logf("run 1: %d events, %d copies produced; %d rows published in %d files, %d uuids more than once; partition ends %v, manifests end at %v",
				len(k.produced), k.copies(), rows, files, twice, ends1, man1)
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
			k.produce(seq(0, 40)...)
			k.produce(seq(250, 300)...)
			k.produce(seq(300, 360)...)
			k.produce(seq(310, 320)...)
			k.produce(seq(360, 380)...)
			k.produce(seq(370, 380)...)
			dedupeRun(t, k, root, c.window, 64, m)
			rows, twice, files = checkPublished(t, k, root, c.window, "after run 2")
			dups := duplicatesDropped(t, reg, "files")
			t.Logf("run 2: %d events, %d copies produced; %d rows published in %d files, %d uuids more than once; duplicates dropped (metric) %v; partition ends %v, manifests end at %v; %v",
				len(k.produced), k.copies(), rows, files, twice, dups, k.ends, manifestOffsets(t, root), time.Since(start).Round(time.Millisecond))
			switch {
			case c.window > 0 && (rows != len(k.produced) || dups < float64(k.copies())):
				t.Errorf("window on: %d rows, %v duplicates dropped; want %d rows, at least %d dropped", rows, dups, len(k.produced), k.copies())
			case c.window == 0 && (rows != len(k.produced)+k.copies() || dups != 0):
				t.Errorf("window off: %d rows, %v duplicates dropped; want %d rows, none dropped", rows, dups, len(k.produced)+k.copies())
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
