package iphash

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

const testIP = "198.51.100.7"

// fakeClock is a settable clock for RotatorConfig.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock(t time.Time) *fakeClock { return &fakeClock{t: t} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// testPeriod is short so period arithmetic stays readable; base is the
// start of period 480000 of it.
const testPeriod = time.Hour

var base = time.Unix(480000*3600, 0)

func newTestRotator(store KeyStore, clock *fakeClock, writer string) *Rotator {
	return NewRotator(store, RotatorConfig{Period: testPeriod, Now: clock.Now, Writer: writer})
}

func TestPeriodOf(t *testing.T) {
	day := 24 * time.Hour
	for _, tc := range []struct {
		t      time.Time
		period time.Duration
		want   int64
	}{
		{time.Unix(0, 0), DefaultPeriod, 0},
		{time.Unix(90*86400-1, 999999999), DefaultPeriod, 0},
		{time.Unix(90*86400, 0), DefaultPeriod, 1},
		{time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), DefaultPeriod, 1735689600 / (90 * 86400)},
		{time.Unix(-1, 0), day, -1},
		{time.Unix(-86400, 0), day, -1},
		{time.Unix(-86401, 0), day, -2},
	} {
		if got := PeriodOf(tc.t, tc.period); got != tc.want {
			t.Errorf("PeriodOf(%v, %v) = %d, want %d", tc.t.UTC(), tc.period, got, tc.want)
		}
	}
}

func TestRotatorCreatesKeyWhenNone(t *testing.T) {
	store := &MemStore{}
	clock := newFakeClock(base.Add(10 * time.Minute))
	r := newTestRotator(store, clock, "proc-a")
	if r.Current() != nil {
		t.Fatal("Current() before Init is not nil")
	}
	if err := r.Init(t.Context()); err != nil {
		t.Fatalf("Init: %v", err)
	}
	got := store.entries(480000)
	if len(got) != 1 || store.appends != 1 {
		t.Fatalf("store has %d entries for the period after %d appends, want 1 and 1", len(got), store.appends)
	}
	if len(got[0].Key) != KeySize || got[0].Writer != "proc-a" {
		t.Fatalf("appended entry %v with %d-byte key, want %d bytes by proc-a", got[0], len(got[0].Key), KeySize)
	}
	want := NewHasher(SHA256, got[0].Key).Hash(testIP)
	if h := r.Current(); h == nil || h.Hash(testIP) != want || h.Alg() != SHA256 {
		t.Fatalf("Current() does not hash with the stored key as HMAC-SHA256")
	}
}

