package icebergsink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/iceberg-go/catalog"

	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// Two sinks on one partition (docs/reliability.md, "Two writers on one
// target"): a zombie whose Kafka session was lost still holds and commits
// rows of a partition the new owner writes too. Every record must be in
// its table once, and the resume offsets (what StartOffsets would return
// to a restarted sink) must never move backwards, nor past a record that
// is not in its table.

// twoWritersTopic is the topic of the two-writer tests.
const twoWritersTopic = "eventlogging_mixed"

// resumeWatch checks the tables after each step: through its own sink, it
// reads the resume offsets and the stored uuids.
type resumeWatch struct {
	s     *Sink
	input []kafka.Record // every record the writers are given
	prev  map[int32]int64
}

func newResumeWatch(t *testing.T, e env, input []kafka.Record) *resumeWatch {
	t.Helper()
	s := openSink(t, e.config(t))
	t.Cleanup(func() { _ = s.Close() })
	return &resumeWatch{s: s, input: input, prev: map[int32]int64{}}
}

// stored counts the uuids in both tables of mixedIn's records.
func (w *resumeWatch) stored(ctx context.Context) (map[string]int, error) {
	got := map[string]int{}
	for name, path := range map[string]string{"Test": "uuid", "analytics_button_click": "meta.id"} {
		tbl, err := w.s.cat.LoadTable(ctx, append(slices.Clone(w.s.ns), name))
		if errors.Is(err, catalog.ErrNoSuchTable) {
			continue
		}
		if err != nil {
			return nil, err
		}
		rows, err := readRows(ctx, tbl)
		if err != nil {
			return nil, err
		}
		for k, v := range countBy(rows, path) {
			got[k] += v
		}
	}
	return got, nil
}

// check reads the resume offsets (as StartOffsets computes them), then the
// tables, and returns what is wrong: an offset lower than one it read
// before, a record below its partition's resume offset that is not stored,
// a record stored twice. It returns the resume offsets.
func (w *resumeWatch) check(ctx context.Context) (map[int32]int64, []string) {
	complete, err := w.s.tableOffsets(ctx)
	if err != nil {
		return nil, []string{err.Error()}
	}
	resume := map[int32]int64{}
	var bad []string
	for key, off := range complete {
		resume[key.partition] = off + 1
	}
	for p, prev := range w.prev {
		if resume[p] < prev {
			bad = append(bad, fmt.Sprintf("partition %d resumes at %d, before %d read earlier: the resume point moved backwards", p, resume[p], prev))
		}
	}
	got, err := w.stored(ctx)
	if err != nil {
		return nil, []string{err.Error()}
	}
	missing, twice := 0, 0
	for _, r := range w.input {
		n := got[testsupport.EventUUID(r.Topic, r.Partition, r.Offset)]
		switch {
		case n > 1:
			if twice++; twice <= 5 {
				bad = append(bad, fmt.Sprintf("%d/%d stored %d times", r.Partition, r.Offset, n))
			}
		case n == 0 && r.Offset < resume[r.Partition]:
			if missing++; missing <= 5 {
				bad = append(bad, fmt.Sprintf("partition %d resumes at %d, but offset %d is not stored", r.Partition, resume[r.Partition], r.Offset))
			}
		}
	}
	if twice+missing > 10 {
		bad = append(bad, fmt.Sprintf("(%d records stored more than once, %d below the resume point not stored)", twice, missing))
	}
	for p, off := range resume {
		w.prev[p] = max(w.prev[p], off)
	}
	return resume, bad
}

// step checks the tables after a step of the test, and that the resume
// offsets are want.
func (w *resumeWatch) step(t *testing.T, name string, want map[int32]int64) {
	t.Helper()
	resume, bad := w.check(t.Context())
	for _, b := range bad {
		t.Errorf("%s: %s", name, b)
	}
	for p, off := range want {
		if resume[p] != off {
			t.Errorf("%s: partition %d resumes at %d, want %d", name, p, resume[p], off)
		}
	}
}

