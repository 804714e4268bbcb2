package process

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/iphash"
	"github.com/eventlogging/eventlogging/internal/lineformat"
	"github.com/eventlogging/eventlogging/internal/schema"
)

// newPlatformPair: the peer matrix's schema (testdata/peer-matrix, no
// http) and the examples' Event Platform schemas (with http), with
// streams that take them, one whose title check fails, one whose records
// are Avro, and a regex stream.
func newPlatformPair(tb testing.TB) fastPathPair {
	tb.Helper()
	mk := func(noFast bool) *Processor {
		streams, err := NewStreams([]Stream{
			{Name: "test.event", SchemaTitle: "test/event"},
			{Name: "test.other_title", SchemaTitle: "analytics/edit_funnel"},
			{Name: "test.avro", Format: "avro"},
			{Name: "analytics.edit_funnel", SchemaTitle: "analytics/edit_funnel", Topic: "eventlogging_analytics.edit_funnel"},
			{Name: `/^analytics\.test\.[a-z_]+$/`},
		})
		if err != nil {
			tb.Fatal(err)
		}
		src := schemaDirs{schema.NewDirSource("../../testdata/peer-matrix/schemas"), schema.NewDirSource("../../examples/schemas")}
		p, err := New(schema.NewResolver(src, schema.ResolverConfig{}), iphash.NewHasher(iphash.SHA256, []byte("k")), Config{
			Streams:     streams,
			IPPolicy:    IPHash,
			ProcessorID: "platform",
			Now:         func() time.Time { return fixedNow },
		})
		if err != nil {
			tb.Fatal(err)
		}
		p.noFastPath = noFast
		return p
	}
	return fastPathPair{fast: mk(false), general: mk(true), f: mustFormat(tb, workloadFormat), metas: platformMetas}
}

// schemaDirs looks a schema up in each source in turn.
type schemaDirs []schema.Source

func (d schemaDirs) Fetch(ctx context.Context, id schema.ID) ([]byte, error) {
	for _, s := range d {
		if b, err := s.Fetch(ctx, id); err == nil {
			return b, nil
		}
	}
	return nil, schema.ErrNotFound
}

func (d schemaDirs) FetchURI(ctx context.Context, uri string) ([]byte, error) {
	for _, s := range d {
		if b, err := s.(schema.URISource).FetchURI(ctx, uri); err == nil {
			return b, nil
		}
	}
	return nil, schema.ErrNotFound
}

// platformMetas: with and without a client IP and user agent.
var platformMetas = []Meta{
	{RecvFrom: "intake1", SeqID: 42, Received: time.Unix(1764496800, 0), ClientIP: "198.51.100.7", UserAgent: `Mozilla/5.0 "quoted" é`},
	{RecvFrom: "intake1", SeqID: 43, Received: time.Unix(1764496801, 0)},
}

// matrixEvent is the peer matrix's valid test event.
func matrixEvent(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile("../../testdata/peer-matrix/" + name)
	if err != nil {
		tb.Fatal(err)
	}
	return bytes.TrimSpace(b)
}

