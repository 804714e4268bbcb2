package schema

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for zero [ResolverConfig] fields.
const (
	DefaultNegativeTTL  = 30 * time.Second
	DefaultFetchTimeout = 5 * time.Second
	DefaultMaxNegative  = 10000
)

// ResolverConfig holds the tunables of a [Resolver]. Zero (or negative)
// values select the documented defaults.
type ResolverConfig struct {
	// NegativeTTL is how long an unknown or invalid schema version is
	// remembered, during which it is not fetched again. Default 30s.
	NegativeTTL time.Duration
	// FetchTimeout bounds each Source.Fetch (a context timeout under the
	// caller's ctx). Default 5s.
	FetchTimeout time.Duration
	// MaxNegative bounds the number of remembered unknown or invalid
	// versions, so a client sending random revisions cannot grow memory
	// without limit. Past it, expired entries and then arbitrary ones are
	// dropped. Default 10000.
	MaxNegative int
	// Now is the clock for negative-cache expiry, for tests. Default
	// time.Now.
	Now func() time.Time
	// Metrics counts hits and misses; nil counts nothing.
	Metrics *Metrics
	// Compiler compiles the fetched documents within its limits; default
	// NewCompiler(Limits{}). A compile refused for want of a slot
	// (ErrBusy) is transient: not remembered.
	Compiler *Compiler
}

// Resolver resolves schema ids to compiled schemas, fetching documents from
// a [Source]. Compiled schemas are cached for the Resolver's lifetime
// (schema versions are immutable); unknown and invalid versions are cached
// for NegativeTTL. Concurrent Resolve calls for the same id share one fetch
// and compile. A Resolver is safe for concurrent use and starts no
// goroutines.
type Resolver struct {
	src          Source
	negativeTTL  time.Duration
	fetchTimeout time.Duration
	maxNegative  int
	now          func() time.Time
	metrics      *Metrics
	compiler     *Compiler

	// schemas is replaced, never modified, so hits need no lock.
	schemas atomic.Pointer[map[ID]*Schema]

	negMu    sync.RWMutex
	negative map[ID]negativeEntry

	mu       sync.Mutex // guards inflight and replacing schemas
	inflight map[ID]*call

	uriOnce sync.Once
	uris    *uriCache // schemas resolved by $schema URI (uri.go)
}

type negativeEntry struct {
	err   error
	until time.Time
}

// call is one fetch-and-compile in progress; done closes when s and err
// are set.
type call struct {
	done chan struct{}
	s    *Schema
	err  error
	// retry tells waiters the leader gave up because its own ctx ended,
	// so they should try themselves.
	retry bool
}

