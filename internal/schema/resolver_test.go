package schema

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// countingSource counts Fetch calls per id and can hold them until gate is
// closed (nil gate: no wait). A held Fetch honours ctx.
type countingSource struct {
	src   Source
	gate  chan struct{}
	mu    sync.Mutex
	calls map[ID]int
}

func newCountingSource(src Source) *countingSource {
	return &countingSource{src: src, calls: map[ID]int{}}
}

// newGatedResolver returns a resolver over the test schemas whose fetches
// wait until the returned source's gate is closed (or their ctx ends).
func newGatedResolver(cfg ResolverConfig) (*countingSource, *Resolver) {
	src := newCountingSource(NewDirSource(schemaDir))
	src.gate = make(chan struct{})
	return src, NewResolver(src, cfg)
}

func (c *countingSource) Fetch(ctx context.Context, id ID) ([]byte, error) {
	c.mu.Lock()
	c.calls[id]++
	c.mu.Unlock()
	if c.gate != nil {
		select {
		case <-c.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return c.src.Fetch(ctx, id)
}

func (c *countingSource) count(id ID) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[id]
}

// fakeClock is a settable ResolverConfig.Now.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

var (
	pageViewID = ID{Name: "PageView", Revision: 3}
	unknownID  = ID{Name: "PageView", Revision: 999}
)

func TestResolveCacheHit(t *testing.T) {
	src := newCountingSource(NewDirSource(schemaDir))
	r := NewResolver(src, ResolverConfig{})
	s1, err := r.Resolve(t.Context(), pageViewID)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := r.Resolve(t.Context(), pageViewID)
	if err != nil {
		t.Fatal(err)
	}
	if s1 != s2 {
		t.Error("second Resolve returned a different *Schema")
	}
	if s1.ID() != pageViewID || s1.Title() != "PageView" {
		t.Errorf("resolved %v %q", s1.ID(), s1.Title())
	}
	if n := src.count(pageViewID); n != 1 {
		t.Errorf("Source asked %d times, want 1", n)
	}
	if allocs := testing.AllocsPerRun(100, func() {
		if _, err := r.Resolve(t.Context(), pageViewID); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Errorf("cache hit allocates %v times", allocs)
	}
	// YAML documents resolve too.
	if _, err := r.Resolve(t.Context(), ID{Name: "NavigationTiming", Revision: 2}); err != nil {
		t.Error(err)
	}
}

func TestResolveNegativeCache(t *testing.T) {
	tests := []struct {
		name    string
		id      ID
		wantErr error
	}{
		{"unknown", unknownID, ErrNotFound},
		{"invalid schema", ID{Name: "Broken", Revision: 1}, ErrInvalidSchema},
		{"external ref", ID{Name: "Remote", Revision: 1}, ErrInvalidSchema},
		{"malformed document", ID{Name: "Malformed", Revision: 1}, ErrInvalidSchema},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := newCountingSource(NewDirSource(schemaDir))
			clock := &fakeClock{now: time.Unix(1700000000, 0)}
			r := NewResolver(src, ResolverConfig{NegativeTTL: time.Minute, Now: clock.Now})
			resolve := func() error {
				t.Helper()
				s, err := r.Resolve(t.Context(), tt.id)
				if s != nil {
					t.Fatalf("Resolve(%v) returned a schema", tt.id)
				}
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Resolve(%v) = %v, want %v", tt.id, err, tt.wantErr)
				}
				return err
			}
			resolve()
			clock.Advance(time.Minute - time.Nanosecond)
			resolve()
			if allocs := testing.AllocsPerRun(100, func() { _, _ = r.Resolve(t.Context(), tt.id) }); allocs != 0 {
				t.Errorf("negative cache hit allocates %v times", allocs)
			}
			if n := src.count(tt.id); n != 1 {
				t.Fatalf("Source asked %d times within NegativeTTL, want 1", n)
			}
			clock.Advance(time.Nanosecond)
			resolve()
			if n := src.count(tt.id); n != 2 {
				t.Fatalf("Source asked %d times after NegativeTTL, want 2", n)
			}
		})
	}
}

func TestResolveInvalidID(t *testing.T) {
	src := newCountingSource(NewDirSource(schemaDir))
	r := NewResolver(src, ResolverConfig{})
	for _, id := range []ID{{"Bad%Name", 1}, {"PageView", 0}, {"", 1}} {
		_, err := r.Resolve(t.Context(), id)
		if !errors.Is(err, ErrNotFound) || !errors.Is(err, ErrInvalidID) {
			t.Errorf("Resolve(%v) = %v, want ErrNotFound and ErrInvalidID", id, err)
		}
		if src.count(id) != 0 {
			t.Errorf("Source asked for invalid id %v", id)
		}
	}
}

func TestResolveFetchTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, r := newGatedResolver(ResolverConfig{FetchTimeout: 2 * time.Second}) // never opened: Fetch waits for ctx
		start := time.Now()
		_, err := r.Resolve(t.Context(), pageViewID)
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrNotFound) {
			t.Fatalf("Resolve = %v, want a deadline error", err)
		}
		if waited := time.Since(start); waited != 2*time.Second {
			t.Errorf("Resolve gave up after %v, want the 2s FetchTimeout", waited)
		}
		// Transient errors are not cached.
		close(src.gate)
		if _, err := r.Resolve(t.Context(), pageViewID); err != nil {
			t.Fatal(err)
		}
		if n := src.count(pageViewID); n != 2 {
			t.Errorf("Source asked %d times, want 2", n)
		}
	})
}

func TestResolveDefaultFetchTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, r := newGatedResolver(ResolverConfig{})
		start := time.Now()
		if _, err := r.Resolve(t.Context(), pageViewID); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Resolve = %v, want a deadline error", err)
		}
		if waited := time.Since(start); waited != DefaultFetchTimeout {
			t.Errorf("waited %v, want %v", waited, DefaultFetchTimeout)
		}
	})
}

func TestResolveConcurrentCompilesOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, r := newGatedResolver(ResolverConfig{})
		const n = 16
		results := make([]*Schema, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				s, err := r.Resolve(t.Context(), pageViewID)
				if err != nil {
					t.Error(err)
				}
				results[i] = s
			})
		}
		synctest.Wait() // everyone is waiting on the one fetch
		if got := src.count(pageViewID); got != 1 {
			t.Fatalf("%d concurrent fetches, want 1", got)
		}
		close(src.gate)
		wg.Wait()
		for i, s := range results {
			if s == nil || s != results[0] {
				t.Fatalf("caller %d got %p, caller 0 got %p", i, s, results[0])
			}
		}
		if got := src.count(pageViewID); got != 1 {
			t.Errorf("%d fetches, want 1", got)
		}
	})
}

// TestResolveLeaderCancelled: when the caller doing the fetch gives up, the
// callers waiting for it fetch themselves instead of sharing its error.
func TestResolveLeaderCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, r := newGatedResolver(ResolverConfig{})
		leaderCtx, cancel := context.WithCancel(t.Context())
		leaderErr := make(chan error, 1)
		go func() {
			_, err := r.Resolve(leaderCtx, pageViewID)
			leaderErr <- err
		}()
		synctest.Wait()
		follower := make(chan *Schema, 1)
		go func() {
			s, err := r.Resolve(t.Context(), pageViewID)
			if err != nil {
				t.Error(err)
			}
			follower <- s
		}()
		synctest.Wait()
		cancel()
		if err := <-leaderErr; !errors.Is(err, context.Canceled) {
			t.Errorf("leader: %v, want context.Canceled", err)
		}
		synctest.Wait()
		if got := src.count(pageViewID); got != 2 {
			t.Errorf("%d fetches, want 2 (the follower retries)", got)
		}
		close(src.gate)
		if s := <-follower; s == nil {
			t.Error("follower got no schema")
		}
	})
}

func TestResolveWaiterContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, r := newGatedResolver(ResolverConfig{})
		go func() { _, _ = r.Resolve(t.Context(), pageViewID) }()
		synctest.Wait()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if _, err := r.Resolve(ctx, pageViewID); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("waiting Resolve = %v, want its own deadline", err)
		}
		close(src.gate)
	})
}

func TestResolveNegativeCacheBounded(t *testing.T) {
	src := newCountingSource(NewDirSource(schemaDir))
	r := NewResolver(src, ResolverConfig{MaxNegative: 10})
	for i := range 100 {
		if _, err := r.Resolve(t.Context(), ID{Name: "Nope", Revision: int64(i + 1)}); !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
		r.negMu.RLock()
		n := len(r.negative)
		r.negMu.RUnlock()
		if n > 10 {
			t.Fatalf("negative cache holds %d entries, max 10", n)
		}
	}
	// The newest entry survived the eviction.
	if _, err := r.Resolve(t.Context(), ID{Name: "Nope", Revision: 100}); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	if n := src.count(ID{Name: "Nope", Revision: 100}); n != 1 {
		t.Errorf("newest negative entry was evicted (%d fetches)", n)
	}
}

func TestResolveTransientError(t *testing.T) {
	var calls atomic.Int32
	src := sourceFunc(func(context.Context, ID) ([]byte, error) {
		calls.Add(1)
		return nil, errors.New("registry unavailable")
	})
	r := NewResolver(src, ResolverConfig{})
	for range 2 {
		_, err := r.Resolve(t.Context(), pageViewID)
		if err == nil || errors.Is(err, ErrNotFound) || errors.Is(err, ErrInvalidSchema) {
			t.Fatalf("Resolve = %v, want a transient error", err)
		}
	}
	if calls.Load() != 2 {
		t.Errorf("transient error was cached: %d calls", calls.Load())
	}
	if _, err := NewResolver(nil, ResolverConfig{}).Resolve(t.Context(), pageViewID); err == nil {
		t.Error("Resolve without a Source succeeded")
	}
}

type sourceFunc func(context.Context, ID) ([]byte, error)

func (f sourceFunc) Fetch(ctx context.Context, id ID) ([]byte, error) { return f(ctx, id) }

// TestResolveRace resolves many ids from many goroutines (run with -race).
func TestResolveRace(t *testing.T) {
	ids, err := NewDirSource(schemaDir).List()
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, unknownID)
	r := NewResolver(NewDirSource(schemaDir), ResolverConfig{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				id := ids[(g+i)%len(ids)]
				s, err := r.Resolve(t.Context(), id)
				if err == nil {
					_ = s.Validate(map[string]any{})
				} else if !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrInvalidSchema) {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
}

func BenchmarkResolveHit(b *testing.B) {
	r := NewResolver(NewDirSource(schemaDir), ResolverConfig{})
	if _, err := r.Resolve(b.Context(), pageViewID); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := r.Resolve(context.Background(), pageViewID); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