// platformEdgeCases are Event Platform events at the fast path's edges.
// META is replaced by the matrix event's meta members, EF by an
// edit_funnel event's members after meta.
var platformEdgeCases = []string{
	`{"$schema":"/test/event/1.0.0","meta":{META},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}}`,
	`{"meta":{META},"$schema":"/test/event/1.0.0","dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}}`,
	`{"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"},"meta":{META},"$schema":"/test/event/1.0.0"}`,
	`{"$schema":"/test/event/1.0.0","meta":{"stream":"test.event"},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}}`,
	`{"$schema":"/test/event/1.0.0","meta":{"stream":"test.event","id":""},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}}`,
	`{"$schema":"/test/event/1.0.0","meta":{"dt":7,"stream":"test.event","id":""},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}}`,
	`{"$schema":"/test/event/1.0.0","meta":{"dt":tru,"stream":"test.event"},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}}`,
	`{"$schema":"/test/event/1.0.0","meta":{"stream":"test.event","id":"5f0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b","id":"5f0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5c"},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}}`,
	`{"$schema":"/test/event/1.0.0","meta":{"stream":"test.event","id":"5f0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5\u0062"},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}}`,
	`{"$schema":"/test/event/1.0.0","meta":{"stream":"test.event","id":7},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}}`,
	`{"$schema":"/test/event/1.0.0","meta":{"stream":"test.event","id":"` + strings.Repeat("a", 65) + `"},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}}`,
	`{"$schema":"/test/event/1.0.0","meta":{"stream":"test.event","id":"` + strings.Repeat("a", 64) + `"},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}}`,
	`{"$schema":"/test/event/1.0.0","meta":{"stream":"test.event","stream":"test.event"},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}}`,
	`{"$schema":"/test/event/1.0.0","meta":{META},"meta":{META},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}}`,
	`{"$schema":"/test/event/1.0.0","$schema":"/test/event/1.0.0","meta":{META},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}}`,
	`{"$schema":"/test/event/1.0.0","meta":{META},"dt":"2026-11-30T12:00:00.000Z","action":"click","action":"view","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}}`,
	`{"$schema":"/test/event/1.0.0","meta":{META},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T","id":1}}`,
	`{"$schema":"/test/event/1.0.0", "meta":{META},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}}`,
	`{"$schema":"/test/event/1.0.0","meta":{META},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}} `,
	`{"$schema":"/test/event/1.0.0","meta":{META},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}}{}`,
	`{"$schema":"/test/event/1.0.0","meta":{META},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}`,
	`{"$schema":"/test/event/1.0.0","meta":{META},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1.0,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}}`,
	`{"$schema":"/test/event/1.0.0","meta":{META},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":-1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}}`,
	`{"$schema":"/test/event/1.0.0","meta":{META},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"H\u00e9ctor \"q\" \\ \/ \ud83d\ude00 \ud800 ` + "\u2028" + `"}}`,
	`{"$schema":"/test/event/1.0.0","meta":{META},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"` + "\xff" + `"}}`,
	`{"$schema":"/test/event/1.0.0","meta":{META},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"},"x":{"meta":{"stream":"test.avro"},"$schema":"/x/1.0.0"}}`,
	`{"$schema":"/test/event/1.0.0","meta":{"stream":"test.ev\u0065nt"},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}}`,
	`{"$schema":"\/test\/event\/1.0.0","meta":{META},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}}`,
	`{"$schema":"/test/event/2.0.0","meta":{META},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}}`,
	`{"$schema":7,"meta":{META},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}}`,
	`{"$schema":"/test/event/1.0.0","meta":{"stream":"test.nowhere"},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}}`,
	`{"$schema":"/test/event/1.0.0","meta":{"stream":"test.other_title"},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}}`,
	`{"$schema":"/test/event/1.0.0","meta":{"stream":"test.avro"},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}}`,
	`{"$schema":"/test/event/1.0.0","meta":{},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}}`,
	`{"$schema":"/test/event/1.0.0","meta":[],"dt":"2026-11-30T12:00:00.000Z"}`,
	`{"$schema":"/test/event/1.0.0"}`,
	`{"$schema":"/test/event/1.0.0","meta":{"stream":"test.event","domain":"x","dt":"2026-11-30T12:00:00.000Z","extra":{"a":[1,2,{"b":null}]}},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}}`,
	`{"$schema":"/analytics/edit_funnel/1.0.0","meta":{"stream":"analytics.edit_funnel"EF}`,
	`{"$schema":"/analytics/edit_funnel/1.0.0","meta":{"stream":"analytics.edit_funnel","id":"x"},"http":{"client_ip":"6.6.6.6"}EF}`,
	`{"$schema":"/analytics/edit_funnel/1.0.0","meta":{"stream":"analytics.test.one"EF}`,
	`{"$schema":"/analytics/edit_funnel/1.1.0","meta":{"stream":"analytics.edit_funnel"EF}`,
	`{"$schema":"/test/event/1.0.0","meta":{"stream":"analytics.edit_funnel"},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}}`,
	`{"event":{"action":"init"},"revision":13317883,"schema":"Analytics","$schema":"/test/event/1.0.0"}`,
	`{"$schema":"/test/event/1.0.0","meta":{"stream":"test.event"}`,
	`{"$schema":"/test/event/1.0.0","meta":{"stream":"test.event"},}`,
	`[{"$schema":"/test/event/1.0.0","meta":{"stream":"test.event"}}]`,
	// After $schema and meta the fast path reads nothing before
	// ValidJSON reads the spliced copy: malformed or duplicate members
	// there.
	`{"$schema":"/test/event/1.0.0","meta":{META},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"}}}`,
	`{"$schema":"/test/event/1.0.0","meta":{META},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"},}`,
	`{"$schema":"/test/event/1.0.0","meta":{META},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"},"x":"}`,
	`{"$schema":"/test/event/1.0.0","meta":{META},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"},"x":[1}`,
	`{"$schema":"/test/event/1.0.0","meta":{META},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T","x":{}`,
	`{"$schema":"/test/event/1.0.0","meta":{META},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"},"http":{"client_ip":"6.6.6.6"}}`,
	`{"$schema":"/test/event/1.0.0","meta":{META},"dt":"2026-11-30T12:00:00.000Z","action":"click","user_id":1,"session_id":"0123456789abcdef0123","page":{"id":42,"namespace":0,"title":"T"},"$schema":"/test/event/1.0.0"}`,
	`{"$schema":"/analytics/edit_funnel/1.0.0","meta":{"stream":"analytics.edit_funnel"EF,"http":{"client_ip":"6.6.6.6"}}`,
	`{"$schema":"/analytics/edit_funnel/1.0.0","meta":{"stream":"analytics.edit_funnel"EF,"x":"}`,
	`{"$schema":"/analytics/edit_funnel/1.0.0","meta":{"stream":"analytics.edit_funnel"EF,"x":{"y":1}`,
}

