package sink

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventlogging/eventlogging/internal/kafka"
)

// offsetSink is a Resumer in memory as the file and Iceberg sinks are: it
// stores each record at most once per Kafka record (it skips offsets at
// or below the last it stored) and resumes after the last it stored, so
// only copies of an event in other records can be stored twice. Its state
// outlives a Run, as a file sink's manifests do.
type offsetSink struct {
	mu        sync.Mutex
	last      map[int32]int64 // per partition
	stored    map[string]int  // uuid → times stored
	n         int
	failNext  bool // the next WriteRecords with records fails
	onWritten func(n int)
}

func newOffsetSink() *offsetSink {
	return &offsetSink{last: map[int32]int64{}, stored: map[string]int{}}
}

func (s *offsetSink) WriteRecords(_ context.Context, batch []kafka.Record) ([]Poison, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failNext && len(batch) > 0 {
		s.failNext = false
		return nil, errors.New("store away")
	}
	for _, r := range batch {
		if l, ok := s.last[r.Partition]; ok && r.Offset <= l {
			continue
		}
		s.last[r.Partition] = r.Offset
		s.stored[string(r.Value)]++
		s.n++
	}
	if s.onWritten != nil {
		s.onWritten(s.n)
	}
	return nil, nil
}

func (s *offsetSink) StartOffsets(_ context.Context, assigned map[string][]int32) (map[string]map[int32]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]map[int32]int64{}
	for t, ps := range assigned {
		out[t] = map[int32]int64{}
		for _, p := range ps {
			if l, ok := s.last[p]; ok {
				out[t][p] = l + 1
			} else {
				out[t][p] = 0
			}
		}
	}
	return out, nil
}

func (*offsetSink) Close() error { return nil }

// storedTwice returns the events stored more than once, and how many
// distinct events are stored.
func (s *offsetSink) storedTwice() (twice []string, distinct int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for v, n := range s.stored {
		if n > 1 {
			twice = append(twice, v)
		}
	}
	return twice, len(s.stored)
}

// dedupeCluster is kfake with a 3-partition topic.
func dedupeCluster(t *testing.T) (brokers []string, produce func(uuids ...int)) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, testTopic), kfake.SeedTopics(1, DefaultErrorTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers = c.ListenAddrs()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return brokers, func(uuids ...int) {
		t.Helper()
		var recs []*kgo.Record
		for _, u := range uuids {
			// Keyed by uuid as the processor keys them: copies share a
			// partition. Hyphenated and plain forms alternate: one uuid.
			id := fmt.Sprintf("%032x", u)
			key := id
			if u%2 == 0 {
				key = id[:8] + "-" + id[8:12] + "-" + id[12:16] + "-" + id[16:20] + "-" + id[20:]
			}
			recs = append(recs, &kgo.Record{Topic: testTopic, Key: []byte(key), Value: []byte(id)})
		}
		if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// runUntil runs the sink until it stored want records (of any run), then
// stops it.
func runUntil(t *testing.T, brokers []string, s *offsetSink, window, want int, m *Metrics) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s.mu.Lock()
	s.onWritten = func(n int) {
		if n >= want {
			cancel()
		}
	}
	done := s.n >= want
	s.mu.Unlock()
	if done {
		return
	}
	cfg := testConfig(t, brokers, m)
	cfg.Group = "sink-dedupe"
	cfg.MaxBatch = 7 // batches end inside runs of copies
	cfg.DedupeWindow = window
	if err := Run(ctx, cfg, s); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != context.Canceled {
		s.mu.Lock()
		defer s.mu.Unlock()
		t.Fatalf("stored %d records of %d in 30 s", s.n, want)
	}
}

func seq(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// TestDedupeAcrossRestarts: copies of events (same uuid key, other
// records) are stored once — in one batch, in later batches, and after a
// restart, when the copy follows the first in the partition by fewer than
// the window's records, and a write that fails and is retried loses
// nothing (its keys are remembered only once it is stored).
func TestDedupeAcrossRestarts(t *testing.T) {
	brokers, produce := dedupeCluster(t)
	m := NewMetrics(prometheus.NewRegistry())
	s := newOffsetSink()

	produce(seq(0, 200)...)
	produce(5, 5, 17, 150) // copies in the same run, maybe the same batch
	runUntil(t, brokers, s, 1000, 200, m)

	// A restart: the window is rebuilt from the records before the sink's
	// start offsets. A processor's batch produced again after a crash:
	produce(seq(190, 260)...)
	s.mu.Lock()
	s.failNext = true
	s.mu.Unlock()
	produce(seq(0, 40)...)
	produce(seq(260, 300)...)
	runUntil(t, brokers, s, 1000, 300, m)
	// One more restart with copies, then new events in every partition
	// to wait for.
	produce(seq(100, 150)...)
	produce(seq(300, 330)...)
	runUntil(t, brokers, s, 1000, 330, m)

	twice, distinct := s.storedTwice()
	if len(twice) > 0 || distinct != 330 {
		t.Errorf("%d events stored twice (%.3q…), %d distinct stored, want 0 and 330", len(twice), twice[:min(3, len(twice))], distinct)
	}
	// 4 copies, then 10 (of the run from 190) + 40 + 50. A dropped copy
	// does not move the sink's offsets: one at a partition's end when a
	// run stops is read, and counted, again by the next (of the first 4).
	if got := counter(t, m.dups.WithLabelValues("mem")); got < 4+10+40+50 || got > 2*4+10+40+50 {
		t.Errorf("duplicates counted %v, want %d to %d", got, 4+10+40+50, 2*4+10+40+50)
	}
}

// TestDedupeWindowBound: a copy further behind its first in the
// partition than the window is stored again (the documented limit), a
// nearer one is not; with the window off every copy is stored.
func TestDedupeWindowBound(t *testing.T) {
	for _, c := range []struct {
		name          string
		window, twice int
	}{
		{"window 40", 40, 3},
		{"off", 0, 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			brokers, produce := dedupeCluster(t)
			s := newOffsetSink()
			produce(seq(0, 100)...)
			runUntil(t, brokers, s, c.window, 100, nil)
			produce(seq(200, 500)...) // ~100 new records in each partition
			produce(seq(0, 3)...)     // copies far behind their first
			produce(seq(497, 500)...) // copies near theirs
			produce(seq(600, 630)...) // to wait for
			runUntil(t, brokers, s, c.window, 100+300+30+c.twice, nil)
			twice, distinct := s.storedTwice()
			if len(twice) != c.twice || distinct != 430 {
				t.Errorf("%d events stored twice, %d distinct, want %d and 430", len(twice), distinct, c.twice)
			}
		})
	}
}

// TestKeyID: a uuid is one key hyphenated or not, in either case; other
// keys are told apart by their hash; no key is none.
func TestKeyID(t *testing.T) {
	a, _ := keyID([]byte("5f0c1d7e2b7a5a4e9d2c3b1e4f5a6b7c"))
	b, _ := keyID([]byte("5F0C1D7E-2B7A-5A4E-9D2C-3B1E4F5A6B7C"))
	c, _ := keyID([]byte("5f0c1d7e2b7a5a4e9d2c3b1e4f5a6b7d"))
	d, _ := keyID([]byte("not a uuid"))
	e, _ := keyID([]byte("not a uuiD"))
	if a != b || a == c || d == e || d == a {
		t.Errorf("keys: %x %x %x %x %x", a, b, c, d, e)
	}
	if _, ok := keyID(nil); ok {
		t.Error("no key has an id")
	}
}
