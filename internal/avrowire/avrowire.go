// Package avrowire encodes validated events as Avro in the Confluent wire
// format (magic byte 0, 4-byte big-endian schema id, Avro binary) and decodes
// such records back to JSON, or to the event object that was encoded (for
// the sinks), with schemas fetched from a Confluent-compatible schema
// registry (ours) and cached. The JSON ↔ Avro mapping is in docs/avro.md.
package avrowire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"net/http"
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

// ErrUndecodable marks a record that can never be decoded: it is not in
// the wire format, the registry has no schema with its id (error code
// 40403), that schema is not Avro or not a record, or the bytes do not
// match it. Any other decoding error (the registry cannot be reached, or
// answers with another error) is transient.
var ErrUndecodable = errors.New("avrowire: undecodable record")

// Codec encodes and decodes records through a registry. Safe for concurrent
// use. Latest-version lookups are cached for TTL; schemas by id forever (ids
// are immutable).
type Codec struct {
	cl  *sr.Client
	ttl time.Duration
	now func() time.Time

	mu     sync.RWMutex
	latest map[string]latestEntry
	byID   map[int]*parsed
}

// parsed is a registered Avro schema.
type parsed struct {
	schema *avro.Schema
	tree   *node
}

type latestEntry struct {
	id    int
	p     *parsed
	err   error
	until time.Time
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
	return &Codec{cl: cl, ttl: ttl, now: time.Now, latest: map[string]latestEntry{}, byID: map[int]*parsed{}}, nil
}

// Encode encodes v (a decoded JSON object; json.Number accepted for
// numbers) with the latest Avro schema of subject, in the wire format.
// Members are matched to the record's fields by name; a missing field
// takes its default; "$schema" fills the _schema field (SchemaField) when
// the schema has one and v has no "_schema"; members the schema has no
// field for are left out (see EncodeEvent). v is not modified.
func (c *Codec) Encode(ctx context.Context, subject string, v map[string]any) ([]byte, error) {
	b, _, err := c.encode(ctx, subject, v, false)
	return b, err
}

// EncodeEvent is Encode that also returns the members of v the encoding
// leaves out because the schema has no field for them, at any depth: JSON
// pointers (/meta/request_id), each once and sorted, with "*" for array
// elements and map values (/items/*/extra). Nil when none are.
func (c *Codec) EncodeEvent(ctx context.Context, subject string, v map[string]any) (b []byte, dropped []string, err error) {
	return c.encode(ctx, subject, v, true)
}

func (c *Codec) encode(ctx context.Context, subject string, v map[string]any, report bool) ([]byte, []string, error) {
	id, p, err := c.latestSchema(ctx, subject)
	if err != nil {
		return nil, nil, err
	}
	if uri, ok := v["$schema"]; ok && p.tree.hasSchemaField() {
		if _, taken := v[SchemaField]; !taken {
			v = maps.Clone(v)
			v[SchemaField] = uri
		}
	}
	b := make([]byte, 5, 128)
	b[0] = Magic
	binary.BigEndian.PutUint32(b[1:5], uint32(id)) //nolint:gosec // registry ids are positive int32
	b, err = p.schema.AppendEncode(b, v)
	if err != nil {
		return nil, nil, fmt.Errorf("avro encode with schema id %d (subject %s): %w", id, subject, err)
	}
	var dropped []string
	if report {
		dropped = p.tree.droppedFields(v)
	}
	return b, dropped, nil
}

// DecodeJSON decodes a wire-format record to JSON (Avro's JSON encoding of
// the value, without union tags).
func (c *Codec) DecodeJSON(ctx context.Context, b []byte) ([]byte, error) {
	if !IsWire(b) {
		return nil, fmt.Errorf("%w: not a wire-format record", ErrUndecodable)
	}
	id := int(binary.BigEndian.Uint32(b[1:5]))
	p, err := c.schemaByID(ctx, id)
	if err != nil {
		return nil, err
	}
	var v any
	if _, err := p.schema.Decode(b[5:], &v); err != nil {
		return nil, fmt.Errorf("%w: avro decode with schema id %d: %w", ErrUndecodable, id, err)
	}
	out, err := p.schema.EncodeJSON(v)
	if err != nil {
		return nil, fmt.Errorf("%w: avro to JSON with schema id %d: %w", ErrUndecodable, id, err)
	}
	return out, nil
}

