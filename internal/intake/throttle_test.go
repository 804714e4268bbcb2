package intake

import (
	"testing"
	"time"
)

func TestLogThrottle(t *testing.T) {
	l := logThrottle{every: 10 * time.Second}
	t0 := time.Unix(1_700_000_000, 0)
	steps := []struct {
		at   time.Duration
		ok   bool
		held int64
	}{
		{0, true, 0},
		{time.Second, false, 0},
		{5 * time.Second, false, 0},
		{9 * time.Second, false, 0},
		{10 * time.Second, true, 3},
		{11 * time.Second, false, 0},
		{30 * time.Second, true, 1},
		{45 * time.Second, true, 0},
	}
	for _, s := range steps {
		ok, held := l.allow(t0.Add(s.at))
		if ok != s.ok || held != s.held {
			t.Errorf("at %s: allow = %t, %d held; want %t, %d", s.at, ok, held, s.ok, s.held)
		}
	}
}