// NewResolver returns a Resolver reading schema documents from src.
func NewResolver(src Source, cfg ResolverConfig) *Resolver {
	r := &Resolver{
		src:          src,
		negativeTTL:  cfg.NegativeTTL,
		fetchTimeout: cfg.FetchTimeout,
		maxNegative:  cfg.MaxNegative,
		now:          cfg.Now,
		metrics:      cfg.Metrics,
		compiler:     cfg.Compiler,
		negative:     map[ID]negativeEntry{},
		inflight:     map[ID]*call{},
	}
	if r.negativeTTL <= 0 {
		r.negativeTTL = DefaultNegativeTTL
	}
	if r.fetchTimeout <= 0 {
		r.fetchTimeout = DefaultFetchTimeout
	}
	if r.maxNegative <= 0 {
		r.maxNegative = DefaultMaxNegative
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.compiler == nil {
		r.compiler = NewCompiler(Limits{})
	}
	empty := map[ID]*Schema{}
	r.schemas.Store(&empty)
	return r
}

// Resolve returns the compiled schema of id.
//
// Errors: an id that does not exist (or fails [ID.Validate]) wraps
// [ErrNotFound]; a document that cannot be decoded or compiled wraps
// [ErrInvalidSchema]. Both are remembered for NegativeTTL and returned
// again without asking the Source. Any other error (a timeout, an I/O
// failure, ctx ending) is transient and not cached. ctx bounds the wait;
// the fetch is further bounded by FetchTimeout.
//
// A cache hit takes no lock and does not allocate.
func (r *Resolver) Resolve(ctx context.Context, id ID) (*Schema, error) {
	if s, ok := (*r.schemas.Load())[id]; ok {
		r.metrics.inc(hitOf)
		return s, nil
	}
	if err := id.Validate(); err != nil {
		return nil, fmt.Errorf("schema: resolve %s: %w: %w", id, ErrNotFound, err)
	}
	fresh := skipNegative(ctx)
	for {
		if err := r.negativeHit(id, fresh); err != nil {
			r.metrics.inc(negativeOf)
			return nil, err
		}
		r.mu.Lock()
		if s, ok := (*r.schemas.Load())[id]; ok {
			r.mu.Unlock()
			return s, nil
		}
		if err := r.negativeHit(id, fresh); err != nil {
			r.mu.Unlock()
			return nil, err
		}
		if c, ok := r.inflight[id]; ok {
			r.mu.Unlock()
			select {
			case <-c.done:
			case <-ctx.Done():
				return nil, fmt.Errorf("schema: resolve %s: %w", id, ctx.Err())
			}
			if c.retry && ctx.Err() == nil {
				continue
			}
			return c.s, c.err
		}
		c := &call{done: make(chan struct{})}
		r.inflight[id] = c
		r.mu.Unlock()
		r.metrics.inc(missOf)
		r.lead(ctx, id, c)
		return c.s, c.err
	}
}

// lead fetches and compiles id for c and everyone waiting on it, and
// caches the result.
func (r *Resolver) lead(ctx context.Context, id ID, c *call) {
	defer func() {
		r.mu.Lock()
		if c.s != nil {
			next := maps.Clone(*r.schemas.Load())
			next[id] = c.s
			r.schemas.Store(&next)
		}
		delete(r.inflight, id)
		r.mu.Unlock()
		close(c.done)
	}()
	c.s, c.err = r.load(ctx, id)
	switch {
	case c.err == nil:
		// Found at last (a fresh resolution): the failure is forgotten.
		r.negMu.Lock()
		delete(r.negative, id)
		r.negMu.Unlock()
	case errors.Is(c.err, ErrNotFound) || errors.Is(c.err, ErrInvalidSchema):
		r.storeNegative(id, c.err)
	default:
		c.retry = ctx.Err() != nil
	}
}

func (r *Resolver) load(ctx context.Context, id ID) (*Schema, error) {
	if r.src == nil {
		return nil, fmt.Errorf("schema: resolve %s: resolver has no source", id)
	}
	fctx, cancel := context.WithTimeout(ctx, r.fetchTimeout)
	raw, err := r.src.Fetch(fctx, id)
	timedOut := errors.Is(fctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	cancel()
	if err != nil {
		if timedOut && !errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("schema: resolve %s: fetch timed out after %s: %w", id, r.fetchTimeout, err)
		}
		return nil, fmt.Errorf("schema: resolve %s: %w", id, err)
	}
	s, err := r.compile(ctx, id, raw)
	if err != nil {
		return nil, fmt.Errorf("schema: resolve %s: %w", id, err)
	}
	return s, nil
}

// compile parses and compiles a fetched document within the compiler's
// limits.
func (r *Resolver) compile(ctx context.Context, id ID, raw []byte) (*Schema, error) {
	if err := r.compiler.CheckSize(len(raw)); err != nil {
		return nil, err
	}
	doc, err := ParseDocument(raw)
	if err != nil {
		return nil, err
	}
	return r.compiler.Compile(ctx, id, doc)
}

// negativeHit returns the remembered error of id, unless fresh (the
// caller skips the negative cache) or it has expired.
func (r *Resolver) negativeHit(id ID, fresh bool) error {
	if fresh {
		return nil
	}
	r.negMu.RLock()
	e, ok := r.negative[id]
	r.negMu.RUnlock()
	if ok && r.now().Before(e.until) {
		return e.err
	}
	return nil
}

func (r *Resolver) storeNegative(id ID, err error) {
	now := r.now()
	r.negMu.Lock()
	defer r.negMu.Unlock()
	if _, ok := r.negative[id]; !ok && len(r.negative) >= r.maxNegative {
		for k, e := range r.negative {
			if !now.Before(e.until) {
				delete(r.negative, k)
			}
		}
		// Still full of live entries: drop some (map order is arbitrary)
		// so the next inserts do not sweep again at once.
		for k := range r.negative {
			if len(r.negative) < r.maxNegative-r.maxNegative/10 {
				break
			}
			delete(r.negative, k)
		}
	}
	r.negative[id] = negativeEntry{err: err, until: now.Add(r.negativeTTL)}
}
