package icebergsink

import (
	"context"
	"fmt"
	"maps"
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
)

// The Iceberg sink through sink.Run with the dedupe window
// (sink.dedupe_window) over a kfake topic of three partitions whose
// records are keyed by uuid, as the processor keys them: copies of an
// event (a processor's batch produced again after a crash, a spooled POST
// produced twice) are stored once, within a run, across a restart, and
// when the copies are the last records of a partition (the snapshots'
// complete offsets then end before the partition does, and the restart
// reads them again). With the window off every copy is stored.

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

// dedupeConfig is e's Config committing once 60 rows wait (several
// snapshots a run, whatever the machine's speed), and the rest at Close.
func dedupeConfig(t *testing.T, e env) Config {
	cfg := e.config(t)
	cfg.MaxBufferedRows = 60
	return cfg
}

// dedupeRun runs a new Iceberg sink over e through sink.Run until the
// group has committed every record produced, then stops it (Close commits
// the buffered rows).
func dedupeRun(t *testing.T, k *dedupeKafka, e env, window, maxBatch int, m *sink.Metrics) {
	t.Helper()
	s := openSink(t, dedupeConfig(t, e))
	prod, err := kafka.NewProducer(kafka.ProducerConfig{Kafka: kafka.Config{Brokers: k.brokers}})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	group := "iceberg-dedupe"
	cfg := sink.Config{
		Kafka: kafka.Config{Brokers: k.brokers}, Name: "iceberg", Group: group,
		Topics: []string{dedupeTopic}, MaxBatch: maxBatch, BatchTime: 20 * time.Millisecond,
		MaintainEvery: 20 * time.Millisecond, Producer: prod, Logger: testsupport.Logger(t),
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

// checkStored scans the table Test (through a sink of its own) and
// compares how often each uuid is stored with want: once each with the
// window on, as often as produced with it off. It returns the rows, the
// uuids stored more than once, the snapshots and the current one's
// complete offsets.
func checkStored(t *testing.T, k *dedupeKafka, e env, window int, when string) (rows, twice, snapshots int, complete string) {
	t.Helper()
	s := openSink(t, dedupeConfig(t, e))
	defer s.Close()
	tbl := loadTable(t, s, "Test")
	all := scanRows(t, tbl)
	byUUID := countBy(all, "uuid")
	var bad []string
	for u, n := range k.produced {
		want := n
		if window > 0 {
			want = 1
		}
		if got := byUUID[u]; got != want {
			bad = append(bad, fmt.Sprintf("%s (partition %d, produced %d): stored %d, want %d", u[:8], k.partOf[u], n, got, want))
		}
	}
	for u, n := range byUUID {
		if n > 1 {
			twice++
		}
		if _, ok := k.produced[u]; !ok {
			bad = append(bad, fmt.Sprintf("%s: stored %d, never produced", u, n))
		}
	}
	slices.Sort(bad)
	if len(bad) > 0 {
		t.Errorf("%s: %d of %d events stored a wrong number of times, e.g.:\n%v", when, len(bad), len(k.produced), bad[:min(10, len(bad))])
	}
	return len(all), twice, len(tbl.Metadata().Snapshots()), tbl.CurrentSnapshot().Summary.Properties[PropComplete]
}

// completeOffsets decodes a snapshot's complete offsets of dedupeTopic.
func completeOffsets(t *testing.T, prop string) map[int32]int64 {
	t.Helper()
	offs, err := decodeOffsets(prop)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	for key, o := range offs {
		if key.topic == dedupeTopic {
			out[key.partition] = o
		}
	}
	return out
}

// TestDedupeThroughRun: the Iceberg sink (SQLite catalog, local
// warehouse) through sink.Run, restarted once (a new Sink, another batch
// size), with copies of events in the same run, after the restart, far
// back in the partition and at its end. With the window on
// (sink.dedupe_window's default) each uuid is stored exactly once; off,
// each copy is stored too.
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
			e := sqliteEnv(t)
			reg := prometheus.NewRegistry()
			m := sink.NewMetrics(reg)

			// Run 1, batches of 7: copies in the same run (maybe the same
			// batch), and copies last in the partitions.
			k.produce(seq(0, 300)...)
			k.produce(5, 5, 17, 150)
			k.produce(seq(280, 300)...)
			ends1 := maps.Clone(k.ends)
			dedupeRun(t, k, e, c.window, 7, m)
			rows, twice, snaps, comp := checkStored(t, k, e, c.window, "after run 1")
			t.Logf("run 1: %d events, %d copies produced; %d rows stored in %d snapshots, %d uuids more than once; partition ends %v, %s %s",
				len(k.produced), k.copies(), rows, snaps, twice, ends1, PropComplete, comp)
			if c.window > 0 {
				// The dropped copies at a partition's end are past its
				// complete offset: the restart reads them again.
				complete, gap := completeOffsets(t, comp), false
				for p, end := range ends1 {
					gap = gap || complete[p] < end-1
				}
				if !gap {
					t.Errorf("no partition ends with dropped copies (ends %v, complete %v): the restart over them is not tested", ends1, complete)
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
			dedupeRun(t, k, e, c.window, 64, m)
			rows, twice, snaps, comp = checkStored(t, k, e, c.window, "after run 2")
			dups := duplicatesDropped(t, reg, "iceberg")
			t.Logf("run 2: %d events, %d copies produced; %d rows stored in %d snapshots, %d uuids more than once; duplicates dropped (metric) %v; partition ends %v, %s %s; %v",
				len(k.produced), k.copies(), rows, snaps, twice, dups, k.ends, PropComplete, comp, time.Since(start).Round(time.Millisecond))
			switch {
			case c.window > 0 && (rows != len(k.produced) || dups < float64(k.copies())):
				t.Errorf("window on: %d rows, %v duplicates dropped; want %d rows, at least %d dropped", rows, dups, len(k.produced), k.copies())
			case c.window == 0 && (rows != len(k.produced)+k.copies() || dups != 0):
				t.Errorf("window off: %d rows, %v duplicates dropped; want %d rows, none dropped", rows, dups, len(k.produced)+k.copies())
			}
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
