package filesink

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/sink"
	"github.com/eventlogging/eventlogging/internal/testsupport"
	"github.com/eventlogging/eventlogging/internal/vfs"
)

// The sink driven by sink.Run over kfake, as the sink role runs it, on a
// partition that goes quiet right after a record the sink refuses: once
// the refused record is in the error topic, the records before it publish
// on their usual schedule, and the published offset covers it.

const runTopic = "eventlogging_Test"

// runFixture is a kfake cluster with runTopic (one partition) and the
// sink-error topic, and a fake clock for the sinks.
type runFixture struct {
	t       *testing.T
	brokers []string
	root    string
	clk     *testsupport.Clock
}

func newRunFixture(t *testing.T) *runFixture {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, runTopic, sink.DefaultErrorTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return &runFixture{t: t, brokers: c.ListenAddrs(), root: t.TempDir(), clk: testsupport.NewClock(base.Add(time.Minute))}
}

// open opens a Parquet sink over the fixture's root and clock.
func (f *runFixture) open(maxFileAge time.Duration) *Sink {
	return openSink(f.t, Config{Root: f.root, Format: Parquet, Schemas: testSchemas(f.t), Now: f.clk.Now, MaxFileAge: maxFileAge})
}

// produce appends the records' values to runTopic, in order; their
// offsets must be the next ones of the partition.
func (f *runFixture) produce(recs ...kafka.Record) {
	f.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		f.t.Fatal(err)
	}
	defer cl.Close()
	var krs []*kgo.Record
	for _, r := range recs {
		krs = append(krs, &kgo.Record{Topic: runTopic, Partition: 0, Value: r.Value})
	}
	res := cl.ProduceSync(f.t.Context(), krs...)
	if err := res.FirstErr(); err != nil {
		f.t.Fatal(err)
	}
	for i, r := range res {
		if r.Record.Offset != recs[i].Offset {
			f.t.Fatalf("record produced at offset %d, want %d", r.Record.Offset, recs[i].Offset)
		}
	}
}

// run starts sink.Run over s and returns the function that stops it and
// returns Run's error.
func (f *runFixture) run(s *Sink) (stop func() error) {
	f.t.Helper()
	prod, err := kafka.NewProducer(kafka.ProducerConfig{Kafka: kafka.Config{Brokers: f.brokers}})
	if err != nil {
		f.t.Fatal(err)
	}
	cfg := sink.Config{
		Kafka: kafka.Config{Brokers: f.brokers}, Name: "files", Group: "files-" + f.root,
		Topics: []string{runTopic}, MaxBatch: 100, BatchTime: 20 * time.Millisecond,
		MaintainEvery: 10 * time.Millisecond, Producer: prod, Logger: testsupport.Logger(f.t),
	}
	ctx, cancel := context.WithCancel(f.t.Context())
	done := make(chan error, 1)
	go func() { done <- sink.Run(ctx, cfg, s) }()
	stopped := false
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		err := <-done
		prod.Close()
		return err
	}
	f.t.Cleanup(func() { _ = stop() })
	return stop
}

// errorRecords returns how many records the sink-error topic holds.
func (f *runFixture) errorRecords() int64 {
	f.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.brokers...))
	if err != nil {
		f.t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(f.t.Context(), sink.DefaultErrorTopic)
	if err != nil {
		f.t.Fatal(err)
	}
	o, ok := ends.Lookup(sink.DefaultErrorTopic, 0)
	if !ok || o.Err != nil {
		f.t.Fatalf("end offset of the error topic: %+v", o)
	}
	return o.Offset
}

// manifestOffset returns the last offset the partition's manifest
// publishes, -1 without a manifest.
func (f *runFixture) manifestOffset() int64 {
	f.t.Helper()
	m, err := readManifest(vfs.OS, filepath.Join(f.root, filepath.FromSlash(manifestPath(runTopic, 0))))
	if os.IsNotExist(err) {
		return -1
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return m.LastOffset
}

// published counts the distinct records of recs published under the root.
func (f *runFixture) published(recs []kafka.Record) int {
	p := readPublished(f.t, f.root)
	n := 0
	for _, r := range recs {
		if p.byUUID[testsupport.EventUUID(r.Topic, r.Partition, r.Offset)] > 0 {
			n++
		}
	}
	return n
}

// waitUntil polls cond until it holds, failing the test after within.
func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("test ended waiting for: %s", what)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// lastWritten returns the last offset s appended (or refused) of
// runTopic's partition, -1 before any.
func lastWritten(s *Sink) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.parts[tp{runTopic, 0}]; ok {
		return st.last
	}
	return -1
}