func platformCases(tb testing.TB) [][]byte {
	valid := matrixEvent(tb, "event-valid.json")
	out := [][]byte{valid, matrixEvent(tb, "event-invalid.json")}
	for _, c := range platformEdgeCases {
		c = strings.ReplaceAll(c, "META", `"stream":"test.event","id":"5f0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b","dt":"2026-11-30T12:00:00.000Z","domain":"peer.example.org"`)
		c = strings.ReplaceAll(c, "EF", `},"dt":"2025-11-30T09:59:59Z","action":"init","editor":"wikitext","session_token":"abcdefghijkl"`)
		out = append(out, []byte(c))
	}
	return out
}

// TestPlatformFastPathAgrees: the matrix's events and the edge cases give
// the same verdicts and outputs with and without the fast path.
func TestPlatformFastPathAgrees(t *testing.T) {
	pp := newPlatformPair(t)
	for _, c := range platformCases(t) {
		pp.check(t, c)
	}
}

// TestPlatformFastPathTaken: the events the fast path is for take it,
// with meta.id and meta.dt (and http, when the schema has it) as the
// general path sets them.
func TestPlatformFastPathTaken(t *testing.T) {
	pp := newPlatformPair(t)
	cases := platformCases(t) // the matrix's two events, then platformEdgeCases
	for _, c := range []struct {
		event []byte
		fast  bool
	}{
		{cases[0], true},   // the matrix's valid event
		{cases[1], false},  // its invalid twin
		{cases[2], true},   // meta first
		{cases[4], true},   // $schema last
		{cases[5], true},   // no meta.id
		{cases[6], true},   // empty meta.id
		{cases[7], true},   // meta.dt a number: replaced
		{cases[19], false}, // whitespace
		{cases[25], false}, // escapes in a string a keyword reads: ValidJSON is unsure
		{cases[27], false}, // an undeclared object: ValidJSON is unsure
		{cases[38], true},  // more members in meta
		{cases[39], true},  // edit_funnel: http added
		{cases[40], false}, // the client's own http
		{cases[34], false}, // Avro stream
	} {
		s := new(scratch)
		s.fields.Capsule = c.event
		s.fields.Timestamp, s.fields.HasTimestamp = 1764496800, true
		s.fields.ClientIP, s.fields.HasClientIP = "198.51.100.7", true
		s.fields.Named = append(s.fields.Named, lineformat.Field{Name: "recvFrom", Str: "intake1"}, lineformat.Field{Name: "seqId", Int: 42, IsInt: true}, lineformat.Field{Name: "userAgent", Str: "UA"})
		c2 := &capsule.Capsule{Revision: -1}
		r, ok := pp.fast.buildPlatformFast(context.Background(), c2, s)
		if ok != c.fast {
			t.Errorf("fast path taken = %v, want %v: %s", ok, c.fast, c.event)
			continue
		}
		if !ok {
			continue
		}
		got := decodeValue(t, r.value)
		meta := got["meta"].(map[string]any)
		if meta["dt"] != "2025-11-30T10:00:00Z" || meta["id"] != c2.UUID || c2.UUID == "" {
			t.Errorf("meta %v, uuid %s: %s", meta, c2.UUID, r.value)
		}
		if h, ok := got["http"].(map[string]any); ok {
			if len(h["client_ip"].(string)) != 64 || h["request_headers"].(map[string]any)["user-agent"] != "UA" {
				t.Errorf("http %v", h)
			}
		}
	}
}