func TestRotatorReusesExistingKey(t *testing.T) {
	store := &MemStore{}
	ctx := t.Context()
	// Another period's key and a too-short key must not be taken.
	for _, e := range []Entry{
		{Period: 479999, Key: make([]byte, KeySize), Writer: "old"},
		{Period: 480000, Key: []byte("short"), Writer: "bogus"},
		{Period: 480000, Key: []byte(strings.Repeat("k", KeySize)), Writer: "first"},
		{Period: 480000, Key: []byte(strings.Repeat("z", KeySize)), Writer: "second"},
	} {
		if err := store.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	r := NewRotator(store, RotatorConfig{Alg: SHA1, Period: testPeriod, Now: newFakeClock(base).Now})
	if err := r.Init(ctx); err != nil {
		t.Fatalf("Init: %v", err)
	}
	if store.appends != 4 {
		t.Fatalf("Init appended although the period had a key (%d appends)", store.appends-4)
	}
	want := NewHasher(SHA1, []byte(strings.Repeat("k", KeySize))).Hash(testIP)
	if got := r.Current().Hash(testIP); got != want {
		t.Fatalf("Current() = %s, want the lowest-offset usable key's %s", got, want)
	}
}

// TestRotatorRaceAgrees makes two rotators both find no key and both append:
// they must still settle on the same key.
func TestRotatorRaceAgrees(t *testing.T) {
	store := &MemStore{}
	var arrived sync.WaitGroup
	arrived.Add(2)
	store.beforeAppend = func() { // both have loaded an empty store
		arrived.Done()
		arrived.Wait()
	}
	clock := newFakeClock(base.Add(time.Minute))
	rs := []*Rotator{newTestRotator(store, clock, "a"), newTestRotator(store, clock, "b")}
	errs := make(chan error, len(rs))
	for _, r := range rs {
		go func() { errs <- r.Init(t.Context()) }()
	}
	for range rs {
		if err := <-errs; err != nil {
			t.Fatalf("Init: %v", err)
		}
	}
	if n := len(store.entries(480000)); n != 2 {
		t.Fatalf("%d candidate keys stored, want 2 (the race did not happen)", n)
	}
	a, b := rs[0].Current().Hash(testIP), rs[1].Current().Hash(testIP)
	if a != b {
		t.Fatalf("racing rotators disagree: %s vs %s", a, b)
	}
	if want := NewHasher(SHA256, store.entries(480000)[0].Key).Hash(testIP); a != want {
		t.Fatalf("rotators agree on %s, want the lowest offset's %s", a, want)
	}
	// A third rotator arriving later reads the winner and appends nothing.
	c := newTestRotator(store, clock, "c")
	if err := c.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := c.Current().Hash(testIP); got != a || store.appends != 2 {
		t.Fatalf("late rotator hashes %s after %d appends, want %s after 2", got, store.appends, a)
	}
}

func TestRotatorStepRotatesAtBoundary(t *testing.T) {
	store := &MemStore{}
	clock := newFakeClock(base.Add(10 * time.Minute))
	r := newTestRotator(store, clock, "a")
	ctx := t.Context()
	if err := r.Init(ctx); err != nil {
		t.Fatal(err)
	}
	first := r.Current()

	// Before the prepare window: nothing to do until it opens (capped).
	d, err := r.step(ctx)
	if err != nil || d != maxWait {
		t.Fatalf("step = %v, %v; want %v, nil", d, err, maxWait)
	}
	clock.Set(base.Add(testPeriod - testPeriod/10 - 30*time.Second))
	if d, _ := r.step(ctx); d != 30*time.Second {
		t.Fatalf("step before prepare window waits %v, want 30s", d)
	}

	// In the prepare window: the next key is created but not yet used.
	clock.Set(base.Add(testPeriod - time.Second))
	if d, err := r.step(ctx); err != nil || d != time.Second {
		t.Fatalf("step in prepare window = %v, %v; want 1s, nil", d, err)
	}
	if len(store.entries(480001)) != 1 {
		t.Fatal("next period's key was not prepared")
	}
	if r.Current() != first {
		t.Fatal("key changed before the boundary")
	}
	next := r.At(base.Add(testPeriod))
	if next == nil || next.Hash(testIP) == first.Hash(testIP) {
		t.Fatal("At(next period) does not return a new prepared key")
	}

	// At the boundary the prepared key is swapped in without the store.
	store.setErr(errors.New("store down"))
	clock.Set(base.Add(testPeriod))
	if _, err := r.step(ctx); err != nil {
		t.Fatalf("step at boundary with the store down: %v", err)
	}
	if r.Current() != next {
		t.Fatal("Current() is not the prepared key after the boundary")
	}
	if r.At(base) != first || r.At(base.Add(-time.Second)) != nil {
		t.Fatal("At: previous period's key not kept, or an older one invented")
	}
	store.setErr(nil)

	// Two periods later: the key before the previous one is dropped.
	clock.Set(base.Add(2*testPeriod + time.Minute))
	if _, err := r.step(ctx); err != nil {
		t.Fatal(err)
	}
	if r.At(base) != nil || r.At(base.Add(testPeriod)) != next {
		t.Fatal("after rotating again, want previous kept and older dropped")
	}
	if r.Current() == next || r.Current() == first {
		t.Fatal("key did not change at the second boundary")
	}
}

// TestRotatorRun drives Run with a fake clock through a prepare window, a
// store outage and a boundary.
func TestRotatorRun(t *testing.T) {
	store := &MemStore{}
	clock := newFakeClock(base.Add(53*time.Minute + 30*time.Second))
	r := newTestRotator(store, clock, "a")
	waits := make(chan time.Duration)
	tick := make(chan struct{})
	r.wait = func(ctx context.Context, d time.Duration) bool {
		select {
		case waits <- d:
		case <-ctx.Done():
			return false
		}
		select {
		case <-tick:
			return true
		case <-ctx.Done():
			return false
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }() // Run without Init does Init's work

	if d := <-waits; d != 30*time.Second {
		t.Fatalf("first wait %v, want 30s until the prepare window (54m)", d)
	}
	first := r.Current()
	if first == nil {
		t.Fatal("Run did not make a key ready")
	}

	// The store fails while preparing: Run backs off and keeps the key.
	store.setErr(errors.New("store down"))
	clock.Set(base.Add(55 * time.Minute))
	tick <- struct{}{}
	if d := <-waits; d != minBackoff {
		t.Fatalf("wait after store error %v, want backoff %v", d, minBackoff)
	}
	tick <- struct{}{}
	if d := <-waits; d != 2*minBackoff {
		t.Fatalf("second backoff %v, want %v", d, 2*minBackoff)
	}
	if r.Current() != first {
		t.Fatal("key changed during a store outage")
	}

	store.setErr(nil)
	tick <- struct{}{}
	if d := <-waits; d != maxWait {
		t.Fatalf("wait after recovery %v, want %v (capped)", d, maxWait)
	}
	if len(store.entries(480001)) != 1 {
		t.Fatal("next key not prepared after recovery")
	}

	clock.Set(base.Add(testPeriod))
	tick <- struct{}{}
	<-waits
	if r.Current() == first || r.Current() != r.At(base.Add(testPeriod)) {
		t.Fatal("Run did not rotate at the boundary")
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run returned %v after cancel, want nil", err)
	}
}

func TestRotatorConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store KeyStore
		cfg   RotatorConfig
		want  string
	}{
		{"nil store", nil, RotatorConfig{}, "nil KeyStore"},
		{"bad alg", &MemStore{}, RotatorConfig{Alg: 9}, "invalid Alg(9)"},
		{"sub-second period", &MemStore{}, RotatorConfig{Period: time.Millisecond}, "not a positive whole number of seconds"},
		{"fractional period", &MemStore{}, RotatorConfig{Period: 1500 * time.Millisecond}, "not a positive whole number of seconds"},
		{"negative period", &MemStore{}, RotatorConfig{Period: -time.Hour}, "not a positive whole number of seconds"},
		{"prepare too long", &MemStore{}, RotatorConfig{Period: time.Hour, Prepare: time.Hour}, "prepare 1h0m0s must be in [0, period 1h0m0s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRotator(tc.store, tc.cfg)
			if err := r.Init(t.Context()); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Init error = %v, want containing %q", err, tc.want)
			}
			if err := r.Run(t.Context()); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Run error = %v, want containing %q", err, tc.want)
			}
		})
	}
	// Defaults.
	r := NewRotator(&MemStore{}, RotatorConfig{})
	if r.cfg.Period != DefaultPeriod || r.cfg.Prepare != time.Hour || r.cfgErr != nil {
		t.Errorf("defaults: period %v prepare %v err %v", r.cfg.Period, r.cfg.Prepare, r.cfgErr)
	}
}

func TestRotatorInitStoreError(t *testing.T) {
	store := &MemStore{err: errors.New("boom")}
	r := newTestRotator(store, newFakeClock(base), "a")
	err := r.Init(t.Context())
	if err == nil || !strings.Contains(err.Error(), "iphash: init key for period 480000: load: boom") {
		t.Fatalf("Init error = %v", err)
	}
	if r.Current() != nil {
		t.Fatal("Current() set after a failed Init")
	}
}

func BenchmarkCurrentHash(b *testing.B) {
	r := newTestRotator(&MemStore{}, newFakeClock(base), "a")
	if err := r.Init(b.Context()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = r.Current().Hash(testIP)
		}
	})
}