// validRecords returns n capsule records of runTopic from offset from,
// received a second apart from base.
func validRecords(from int64, n int) []kafka.Record {
	var out []kafka.Record
	for off := from; off < from+int64(n); off++ {
		out = append(out, testsupport.CapsuleRecord(runTopic, 0, off, base.Add(time.Duration(off)*time.Second)))
	}
	return out
}

// overflowRecord is the capsule record at off with an event.count the
// Parquet INT64 column cannot hold: poison.
func overflowRecord(off int64) kafka.Record {
	r := testsupport.CapsuleRecord(runTopic, 0, off, base.Add(time.Duration(off)*time.Second))
	r.Value = bytes.Replace(r.Value, fmt.Appendf(nil, `"count":%d,`, off), []byte(`"count":9223372036854775808,`), 1)
	return r
}

// N valid records then one the sink refuses, then no more traffic: the
// valid ones publish when their file is MaxFileAge old, the manifest covers
// the refused one, and a restart neither writes a record twice nor sends
// the refused one to the error topic again.
func TestRunPoisonOnIdlePartition(t *testing.T) {
	const n, maxAge = 60, time.Minute
	f := newRunFixture(t)
	valid := validRecords(0, n)
	f.produce(append(valid, overflowRecord(n))...)

	stop := f.run(f.open(maxAge))
	waitUntil(t, 30*time.Second, "the refused record in the error topic", func() bool { return f.errorRecords() == 1 })
	if got := f.published(valid); got != 0 {
		t.Fatalf("%d records published before their file was %v old", got, maxAge)
	}
	// No more traffic: only the clock moves, by the rotation interval.
	f.clk.Add(maxAge)
	waitUntil(t, 10*time.Second, fmt.Sprintf("the %d valid records published after %v without more traffic", n, maxAge),
		func() bool { return f.published(valid) == n })
	if got := f.manifestOffset(); got != n {
		t.Errorf("manifest publishes up to offset %d, want %d (the refused record)", got, n)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	// Restart, with more traffic after the refused record.
	more := validRecords(n+1, 5)
	f.produce(more...)
	s := f.open(maxAge)
	stop = f.run(s)
	last := more[len(more)-1].Offset
	waitUntil(t, 30*time.Second, "the restarted sink writes the new records", func() bool { return lastWritten(s) == last })
	f.clk.Add(maxAge)
	all := append(valid, more...)
	waitUntil(t, 10*time.Second, "every valid record published", func() bool { return f.published(all) == len(all) })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, f.root, all) // also: the refused record is not published
	if got := f.manifestOffset(); got != last {
		t.Errorf("manifest publishes up to offset %d, want %d", got, last)
	}
	if got := f.errorRecords(); got != 1 {
		t.Errorf("the error topic holds %d records, want 1: the restart sent the refused record again", got)
	}
}

// The hour of an idle partition whose last record was refused closes on
// time: closing it publishes its open files and writes its _SUCCESS
// without more traffic.
func TestRunPoisonHourCloses(t *testing.T) {
	const k, n = 5, 20
	f := newRunFixture(t)
	// A first run publishes k records at Close: the topic has a closing
	// state, as on any sink that ran before.
	first := validRecords(0, k)
	f.produce(first...)
	s := f.open(0)
	stop := f.run(s)
	waitUntil(t, 30*time.Second, "the first run writes its records", func() bool { return lastWritten(s) == k-1 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	valid := validRecords(k, n)
	f.produce(append(valid, overflowRecord(k+n))...)
	// Files never rotate by age here: only closing the hour publishes them.
	stop = f.run(f.open(24 * time.Hour))
	waitUntil(t, 30*time.Second, "the refused record in the error topic", func() bool { return f.errorRecords() == 1 })
	// The partition goes idle (IdleAfter = Lateness = 1h) and the clock
	// passes the hour's end plus Lateness.
	f.clk.Add(3 * time.Hour)
	success := filepath.Join(f.root, filepath.FromSlash(hourDir(runTopic, base.Unix())), successFile)
	waitUntil(t, 10*time.Second, "the hour's _SUCCESS", func() bool {
		_, err := os.Stat(success)
		return err == nil
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, f.root, append(first, valid...))
	if got := f.manifestOffset(); got != k+n {
		t.Errorf("manifest publishes up to offset %d, want %d (the refused record)", got, k+n)
	}
}
