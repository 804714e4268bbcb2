package iphash

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// KeySize is the size in bytes of the random keys a Rotator creates.
	KeySize = 64
	// MinKeySize is the shortest stored key a Rotator accepts; shorter
	// entries are ignored when choosing a period's winner.
	MinKeySize = 32

	// DefaultPeriod is the rotation period used when RotatorConfig.Period
	// is zero.
	DefaultPeriod = 90 * 24 * time.Hour

	// maxPrepare caps the default RotatorConfig.Prepare.
	maxPrepare = time.Hour
	// maxWait bounds every sleep of Run, so a wall-clock jump (suspend,
	// NTP step) delays a rotation by at most this much.
	maxWait = time.Minute
	// Retry backoff of Run after a store error.
	minBackoff = time.Second
	maxBackoff = time.Minute
)

// RotatorConfig holds the tunables of a Rotator. The zero value is usable.
type RotatorConfig struct {
	// Alg is the HMAC hash function. Zero means SHA256.
	Alg Alg
	// Period is the key's lifetime. Periods are aligned to the Unix epoch,
	// so it must be a whole number of seconds. Zero means DefaultPeriod
	// (90 days). Every processor sharing a store must use the same Period.
	Period time.Duration
	// Prepare is how long before a period boundary Run fetches, or creates,
	// the next period's key, so the swap at the boundary needs no store
	// round trip. Zero means min(Period/10, 1h). Must be less than Period.
	Prepare time.Duration
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
	// Writer identifies this process in the entries it appends and in logs
	// (for example host name and pid). It need not be unique.
	Writer string
	// Logger receives rotation events and store errors, never keys. Nil
	// discards them.
	Logger *slog.Logger
}

// Rotator keeps the current period's Hasher, shared with every other Rotator
// on the same KeyStore.
//
// Call Init once before processing starts, then Run for the life of the
// process; Current may be called from any goroutine at any time after Init
// has returned nil.
type Rotator struct {
	store  KeyStore
	cfg    RotatorConfig
	cfgErr error
	secs   int64 // Period in seconds
	log    *slog.Logger

	state atomic.Pointer[keyState]
	mu    sync.Mutex // serialises writers of state

	// wait sleeps for d or until ctx is done, reporting whether it slept.
	// Tests replace it to drive Run with a fake clock.
	wait func(ctx context.Context, d time.Duration) bool
}

// keyState is immutable once published; Run replaces it as a whole.
type keyState struct {
	cur  periodKey  // always set
	prev *periodKey // the period before cur, if known; older ones are dropped
	next *periodKey // the period after cur, once prepared
}

type periodKey struct {
	period int64
	h      *Hasher
}