// FuzzPlatformFastPathAgrees: for any event, the Event Platform fast path
// and the general path (the decoder and the jsonschema library) give the
// same verdict and, for valid events, the same event modulo key order.
// Seeds: the matrix's events and the edge cases above.
func FuzzPlatformFastPathAgrees(f *testing.F) {
	for _, c := range platformCases(f) {
		f.Add(c)
	}
	pp := newPlatformPair(f)
	f.Fuzz(func(t *testing.T, event []byte) {
		pp.check(t, event)
	})
}

// BenchmarkProcessPlatform is ProcessEvent on the peer matrix's valid
// event (408 bytes), as the intake processes each event of a POST.
func BenchmarkProcessPlatform(b *testing.B) {
	ev := matrixEvent(b, "event-valid.json")
	for _, path := range []string{"fast", "general"} {
		b.Run(path, func(b *testing.B) {
			pp := newPlatformPair(b)
			p := pp.fast
			if path == "general" {
				p = pp.general
			}
			ctx := context.Background()
			m := platformMetas[0]
			var outs []Output
			b.SetBytes(int64(len(ev)))
			b.ReportAllocs()
			for b.Loop() {
				var res Result
				outs, res = p.ProcessEvent(ctx, ev, m, outs[:0])
				if !res.Valid() {
					b.Fatal(res.Message)
				}
			}
		})
	}
}

// TestIPMemo: events processed with one memo (as the intake processes a
// request's events) get the outputs they get without it, the memo
// following a change of IP.
func TestIPMemo(t *testing.T) {
	pp := newPlatformPair(t)
	ctx := context.Background()
	ev := platformCases(t)[39] // edit_funnel: its schema declares http, so the event holds the hash
	memo := new(IPMemo)
	for i, ip := range []string{"198.51.100.7", "198.51.100.7", "203.0.113.9", "198.51.100.7"} {
		m := Meta{RecvFrom: "intake1", SeqID: int64(i), Received: fixedNow, ClientIP: ip, UserAgent: "UA"}
		for _, p := range []*Processor{pp.fast, pp.general} {
			want, _ := p.ProcessEvent(ctx, ev, m, nil)
			m.IPMemo = memo
			got, _ := p.ProcessEvent(ctx, ev, m, nil)
			m.IPMemo = nil
			if len(got) != 1 || !bytes.Equal(got[0].Value, want[0].Value) || !bytes.Contains(got[0].Value, []byte(p.hasher.Hash(ip))) {
				t.Fatalf("event %d (%s) with the memo:\n%s\nwithout:\n%s", i, ip, got[0].Value, want[0].Value)
			}
		}
		if want := pp.fast.hasher.Hash(ip); memo.ip != ip || memo.hash != want {
			t.Fatalf("memo %+v after %s", memo, ip)
		}
	}
}

// failingSource counts fetches and fails each, as a registry that times
// out does (an error that is not "not found", so it is not cached).
type failingSource struct{ fetches atomic.Int64 }

func (f *failingSource) Fetch(context.Context, schema.ID) ([]byte, error) {
	f.fetches.Add(1)
	return nil, errors.New("registry timed out")
}

func (f *failingSource) FetchURI(context.Context, string) ([]byte, error) {
	f.fetches.Add(1)
	return nil, errors.New("registry timed out")
}

