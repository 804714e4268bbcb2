package loadgen

import (
	"sync"
	"time"
)

// issuer hands out event sequence numbers to the workers and, when a rate
// is set, the time each batch is due: event n is due at start + n/rate, so
// the schedule never drifts and a late worker catches up at once. Safe for
// concurrent use.
type issuer struct {
	start    time.Time
	perEvent float64 // ns between events; 0: flat out
	limit    uint64  // events to issue
	mu       sync.Mutex
	next     uint64
}

func newIssuer(start time.Time, rate float64, limit uint64) *issuer {
	is := &issuer{start: start, limit: limit}
	if rate > 0 {
		is.perEvent = float64(time.Second) / rate
	}
	return is
}

// take issues up to n events: the first sequence number, how many (0 once
// the limit is reached) and when they are due (the zero time when flat
// out).
func (is *issuer) take(n int) (first uint64, got int, due time.Time) {
	is.mu.Lock()
	defer is.mu.Unlock()
	got = int(min(uint64(n), is.limit-is.next))
	first = is.next
	is.next += uint64(got)
	if is.perEvent > 0 && got > 0 {
		due = is.start.Add(time.Duration(float64(first) * is.perEvent))
	}
	return first, got, due
}

// issued is how many events were handed out.
func (is *issuer) issued() uint64 {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.next
}
