package filesink

import (
	"fmt"
	"testing"

	"github.com/eventlogging/eventlogging/internal/kafka"
)

// Two sinks on one distributed target (objstore.Dir here; the same on real
// S3 and HDFS in test/e2e): every record is published exactly once when a
// partition moves from one to the other while the first still holds files
// of it, in each of the ways it can move.

// fenceInput is the input of the two-writer tests: two partitions of one
// topic.
func fenceInput() []kafka.Record {
	return spread([]string{"eventlogging_Test"}, 2, 600, 2)
}

// feedRange writes the records of input with offsets in [from, to) to s in
// batches of n, from its start offsets (as feeder.run does, minus the
// StartOffsets call); errors fail the test.
func feedRange(t *testing.T, s *Sink, input []kafka.Record, from, to int64, n int) {
	t.Helper()
	var part []kafka.Record
	for _, r := range input {
		if r.Offset >= from && r.Offset < to {
			part = append(part, r)
		}
	}
	for len(part) > 0 {
		k := min(n, len(part))
		if _, err := s.Write(t.Context(), part[:k]); err != nil {
			t.Fatal(err)
		}
		part = part[k:]
	}
}

// A zombie writer: sink A holds files of both partitions when sink B is
// assigned them (A's session was lost, A does not know it yet). B resumes
// from the manifest, A's later checkpoints are refused by the fence, A's
// records are skipped, and B publishes everything A did not, once.
func TestFenceZombieWriter(t *testing.T) {
	for _, format := range []Format{JSONLines, Parquet} {
		t.Run(string(format), func(t *testing.T) {
			storeRoot := t.TempDir()
			input := fenceInput()
			a := openSink(t, remoteConfig(t, format, storeRoot, t.TempDir()))
			f := newFeeder(input, 50)
			if _, err := a.StartOffsets(t.Context(), f.assigned()); err != nil {
				t.Fatal(err)
			}
			feedRange(t, a, input, 0, 250, 50) // some published, some open
			b := openSink(t, remoteConfig(t, format, storeRoot, t.TempDir()))
			// B's batches differ from A's, so a record both publish lands
			// in files of different names (a repeat would show).
			feedAll(t, b, input, 37)
			feedRange(t, a, input, 250, 600, 50) // refused: A is fenced off
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			for _, st := range a.parts {
				if !st.fenced {
					t.Errorf("A's partition %d is not fenced off", st.partition)
				}
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			checkExactlyOnce(t, storeRoot, input)
		})
	}
}

// A writer fenced between its two manifest writes: A put its checkpoint
// pending (step 2) when B claims the partitions and rolls that checkpoint
// back; A then uploads its files all the same (a paused process waking
// up) and its step 4 is refused. B deletes A's late uploads after its own
// next checkpoint: every record once.
func TestFenceUploadInFlight(t *testing.T) {
	for _, format := range []Format{JSONLines, Parquet} {
		t.Run(string(format), func(t *testing.T) {
			storeRoot := t.TempDir()
			input := fenceInput()
			b := openSink(t, remoteConfig(t, format, storeRoot, t.TempDir()))
			claimed := false
			cfg := remoteConfig(t, format, storeRoot, t.TempDir())
			cfg.hook = func(point string) error {
				if point == pointManifest && !claimed {
					claimed = true
					if _, err := b.StartOffsets(t.Context(), newFeeder(input, 1).assigned()); err != nil {
						return fmt.Errorf("B's claim: %w", err)
					}
				}
				return nil
			}
			a := openSink(t, cfg)
			if _, err := a.StartOffsets(t.Context(), newFeeder(input, 1).assigned()); err != nil {
				t.Fatal(err)
			}
			feedRange(t, a, input, 0, 400, 50)
			if !claimed {
				t.Fatal("A never reached a pending checkpoint")
			}
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			// A's late uploads are visible until B's next checkpoint.
			feedAll(t, b, input, 37)
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			checkExactlyOnce(t, storeRoot, input)
		})
	}
}

// A rebalance: A's partitions are revoked (A publishes what it holds, the
// group waits for it), then assigned to B, which resumes right after; A
// gets one of them back later and resumes after B's checkpoint, not after
// the offsets it loaded at Open.
func TestFenceRevokedHandover(t *testing.T) {
	storeRoot := t.TempDir()
	input := fenceInput()
	a := openSink(t, remoteConfig(t, JSONLines, storeRoot, t.TempDir()))
	b := openSink(t, remoteConfig(t, JSONLines, storeRoot, t.TempDir()))
	all := newFeeder(input, 1).assigned()
	if _, err := a.StartOffsets(t.Context(), all); err != nil {
		t.Fatal(err)
	}
	feedRange(t, a, input, 0, 230, 50)
	a.Revoked(t.Context(), all, false)
	offs, err := b.StartOffsets(t.Context(), all)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range all["eventlogging_Test"] {
		if got := offs["eventlogging_Test"][p]; got != 230 {
			t.Errorf("B resumes partition %d at %d, want 230 (A published what it held when revoked)", p, got)
		}
	}
	feedRange(t, b, input, 230, 400, 37)
	b.Revoked(t.Context(), all, false)
	offs, err = a.StartOffsets(t.Context(), all)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range all["eventlogging_Test"] {
		if got := offs["eventlogging_Test"][p]; got != 400 {
			t.Errorf("A resumes partition %d at %d, want 400 (after B's checkpoint)", p, got)
		}
	}
	feedRange(t, a, input, 400, 600, 61)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, storeRoot, input)
}