// DecodeEvent decodes a wire-format record written by Encode back to the
// JSON object that was encoded, as capsule.Decode would have read it
// (map[string]any, []any, string, bool, json.Number): ints and longs are
// integers, floats and doubles numbers in encoding/json's notation, a
// record's null fields are left out (Avro cannot tell them from missing
// members), bytes and fixed are strings, timestamps RFC 3339 text, and the
// root's _schema field is "$schema" again. What Encode dropped is not
// there, and a field the event lacked comes back with its default unless
// that is null. docs/avro.md lists the whole mapping.
//
// The record must be an Event Platform event: a record whose _schema is
// missing (its schema has no such field) or null is ErrUndecodable, as
// the event's $schema is not in it. Errors wrapping ErrUndecodable are
// permanent (the record can never be decoded); any other error is
// transient (the registry could not tell the record's schema).
func (c *Codec) DecodeEvent(ctx context.Context, b []byte) (map[string]any, error) {
	if !IsWire(b) {
		return nil, fmt.Errorf("%w: not the wire format (magic byte 0, 4-byte schema id, Avro binary)", ErrUndecodable)
	}
	id := int(binary.BigEndian.Uint32(b[1:5]))
	p, err := c.schemaByID(ctx, id)
	if err != nil {
		return nil, err
	}
	var v any
	rest, err := p.schema.Decode(b[5:], &v, avro.TaggedUnions())
	if err != nil {
		return nil, fmt.Errorf("%w: avro decode with schema id %d: %w", ErrUndecodable, id, err)
	}
	if len(rest) > 0 {
		return nil, fmt.Errorf("%w: avro decode with schema id %d: %d bytes after the record", ErrUndecodable, id, len(rest))
	}
	ev, err := p.tree.event(v)
	if err != nil {
		return nil, fmt.Errorf("%w: schema id %d: %w", ErrUndecodable, id, err)
	}
	return ev, nil
}

func (c *Codec) latestSchema(ctx context.Context, subject string) (int, *parsed, error) {
	now := c.now()
	c.mu.RLock()
	e, ok := c.latest[subject]
	c.mu.RUnlock()
	if ok && now.Before(e.until) {
		return e.id, e.p, e.err
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
		e.p, e.err = parse(ss.Schema.Schema)
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
	return e.id, e.p, e.err
}

// schemaByID returns the schema with id. An id the registry does not have,
// a schema that is not Avro or does not parse are errors wrapping
// ErrUndecodable; other errors are transient and not cached.
func (c *Codec) schemaByID(ctx context.Context, id int) (*parsed, error) {
	c.mu.RLock()
	p, ok := c.byID[id]
	c.mu.RUnlock()
	if ok {
		return p, nil
	}
	got, err := c.cl.SchemaByID(ctx, id)
	if err != nil {
		var re *sr.ResponseError
		if errors.As(err, &re) && re.StatusCode == http.StatusNotFound && re.ErrorCode == sr.ErrSchemaNotFound.Code {
			return nil, fmt.Errorf("%w: schema id %d: %w", ErrUndecodable, id, err)
		}
		return nil, fmt.Errorf("avrowire: schema id %d: %w", id, err)
	}
	if got.Type != sr.TypeAvro {
		return nil, fmt.Errorf("%w: schema id %d is %s, not Avro", ErrUndecodable, id, got.Type)
	}
	p, err = parse(got.Schema)
	if err != nil {
		return nil, fmt.Errorf("%w: schema id %d: %w", ErrUndecodable, id, err)
	}
	c.mu.Lock()
	c.byID[id] = p
	c.mu.Unlock()
	return p, nil
}

// parse parses an Avro schema and builds its tree.
func parse(text string) (*parsed, error) {
	s, err := avro.Parse(text)
	if err != nil {
		return nil, err
	}
	t, err := buildTree(s)
	if err != nil {
		return nil, err
	}
	return &parsed{schema: s, tree: t}, nil
}
