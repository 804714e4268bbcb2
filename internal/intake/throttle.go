package intake

import (
	"sync"
	"time"
)

// logThrottle lets one log line through per interval and counts the ones
// it held back, so a condition that repeats thousands of times a second
// (every request refused while the spool is full) logs once, with a count.
type logThrottle struct {
	every time.Duration

	mu         sync.Mutex
	last       time.Time
	suppressed int64
}

// allow reports whether to log now and how many were held back since the
// last line that was let through.
func (l *logThrottle) allow(now time.Time) (bool, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() && now.Sub(l.last) < l.every {
		l.suppressed++
		return false, 0
	}
	n := l.suppressed
	l.last, l.suppressed = now, 0
	return true, n
}
