package loadgen

import (
	"sync"
	"testing"
	"time"
)

// TestTracker: the counts do not depend on whether an event is seen
// before or after its answer; sightings after the first are duplicates;
// invalid events are expected in the error topic; sequence numbers never
// generated are ignored.
func TestTracker(t *testing.T) {
	tr := newTracker(3 * chunkEvents)
	tr.generated(0, false)
	tr.generated(1, true)
	tr.generated(2, false)
	tr.generated(chunkEvents+5, true) // second chunk, allocated on demand

	tr.accept(0)
	if got := tr.see(0, false); got != first {
		t.Errorf("first sighting: %v", got)
	}
	if tr.see(1, true) != first { // seen before its answer
		t.Error("seen before accepted: not a first sighting")
	}
	tr.accept(1)
	tr.accept(1) // a second answer counts once
	tr.accept(2)
	if tr.complete() {
		t.Error("complete with event 2 unseen")
	}
	tr.see(2, true)              // a valid event in the error topic
	tr.see(chunkEvents+5, false) // an invalid event in a schema topic, never accepted
	if got := tr.see(0, false); got != duplicate {
		t.Errorf("second sighting: %v", got)
	}
	if got := tr.see(2*chunkEvents+1, false); got != foreign {
		t.Errorf("never generated: %v", got)
	}
	if got := tr.see(10*chunkEvents, false); got != foreign {
		t.Errorf("out of range: %v", got)
	}
	for name, c := range map[string]struct{ got, want int64 }{
		"accepted":         {tr.accepted.Load(), 3},
		"matched":          {tr.matched.Load(), 3},
		"seen":             {tr.seen.Load(), 4},
		"duplicates":       {tr.duplicates.Load(), 1},
		"invalid routed":   {tr.invalidRouted.Load(), 1},
		"unexpected error": {tr.unexpectedError.Load(), 1},
		"unexpected valid": {tr.unexpectedValid.Load(), 1},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", name, c.got, c.want)
		}
	}
	if !tr.complete() {
		t.Error("not complete with every accepted event seen")
	}
}

// TestTrackerConcurrent: answers and sightings racing on the same words
// match every event exactly once (run with -race).
func TestTrackerConcurrent(t *testing.T) {
	const n = 100_000
	tr := newTracker(n)
	for seq := range uint64(n) {
		tr.generated(seq, false)
	}
	var wg sync.WaitGroup
	for part := range uint64(4) {
		wg.Go(func() {
			for seq := part; seq < n; seq += 4 {
				tr.accept(seq)
			}
		})
		wg.Go(func() {
			for seq := part; seq < n; seq += 4 {
				tr.see(seq, false)
			}
		})
	}
	wg.Wait()
	if tr.matched.Load() != n || tr.accepted.Load() != n || tr.seen.Load() != n || tr.duplicates.Load() != 0 {
		t.Errorf("matched %d, accepted %d, seen %d, duplicates %d; want %d each and no duplicates",
			tr.matched.Load(), tr.accepted.Load(), tr.seen.Load(), tr.duplicates.Load(), n)
	}
}

// TestIssuer: event n is due at start + n/rate whatever the batch sizes,
// and the limit cuts the last batch.
func TestIssuer(t *testing.T) {
	start := time.Unix(1000, 0)
	is := newIssuer(start, 2000, 120)
	for _, tc := range []struct {
		n, wantGot int
		wantFirst  uint64
		wantDue    time.Duration
	}{
		{1, 1, 0, 0},
		{50, 50, 1, 500 * time.Microsecond},
		{50, 50, 51, 25500 * time.Microsecond},
		{50, 19, 101, 50500 * time.Microsecond},
		{50, 0, 120, 0},
	} {
		first, got, due := is.take(tc.n)
		if first != tc.wantFirst || got != tc.wantGot || (got > 0 && due.Sub(start) != tc.wantDue) {
			t.Errorf("take(%d) = %d, %d, +%v; want %d, %d, +%v", tc.n, first, got, due.Sub(start), tc.wantFirst, tc.wantGot, tc.wantDue)
		}
	}
	flat := newIssuer(start, 0, 10)
	if _, got, due := flat.take(4); got != 4 || !due.IsZero() {
		t.Errorf("flat out: %d events due %v", got, due)
	}
}
