package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eventlogging/eventlogging/internal/kafka/schemalog"
	"github.com/eventlogging/eventlogging/internal/schema"
)

// Log is the registry's storage: an ordered log of keyed records that
// every instance replays (kafka.SchemaLog implements it on a compacted,
// single-partition topic).
type Log interface {
	// Run replays the log from its start, then follows it until ctx is
	// done. apply is called from one goroutine, in offset order; a record
	// with a nil Value is a tombstone.
	Run(ctx context.Context, apply func(schemalog.Record)) error
	// WaitReady returns once the initial replay is done (every record
	// written before Run started has been applied), or with ctx's error.
	WaitReady(ctx context.Context) error
	// Append writes a record and returns its offset after apply ran for it
	// locally. Only the leader may append; on any other instance it
	// returns an error wrapping schemalog.ErrNotLeader. A nil value writes a
	// tombstone.
	Append(ctx context.Context, key, value []byte) (int64, error)
	// Leader reports whether this instance is the leader, and otherwise the
	// base URL of the leader's registry API ("" when unknown).
	Leader() (self bool, leaderURL string)
}

// CheckFunc decides whether candidate is compatible with the existing
// schemas of a subject at a compatibility level (NONE, BACKWARD, …).
// existing holds the schema texts to check against, oldest first: only the
// latest version for the non-transitive levels, every live version for the
// transitive ones (and the one version named by a compatibility request).
// All schemas have type schemaType ("JSON" or "AVRO"), and texts are as
// registered (JSON Schema documents are not normalised). It returns one
// message per incompatibility (none: compatible); an error means the check
// could not be made and is reported to the client as an invalid schema.
type CheckFunc func(schemaType, level, candidate string, existing []string) (messages []string, err error)

// Defaults for zero [Config] fields.
const (
	DefaultLevel        = "BACKWARD"
	DefaultMaxBodyBytes = 8 << 20
	DefaultTimeout      = 10 * time.Second
)

// Config holds the registry's dependencies and tunables. Log and Check are
// required; zero values of the others select the documented defaults.
type Config struct {
	// Log stores the registry's records. Required.
	Log Log
	// Check decides compatibility on registration and for
	// /compatibility requests. Required (the wiring plugs in
	// internal/registry/compat).
	Check CheckFunc
	// DefaultLevel is the compatibility level until PUT /config sets one;
	// default BACKWARD.
	DefaultLevel string
	// Authorize decides whether a mutating request (registering,
	// deleting, PUT /config, PUT /mode) is admitted: nil admits it; an
	// error refuses it with 403, error_code 40301 and the error's text as
	// the message, which should say how to get access — or with 421,
	// error_code 42101 when the error has an HTTPStatus() int method that
	// says 421 (a Host the registry does not answer). Reads, lookups and
	// compatibility checks are not asked. nil: every write is admitted.
	// Writes with a body are refused with 415 unless their Content-Type is
	// one of the API's JSON media types (or application/octet-stream),
	// whatever Authorize says.
	Authorize func(*http.Request) error
	// WriteToken, when set, is sent as "Authorization: Bearer <token>" on
	// the writes this instance forwards to the leader (after Authorize
	// admitted them here), so that the leader admits them whatever this
	// instance's address. It is never logged.
	WriteToken string
	// MaxBodyBytes answers 413 for larger request bodies; default 8 MiB.
	// The log must accept records this large (a schema record holds the
	// schema text), e.g. the topic's max.message.bytes.
	MaxBodyBytes int64
	// Timeout bounds waiting for the initial replay, each append and each
	// request forwarded to the leader; default 10s.
	Timeout time.Duration
	// Logger; default slog.Default().
	Logger *slog.Logger
	// HTTPClient forwards writes to the leader; default a client with
	// Timeout as its timeout.
	HTTPClient *http.Client
	// Compiler parses and compiles the schemas of requests (register,
	// lookup, compatibility) within its limits and a few at a time:
	// over a limit is 422 (error_code 42201, the message naming the
	// limit's config key), no free slot within its wait 503 (50301).
	// Default schema.NewCompiler with the default limits.
	Compiler *schema.Compiler
}

// Registry is the schema registry service: the replayed state, the write
// path (leader only) and the HTTP API. It is safe for concurrent use.
type Registry struct {
	cfg   Config
	log   *slog.Logger
	st    *state
	ready atomic.Bool
	// writeMu serialises writes on this instance, so a check of the state
	// and the append it decides on are not interleaved with another write.
	writeMu sync.Mutex
}

// New checks cfg and returns a Registry. It starts nothing: call Run.
func New(cfg Config) (*Registry, error) {
	if cfg.Log == nil {
		return nil, errors.New("registry: nil Log")
	}
	if cfg.Check == nil {
		return nil, errors.New("registry: nil Check")
	}
	if cfg.DefaultLevel == "" {
		cfg.DefaultLevel = DefaultLevel
	}
	level, ok := parseLevel(cfg.DefaultLevel)
	if !ok {
		return nil, fmt.Errorf("registry: default compatibility level %q: want one of %s", cfg.DefaultLevel, strings.Join(levels, ", "))
	}
	cfg.DefaultLevel = level
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: cfg.Timeout}
	}
	if cfg.Compiler == nil {
		cfg.Compiler = schema.NewCompiler(schema.Limits{})
	}
	return &Registry{
		cfg: cfg,
		log: cfg.Logger.With("component", "registry"),
		st:  newState(),
	}, nil
}

// Run replays the log into the registry's state and follows it until ctx
// is done (cfg.Log.Run with the state's apply function). The API answers
// 50002 (timeout) until the initial replay is done.
func (r *Registry) Run(ctx context.Context) error {
	return r.cfg.Log.Run(ctx, r.apply)
}

// apply is the state machine's transition function: it is deterministic,
// so every instance replaying the same records reaches the same state.
func (r *Registry) apply(rec schemalog.Record) {
	if err := r.st.apply(rec); err != nil {
		// A record this version cannot read is skipped on every instance
		// alike; say so, since its schema will be missing.
		r.log.Warn("skipping log record", "offset", rec.Offset, "key", string(rec.Key), "err", err)
	}
}

// waitReady returns once the initial replay is done, bounded by
// cfg.Timeout.
func (r *Registry) waitReady(ctx context.Context) error {
	if r.ready.Load() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	if err := r.cfg.Log.WaitReady(ctx); err != nil {
		return apiErrorf(codeTimeout, "Schema registry is not ready: replaying the schema log: %v", err)
	}
	r.ready.Store(true)
	return nil
}

// append writes one record, mapping failures to API errors. Errors
// wrapping schemalog.ErrNotLeader pass through, so the request is forwarded.
func (r *Registry) append(ctx context.Context, key string, value []byte) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	_, err := r.cfg.Log.Append(ctx, []byte(key), value)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, schemalog.ErrNotLeader):
		return err
	case errors.Is(err, context.DeadlineExceeded):
		return apiErrorf(codeTimeout, "Write to the schema log timed out: %v", err)
	default:
		return apiErrorf(codeStore, "Error while writing to the schema log: %v", err)
	}
}