// TestPlatformResolvesOnce: when the fast path cannot resolve an event's
// schema, the general path reports it without fetching it again (two
// fetches would double the wait on a registry that times out).
func TestPlatformResolvesOnce(t *testing.T) {
	src := &failingSource{}
	streams, err := NewStreams([]Stream{{Name: "test.event"}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(schema.NewResolver(src, schema.ResolverConfig{}), nil, Config{Streams: streams, IPPolicy: IPDrop, ProcessorID: "p", Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	_, res := p.ProcessEvent(context.Background(), matrixEvent(t, "event-valid.json"), platformMetas[0], nil)
	if res.Valid() || !strings.Contains(res.Message, "registry timed out") {
		t.Fatalf("result %+v, want the resolver's error", res)
	}
	if n := src.fetches.Load(); n != 1 {
		t.Errorf("%d fetches of the schema for one event, want 1", n)
	}
}

// TestArena: events processed with an arena (as the intake processes a
// request's events) get the outputs they get without it, their values in
// the arena one after another, each capped so that an append to one
// cannot write over the next; an arena too small grows without moving
// the values already in it.
func TestArena(t *testing.T) {
	pp := newPlatformPair(t)
	ctx := context.Background()
	cases := platformCases(t)
	for _, size := range []int{0, 64 << 10} {
		arena := make([]byte, 0, size)
		var got, want []Output
		for i, ev := range cases {
			m := Meta{RecvFrom: "intake1", SeqID: int64(i), Received: fixedNow, ClientIP: "198.51.100.7", UserAgent: "UA"}
			want, _ = pp.fast.ProcessEvent(ctx, ev, m, want)
			m.Arena = &arena
			got, _ = pp.fast.ProcessEvent(ctx, ev, m, got)
		}
		if len(got) != len(want) {
			t.Fatalf("arena of %d bytes: %d outputs, want %d", size, len(got), len(want))
		}
		inArena := 0
		for i := range got {
			if got[i].Topic != want[i].Topic || !bytes.Equal(got[i].Value, want[i].Value) {
				t.Fatalf("arena of %d bytes, output %d:\n%s\nwithout:\n%s", size, i, got[i].Value, want[i].Value)
			}
			if within(got[i].Value, arena) {
				inArena++
			}
			_ = append(got[i].Value, "XXXX"...) // must not reach the next value
		}
		for i := range got {
			if !bytes.Equal(got[i].Value, want[i].Value) {
				t.Fatalf("arena of %d bytes: output %d changed by an append to the one before", size, i)
			}
		}
		if size > 0 && inArena < 2 {
			t.Fatalf("arena of %d bytes: %d values in it, want every fast path's", size, inArena)
		}
		// The scratch goes back to the pool without the arena: a raw
		// line processed next with it writes elsewhere.
		kept := bytes.Clone(arena)
		line := append([]byte("?"), encodeURIComponent(cases[0])...)
		line = append(line, ";\tcp1052.eqiad.wmnet\t220927819\t2019-10-21T14:00:00\t198.51.100.130\t\"UA\""...)
		for range 4 {
			if out := pp.fast.Process(ctx, pp.f, line, nil, nil); len(out) == 0 || within(out[0].Value, arena) {
				t.Fatalf("arena of %d bytes: a raw line processed afterwards wrote into it", size)
			}
			out, _ := pp.fast.ProcessEvent(ctx, cases[0], Meta{Received: fixedNow}, nil)
			if len(out) == 0 || within(out[0].Value, arena) {
				t.Fatalf("arena of %d bytes: an event processed afterwards without it wrote into it", size)
			}
		}
		if !bytes.Equal(arena, kept) || len(arena) != len(kept) {
			t.Fatalf("arena of %d bytes changed after its request", size)
		}
	}
}

// within reports whether v's bytes lie inside arena's.
func within(v, arena []byte) bool {
	if len(v) == 0 || len(arena) == 0 {
		return false
	}
	a0 := uintptr(unsafe.Pointer(unsafe.SliceData(arena)))
	v0 := uintptr(unsafe.Pointer(unsafe.SliceData(v)))
	return v0 >= a0 && v0+uintptr(len(v)) <= a0+uintptr(len(arena))
}