// part returns the records of partition p with offsets in [from, to).
func part(input []kafka.Record, p int32, from, to int64) []kafka.Record {
	var out []kafka.Record
	for _, r := range input {
		if r.Partition == p && r.Offset >= from && r.Offset < to {
			out = append(out, r)
		}
	}
	return out
}

// TestTwoWritersStaleCommit: a zombie sink (A) commits rows of partition 0
// after the partition's new owner (B) committed some of the same rows
// and more of partition 1, which A knows nothing of; A's commit conflicts
// with one of B's in the middle; then A commits rows all below what B
// stored. Each step is checked: every record once, resume offsets never
// backwards and never past a record not stored.
func TestTwoWritersStaleCommit(t *testing.T) {
	for _, ev := range envs {
		t.Run(ev.name, func(t *testing.T) {
			e := ev.new(t)
			ctx := t.Context()
			input := append(mixedIn(twoWritersTopic, 0, 0, 900), mixedIn(twoWritersTopic, 1, 0, 900)...)
			watch := newResumeWatch(t, e, input)
			assigned := map[string][]int32{twoWritersTopic: {0, 1}}

			var b *Sink
			raced := false // B committed while A's commit was under way
			written := 0   // A's data files written for table Test
			cfgA := e.config(t)
			cfgA.hook = func(point, table string) error {
				if point != pointWritten || table != "Test" {
					return nil
				}
				written++
				if b != nil && !raced {
					raced = true
					feed(t, b, part(input, 0, 450, 520), 50)
					if err := b.Flush(ctx); err != nil {
						t.Errorf("B's commit during A's: %v", err)
					}
				}
				return nil
			}
			a := openSink(t, cfgA)
			defer a.Close()
			if _, err := a.StartOffsets(ctx, assigned); err != nil {
				t.Fatal(err)
			}
			feed(t, a, part(input, 0, 0, 300), 60)
			feed(t, a, part(input, 1, 0, 300), 60)
			flush(t, a)
			watch.step(t, "A committed 0..299 of both partitions", map[int32]int64{0: 300, 1: 300})

			// A buffers 300..599 of partition 0; its session is lost.
			feed(t, a, part(input, 0, 300, 600), 60)

			bs := openSink(t, e.config(t))
			defer bs.Close()
			offs, err := bs.StartOffsets(ctx, assigned)
			if err != nil {
				t.Fatal(err)
			}
			if o := offs[twoWritersTopic]; o[0] != 300 || o[1] != 300 {
				t.Fatalf("B resumes at %v, want 300 and 300", o)
			}
			feed(t, bs, part(input, 0, 300, 450), 70)
			feed(t, bs, part(input, 1, 300, 600), 70)
			flush(t, bs)
			watch.step(t, "B committed 300..449 and 300..599", map[int32]int64{0: 450, 1: 600})

			// A commits late; B commits 450..519 between A's data files
			// and A's commit, which conflicts and is made again.
			b = bs
			written = 0
			flush(t, a)
			if !raced || written < 2 {
				t.Errorf("A's commit of Test did not conflict with B's (B committed during it: %t; A wrote its files %d times)", raced, written)
			}
			watch.step(t, "A committed its stale rows after B", map[int32]int64{0: 600, 1: 600})

			// Both go on; B commits first, A's rows are all below.
			feed(t, a, part(input, 0, 600, 700), 60)
			feed(t, bs, part(input, 0, 520, 800), 70)
			flush(t, bs)
			flush(t, a)
			watch.step(t, "A committed rows below B's", map[int32]int64{0: 800, 1: 600})

			feed(t, bs, part(input, 0, 800, 900), 70)
			feed(t, bs, part(input, 1, 600, 900), 70)
			flush(t, bs)
			watch.step(t, "B committed the rest", map[int32]int64{0: 900, 1: 900})
			got, err := watch.stored(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(input) {
				t.Errorf("%d distinct uuids stored, want %d", len(got), len(input))
			}
		})
	}
}

// TestTwoWritersConcurrent: sink A writes offsets 0..599 of a partition,
// committing every few batches and given some batches again; once A has
// committed, sink B is assigned the partition (StartOffsets) and writes
// from there to 799, at the same time, in batches of another size, while
// a third sink reads the resume offsets and the tables over and over.
// Every reading: no record twice, nothing missing below the resume
// offset, which never moves backwards; at the end every record once.
func TestTwoWritersConcurrent(t *testing.T) {
	for _, ev := range envs {
		t.Run(ev.name, func(t *testing.T) {
			e := ev.new(t)
			ctx := t.Context()
			const n = 800
			input := mixedIn(twoWritersTopic, 0, 0, n)
			watch := newResumeWatch(t, e, input)
			assigned := map[string][]int32{twoWritersTopic: {0}}
			var logs testsupport.SyncBuffer // both sinks' commits, conflicts and drops
			cfg := e.config(t)
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
			a, b := openSink(t, cfg), openSink(t, cfg)
			defer a.Close()
			defer b.Close()
			if _, err := a.StartOffsets(ctx, assigned); err != nil {
				t.Fatal(err)
			}

			// write feeds records from..to-1 to s in batches of size,
			// a batch given again now and then (redelivered), committing
			// every 2–5 batches and at the end; first is closed after the
			// first commit.
			write := func(s *Sink, rng *rand.Rand, from, to int64, size int, first chan<- struct{}) error {
				in := part(input, 0, from, to)
				commit := func() error {
					var err error
					for range 3 { // as the runner would, on its next batch
						if err = s.Flush(ctx); err == nil {
							if first != nil {
								close(first)
								first = nil
							}
							return nil
						}
					}
					return err
				}
				var prev []kafka.Record
				next := 2 + rng.IntN(4)
				for len(in) > 0 {
					batch := in[:min(size, len(in))]
					in = in[len(batch):]
					if _, err := s.WriteRecords(ctx, batch); err != nil {
						return err
					}
					if prev != nil && rng.IntN(5) == 0 {
						if _, err := s.WriteRecords(ctx, prev); err != nil {
							return err
						}
					}
					prev = batch
					if next--; next == 0 {
						if err := commit(); err != nil {
							return err
						}
						next = 2 + rng.IntN(4)
					}
				}
				return commit()
			}

			var wg sync.WaitGroup
			errs := make([]error, 2)
			aCommitted := make(chan struct{})
			var bStart int64
			wg.Add(2)
			go func() {
				defer wg.Done()
				errs[0] = write(a, rand.New(rand.NewPCG(1, 2)), 0, 600, 40, aCommitted)
			}()
			go func() {
				defer wg.Done()
				select {
				case <-aCommitted:
				case <-ctx.Done():
					return
				}
				offs, err := b.StartOffsets(ctx, assigned)
				if err != nil {
					errs[1] = err
					return
				}
				bStart = offs[twoWritersTopic][0]
				errs[1] = write(b, rand.New(rand.NewPCG(3, 4)), bStart, n, 30, nil)
			}()
			done := make(chan struct{})
			go func() {
				wg.Wait()
				close(done)
			}()
			readings := 0
			for stop := false; !stop; {
				select {
				case <-done:
					stop = true
				default:
				}
				_, bad := watch.check(ctx)
				readings++
				for _, b := range bad {
					t.Errorf("reading %d: %s", readings, b)
				}
				if len(bad) > 0 {
					<-done
					break
				}
			}
			for i, err := range errs {
				if err != nil {
					t.Errorf("sink %c: %v", 'A'+i, err)
				}
			}
			conflicts := strings.Count(logs.String(), "conflicted with another writer")
			drops := strings.Count(logs.String(), "rows already in the table dropped")
			t.Logf("B resumed at %d; %d commits conflicted, %d commits dropped rows the other had stored; %d readings", bStart, conflicts, drops, readings)
			if drops == 0 {
				t.Errorf("no commit dropped rows the other sink had stored: the writers did not overlap (or the drop is broken)")
			}
			watch.step(t, "both done", map[int32]int64{0: n})
			got, err := watch.stored(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(input) {
				t.Errorf("%d distinct uuids stored, want %d", len(got), len(input))
			}
		})
	}
}
