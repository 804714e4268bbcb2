// Package avrowire encodes validated events as Avro in the Confluent wire
// format (magic byte 0, 4-byte big-endian schema id, Avro binary) and decodes
// such records back to JSON, with schemas fetched from a Confluent-compatible
// schema registry (ours) and cached.
package avrowire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/sr"
)

// Magic is the first byte of a Confluent wire-format record.
const Magic = 0

// IsWire reports whether b looks like a Confluent wire-format record.
func IsWire(b []byte) bool { return len(b) >= 5 && b[0] == Magic }

// ErrNotAvro is returned for subjects whose latest schema is not Avro.
var ErrNotAvro = errors.New("avrowire: the subject's latest schema is not Avro")

// Codec encodes and decodes records through a registry. Safe for concurrent
// use. Latest-version lookups are cached for TTL; schemas by id forever (ids
// are immutable).
type Codec struct {
	cl  *sr.Client
	ttl time.Duration
	now func() time.Time

	mu     sync.RWMutex
	latest map[string]latestEntry
	byID   map[int]*avro.Schema
}

type latestEntry struct {
	id     int
	schema *avro.Schema
	err    error
	until  time.Time
}

// New returns a Codec for the registry at baseURL (e.g.
// http://localhost:8080/registry). ttl bounds how long a subject's latest
// schema is reused (default 30s).
func New(baseURL string, ttl time.Duration) (*Codec, error) {
	cl, err := sr.NewClient(sr.URLs(baseURL))
	if err != nil {
		return nil, fmt.Errorf("avrowire: registry client: %w", err)
	}
	if ttl <= 0 {
		ttl = 30 * time.Second
	}
	return &Codec{cl: cl, ttl: ttl, now: time.Now, latest: map[string]latestEntry{}, byID: map[int]*avro.Schema{}}, nil
}

// Encode encodes v (a decoded JSON object; json.Number accepted for
// numbers) with the latest Avro schema of subject, in the wire format.
func (c *Codec) Encode(ctx context.Context, subject string, v map[string]any) ([]byte, error) {
	id, s, err := c.latestSchema(ctx, subject)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 5, 128)
	b[0] = Magic
	binary.BigEndian.PutUint32(b[1:5], uint32(id)) //nolint:gosec // registry ids are positive int32
	b, err = s.AppendEncode(b, v)
	if err != nil {
		return nil, fmt.Errorf("avro encode with schema id %d (subject %s): %w", id, subject, err)
	}
	return b, nil
}

// DecodeJSON decodes a wire-format record to JSON (Avro's JSON encoding of
// the value, without union tags).
func (c *Codec) DecodeJSON(ctx context.Context, b []byte) ([]byte, error) {
	if !IsWire(b) {
		return nil, errors.New("avrowire: not a wire-format record")
	}
	id := int(binary.BigEndian.Uint32(b[1:5]))
	s, err := c.schemaByID(ctx, id)
	if err != nil {
		return nil, err
	}
	var v any
	if _, err := s.Decode(b[5:], &v); err != nil {
		return nil, fmt.Errorf("avro decode with schema id %d: %w", id, err)
	}
	out, err := s.EncodeJSON(v)
	if err != nil {
		return nil, fmt.Errorf("avro to JSON with schema id %d: %w", id, err)
	}
	return out, nil
}

func (c *Codec) latestSchema(ctx context.Context, subject string) (int, *avro.Schema, error) {
	now := c.now()
	c.mu.RLock()
	e, ok := c.latest[subject]
	c.mu.RUnlock()
	if ok && now.Before(e.until) {
		return e.id, e.schema, e.err
	}
	ss, err := c.cl.SchemaByVersion(ctx, subject, -1)
	e = latestEntry{until: now.Add(c.ttl)}
	switch {
	case err != nil:
		e.err = fmt.Errorf("avrowire: latest schema of %s: %w", subject, err)
	case ss.Type != sr.TypeAvro:
		e.err = fmt.Errorf("%w: %s is %s", ErrNotAvro, subject, ss.Type)
	default:
		e.id = ss.ID
		e.schema, e.err = avro.Parse(ss.Schema.Schema)
		if e.err != nil {
			e.err = fmt.Errorf("avrowire: schema %d of %s: %w", ss.ID, subject, e.err)
		}
	}
	if err != nil && ctx.Err() != nil {
		return 0, nil, e.err // the caller gave up: do not cache
	}
	c.mu.Lock()
	c.latest[subject] = e
	c.mu.Unlock()
	return e.id, e.schema, e.err
}

func (c *Codec) schemaByID(ctx context.Context, id int) (*avro.Schema, error) {
	c.mu.RLock()
	s, ok := c.byID[id]
	c.mu.RUnlock()
	if ok {
		return s, nil
	}
	got, err := c.cl.SchemaByID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("avrowire: schema id %d: %w", id, err)
	}
	if got.Type != sr.TypeAvro {
		return nil, fmt.Errorf("avrowire: schema id %d is %s, not Avro", id, got.Type)
	}
	s, err = avro.Parse(got.Schema)
	if err != nil {
		return nil, fmt.Errorf("avrowire: schema id %d: %w", id, err)
	}
	c.mu.Lock()
	c.byID[id] = s
	c.mu.Unlock()
	return s, nil
}