// NewRotator returns a Rotator on store. It starts nothing and does no I/O;
// configuration errors are reported by Init and Run.
func NewRotator(store KeyStore, cfg RotatorConfig) *Rotator {
	if cfg.Period == 0 {
		cfg.Period = DefaultPeriod
	}
	if cfg.Prepare == 0 {
		cfg.Prepare = min(cfg.Period/10, maxPrepare)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Rotator{
		store: store,
		cfg:   cfg,
		secs:  int64(cfg.Period / time.Second),
		log:   log.With("component", "iphash"),
		wait:  sleep,
	}
	switch {
	case store == nil:
		r.cfgErr = errors.New("iphash: rotator: nil KeyStore")
	case !cfg.Alg.valid():
		r.cfgErr = fmt.Errorf("iphash: rotator: invalid Alg(%d)", int(cfg.Alg))
	case cfg.Period < time.Second || cfg.Period%time.Second != 0:
		r.cfgErr = fmt.Errorf("iphash: rotator: period %v is not a positive whole number of seconds", cfg.Period)
	case cfg.Prepare < 0 || cfg.Prepare >= cfg.Period:
		r.cfgErr = fmt.Errorf("iphash: rotator: prepare %v must be in [0, period %v)", cfg.Prepare, cfg.Period)
	}
	return r
}

// PeriodOf returns the index of the period containing t for a period length
// of period: floor(t.Unix() / period-in-seconds). period must be at least one
// second.
func PeriodOf(t time.Time, period time.Duration) int64 {
	return floorDiv(t.Unix(), int64(period/time.Second))
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func (r *Rotator) periodOf(t time.Time) int64 { return floorDiv(t.Unix(), r.secs) }

func (r *Rotator) periodStart(p int64) time.Time { return time.Unix(p*r.secs, 0) }

// Init makes the current period's key ready: it loads the store, appends a
// fresh random key if the period has none, and takes the period's winning
// entry. It makes one attempt; ctx bounds it. Processing must not start
// before Init has returned nil.
func (r *Rotator) Init(ctx context.Context) error {
	if r.cfgErr != nil {
		return r.cfgErr
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.periodOf(r.cfg.Now())
	h, err := r.ensure(ctx, p)
	if err != nil {
		return fmt.Errorf("iphash: init key for period %d: %w", p, err)
	}
	r.publish(p, h)
	return nil
}

// Current returns the Hasher of the current period's key: one atomic load.
// It returns nil until Init (or Run) has made the first key ready.
//
// Run swaps the key at each period boundary (within a few milliseconds of
// it), so a Hasher obtained earlier keeps hashing with the old key: fetch it
// per event or per batch, not once.
func (r *Rotator) Current() *Hasher {
	st := r.state.Load()
	if st == nil {
		return nil
	}
	return st.cur.h
}

// At returns the Hasher of the period containing t if that key is in memory:
// the current period, the previous one, or the next one once prepared. It
// returns nil otherwise. Use it to hash with the key of an event's receive
// time rather than of the processing time.
func (r *Rotator) At(t time.Time) *Hasher {
	st := r.state.Load()
	if st == nil {
		return nil
	}
	p := r.periodOf(t)
	switch {
	case st.cur.period == p:
		return st.cur.h
	case st.prev != nil && st.prev.period == p:
		return st.prev.h
	case st.next != nil && st.next.period == p:
		return st.next.h
	}
	return nil
}

// Run keeps the key current until ctx is done, then returns nil. If Init has
// not succeeded it first does Init's work, retrying. Before each boundary it
// prepares the next period's key (see RotatorConfig.Prepare) and at the
// boundary it swaps it in. Store errors are logged and retried with backoff;
// while the next key cannot be obtained, Current keeps returning the old one.
// Run starts no goroutines.
func (r *Rotator) Run(ctx context.Context) error {
	if r.cfgErr != nil {
		return r.cfgErr
	}
	backoff := time.Duration(0)
	for {
		d, err := r.step(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			backoff = min(max(2*backoff, minBackoff), maxBackoff)
			r.log.Error("ip hash key unavailable, will retry", "err", err, "retry_in", backoff)
			d = min(d, backoff)
		} else {
			backoff = 0
		}
		if !r.wait(ctx, d) {
			return nil
		}
	}
}

// step brings the state up to date with the clock and returns how long to
// wait before the next step.
func (r *Rotator) step(ctx context.Context) (time.Duration, error) {
	r.mu.Lock()
	defer r.mu.Unlock()

	now := r.cfg.Now()
	p := r.periodOf(now)
	st := r.state.Load()

	if st == nil || st.cur.period != p {
		if st != nil && st.next != nil && st.next.period == p {
			r.publish(p, st.next.h)
		} else {
			h, err := r.ensure(ctx, p)
			if err != nil {
				return maxWait, fmt.Errorf("key for period %d: %w", p, err)
			}
			r.publish(p, h)
		}
		st = r.state.Load()
		if st.prev != nil {
			r.log.Info("ip hash key rotated", "period", p, "previous_period", st.prev.period)
		}
	}

	boundary := r.periodStart(p + 1)
	prepareAt := boundary.Add(-r.cfg.Prepare)
	if st.next == nil && !now.Before(prepareAt) {
		h, err := r.ensure(ctx, p+1)
		if err != nil {
			return clampWait(boundary.Sub(now)), fmt.Errorf("key for next period %d: %w", p+1, err)
		}
		next := *st
		next.next = &periodKey{period: p + 1, h: h}
		r.state.Store(&next)
		st = &next
	}
	if st.next == nil {
		return clampWait(prepareAt.Sub(now)), nil
	}
	return clampWait(boundary.Sub(now)), nil
}

func clampWait(d time.Duration) time.Duration { return min(max(d, 0), maxWait) }

// publish makes h the current key of period p. The caller holds r.mu.
func (r *Rotator) publish(p int64, h *Hasher) {
	ns := &keyState{cur: periodKey{period: p, h: h}}
	if old := r.state.Load(); old != nil {
		switch {
		case old.cur.period == p-1:
			ns.prev = &old.cur
		case old.prev != nil && old.prev.period == p-1:
			ns.prev = old.prev
		}
		if old.next != nil && old.next.period == p+1 {
			ns.next = old.next
		}
	}
	r.state.Store(ns)
}

// ensure returns the Hasher of period p's winning key, appending a fresh
// random key first if the period has none. Two Rotators racing here both
// append, and both then take the lowest offset, so they agree.
func (r *Rotator) ensure(ctx context.Context, p int64) (*Hasher, error) {
	entries, err := r.store.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	w, n, ok := winner(entries, p)
	appended := false
	if !ok {
		key := make([]byte, KeySize)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("random key: %w", err)
		}
		if err := r.store.Append(ctx, Entry{Period: p, Key: key, Writer: r.cfg.Writer}); err != nil {
			return nil, fmt.Errorf("append: %w", err)
		}
		appended = true
		if entries, err = r.store.Load(ctx); err != nil {
			return nil, fmt.Errorf("reload after append: %w", err)
		}
		if w, n, ok = winner(entries, p); !ok {
			return nil, errors.New("appended key not found on reload")
		}
	}
	r.log.Info("ip hash key ready",
		"period", p,
		"period_start", r.periodStart(p).UTC(),
		"offset", w.Offset,
		"writer", w.Writer,
		"appended", appended,
		"candidates", n)
	return NewHasher(r.cfg.Alg, w.Key), nil
}

// sleep waits for d or until ctx is done, reporting whether the full d
// elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
