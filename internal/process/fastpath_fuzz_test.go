package process

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/eventlogging/eventlogging/internal/lineformat"
)

// fastPathPair is two processors of the standard workload's configuration,
// one with the fast path and one without.
type fastPathPair struct {
	fast, general *Processor
	f             *lineformat.Format
	metas         []Meta // the HTTP events' metadata; nil: legacyMeta
}

// legacyMeta is an HTTP event's metadata in fastPathPair.check.
var legacyMeta = []Meta{{RecvFrom: "cp1052.eqiad.wmnet", SeqID: 220927819, Received: fixedNow, ClientIP: "198.51.100.130", UserAgent: `Mozilla/5.0 "quoted"`}}

func newFastPathPair(tb testing.TB) fastPathPair {
	tb.Helper()
	general := newWorkloadProcessor(tb)
	general.noFastPath = true
	return fastPathPair{fast: newWorkloadProcessor(tb), general: general, f: mustFormat(tb, workloadFormat)}
}

// check processes the event (capsule JSON, or an Event Platform event)
// with both processors, as an HTTP event (with each of pp.metas) and
// inside a raw line, and fails unless they give the same verdict and the
// same outputs: byte for byte for EventErrors, equal as JSON (modulo key
// order) for capsules and events.
func (pp fastPathPair) check(t *testing.T, event []byte) {
	t.Helper()
	ctx := context.Background()
	metas := pp.metas
	if metas == nil {
		metas = legacyMeta
	}
	for _, m := range metas {
		outF, resF := pp.fast.ProcessEvent(ctx, event, m, nil)
		outG, resG := pp.general.ProcessEvent(ctx, event, m, nil)
		if !reflect.DeepEqual(resF, resG) {
			t.Fatalf("event %q: fast path result %+v, general path %+v", event, resF, resG)
		}
		compareOutputs(t, event, outF, outG)
	}

	line := append([]byte("?"), encodeURIComponent(event)...)
	line = append(line, ";\tcp1052.eqiad.wmnet\t220927819\t2019-10-21T14:00:00\t198.51.100.130\t\"UA\""...)
	compareOutputs(t, line, pp.fast.Process(ctx, pp.f, line, nil, nil), pp.general.Process(ctx, pp.f, line, nil, nil))
}

func compareOutputs(t *testing.T, in []byte, fast, general []Output) {
	t.Helper()
	if len(fast) != len(general) {
		t.Fatalf("input %q: %d outputs on the fast path, %d on the general path", in, len(fast), len(general))
	}
	for i := range fast {
		f, g := fast[i], general[i]
		if f.Topic != g.Topic {
			t.Fatalf("input %q: output %d to %s on the fast path, to %s on the general path", in, i, f.Topic, g.Topic)
		}
		if bytes.Equal(f.Value, g.Value) {
			continue
		}
		if f.Topic == "eventlogging_EventError" {
			t.Fatalf("input %q: EventErrors differ:\n%s\n%s", in, f.Value, g.Value)
		}
		if !json.Valid(f.Value) {
			t.Fatalf("input %q: the fast path's capsule is not JSON: %s", in, f.Value)
		}
		if a, b := decodeJSON(t, f.Value), decodeJSON(t, g.Value); !reflect.DeepEqual(a, b) {
			t.Fatalf("input %q: capsules differ:\n%s\n%s", in, f.Value, g.Value)
		}
	}
}

func decodeJSON(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return v
}

// encodeURIComponent is JavaScript's, as the beacon client encodes the
// capsule into the query string.
func encodeURIComponent(b []byte) []byte {
	const hex = "0123456789ABCDEF"
	var out []byte
	for _, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', bytes.IndexByte([]byte("-_.!~*'()"), c) >= 0:
			out = append(out, c)
		default:
			out = append(out, '%', hex[c>>4], hex[c&0xf])
		}
	}
	return out
}

// workloadCapsules returns the capsule JSON of the first n workload lines.
func workloadCapsules(tb testing.TB, n int) [][]byte {
	tb.Helper()
	_, lines := loadWorkload(tb)
	f := mustFormat(tb, workloadFormat)
	var out [][]byte
	var fl lineformat.Fields
	for _, line := range lines[:n] {
		if f.Parse(line, &fl) == nil {
			out = append(out, bytes.Clone(fl.Capsule))
		}
	}
	return out
}

// fastPathEdgeCases are capsules at the fast path's edges: what it must
// leave to the general path, and what it must splice exactly.
var fastPathEdgeCases = []string{
	`{"event":{"action":"init"},"revision":13317883,"schema":"Analytics"}`,
	`{"event":{"pageTitle":"H\u00e9ctor \"q\" \\ \/ \ud83d\ude00 \ud800","action":"pageLoaded","namespaceId":0,"pageToken":"t","sessionToken":"s","isAnon":true,"skin":"vector","default_sample":true},"revision":18201205,"schema":"ReadingDepth","wiki":"enwiki","webHost":"en.m.wikipedia.org"}`,
	`{"event":{"pageTitle":"a` + "\u2028" + `b","action":"pageLoaded","namespaceId":0,"pageToken":"t","sessionToken":"s","isAnon":true,"skin":"vector","default_sample":true},"revision":18201205,"schema":"ReadingDepth"}`,
	`{"event":{"action":"pageLoaded","action":"pageUnloaded","pageTitle":"x","namespaceId":0,"pageToken":"t","sessionToken":"s","isAnon":true,"skin":"vector","default_sample":true},"revision":18201205,"schema":"ReadingDepth"}`,
	`{"event":{"action":"pageLoaded", "pageTitle":"x","namespaceId":0,"pageToken":"t","sessionToken":"s","isAnon":true,"skin":"vector","default_sample":true},"revision":18201205,"schema":"ReadingDepth"}`,
	`{ "event":{"action":"pageLoaded","pageTitle":"x","namespaceId":1.0,"pageToken":"t","sessionToken":"s","isAnon":true,"skin":"vector","default_sample":true},"revision":18201205,"schema":"ReadingDepth"}`,
	`{"event":{"action":"pageLoaded","pageTitle":"x","namespaceId":1e0,"pageToken":"t","sessionToken":"s","isAnon":true,"skin":"vector","default_sample":true},"revision":18201205,"schema":"ReadingDepth"}`,
	`{"event":{"action":"pageLoaded","pageTitle":"x","namespaceId":0,"pageToken":"t","sessionToken":"s","isAnon":true,"skin":"vector","default_sample":true},"revision":18201205,"schema":"ReadingDepth","schema":"ReadingDepth"}`,
	`{"event":{"action":"pageLoaded","pageTitle":"x","namespaceId":0,"pageToken":"t","sessionToken":"s","isAnon":true,"skin":"vector","default_sample":true},"revision":18201205,"schema":"ReadingDepth","recvFrom":"spoofed","seqId":1,"timestamp":5}`,
	`{"event":{"action":"pageLoaded","pageTitle":"x","namespaceId":0,"pageToken":"t","sessionToken":"s","isAnon":true,"skin":"vector","default_sample":true},"revision":18201205,"schema":"ReadingDepth","clientValidated":true}`,
	`{"event":{"action":"pageLoaded","pageTitle":"x","namespaceId":0,"pageToken":"t","sessionToken":"s","isAnon":true,"skin":"vector","default_sample":true},"revision":018201205,"schema":"ReadingDepth"}`,
	`{"event":{"action":"pageLoaded","pageTitle":"x","namespaceId":0,"pageToken":"t","sessionToken":"s","isAnon":true,"skin":"vector","default_sample":true},"revision":18201205,"schema":"ReadingDepth","wiki":"en\u0077iki","webHost":7}`,
	`{"event":{"action":"pageLoaded","pageTitle":"x","namespaceId":0,"pageToken":"t","sessionToken":"s","isAnon":true,"skin":"vector","default_sample":true},"revision":18201205,"schema":"ReadingDepth"} `,
	`{"event":{"action":"pageLoaded","pageTitle":"x","namespaceId":0,"pageToken":"t","sessionToken":"s","isAnon":true,"skin":"vector","default_sample":true},"revision":18201205,"schema":"ReadingDepth"}{}`,
	`{"event":{"action":"pageLoaded","pageTitle":"x","namespaceId":0,"pageToken":"t","sessionToken":"s","isAnon":true,"skin":"vector","default_sample":true,"extra":1},"revision":18201205,"schema":"ReadingDepth"}`,
	`{"event":{"action":"pageLoaded","pageTitle":"x","namespaceId":0,"pageToken":"t","sessionToken":"s","isAnon":true,"skin":"vector"},"revision":18201205,"schema":"ReadingDepth"}`,
	`{"event":{"action":"pageLoaded","pageTitle":"x","namespaceId":0,"pageToken":"t","sessionToken":"s","isAnon":true,"skin":"vector","default_sample":true},"revision":1,"schema":"ReadingDepth"}`,
	`{"event":{"action":"pageLoaded","pageTitle":"x","namespaceId":0,"pageToken":"t","sessionToken":"s","isAnon":true,"skin":"vector","default_sample":true},"revision":18201205,"schema":"Reading Depth"}`,
	`{"event":[],"revision":18201205,"schema":"ReadingDepth"}`,
	`{"event":`,
	`{"event":{},"schema":"ReadingDepth","revision":18201205}`,
	`{"event":{"pageTitle":"},\"schema\":\"x","action":"pageLoaded","namespaceId":0,"pageToken":"t","sessionToken":"s","isAnon":true,"skin":"vector","default_sample":true},"revision":18201205,"schema":"ReadingDepth"}`,
	`{"event":{"action":"pageLoaded","pageTitle":"x","namespaceId":0,"pageToken":"t","sessionToken":"s","isAnon":true,"skin":"vector","default_sample":true}},"revision":18201205,"schema":"ReadingDepth"}`,
	`{"event":{"action":"pageLoaded","pageTitle":"x","namespaceId":0,"pageToken":"t","sessionToken":"s","isAnon":true,"skin":"vector","default_sample":true},"revision":18201205,"schema":"ReadingDepth","wiki":"a\",\"wiki\":\"b"}`,
	`{"event":{"action":"pageLoaded","pageTitle":"x","namespaceId":0,"pageToken":"t","sessionToken":"s","isAnon":true,"skin":"vector","default_sample":true},"revision":18201205,"schema":"ReadingDepth","wiki":""}`,
	`{"event":{"action":"pageLoaded","pageTitle":"x","namespaceId":0,"pageToken":"t","sessionToken":"s","isAnon":true,"skin":"vector","default_sample":true},"revision":18201205,"revision":18201205,"schema":"ReadingDepth"}`,
	`{"event":{"action":"pageLoaded","pageTitle":"x","namespaceId":0,"pageToken":"t","sessionToken":"s","isAnon":true,"skin":"vector","default_sample":true},"revision":"18201205","schema":"ReadingDepth"}`,
	`{"event":{"action":"pageLoaded","pageTitle":"x","namespaceId":0,"pageToken":"t","sessionToken":"s","isAnon":true,"skin":"vector","default_sample":true},"event":{},"revision":18201205,"schema":"ReadingDepth"}`,
	`{"event":{"action":"pageLoaded","pageTitle":"x","namespaceId":0,"pageToken":"t","sessionToken":"s","isAnon":true,"skin":"vector","default_sample":true},"revision":18201205,"schema":"ReadingDepth",}`,
	`{"event":{"action":"pageLoaded","pageTitle":"x","namespaceId":0,"pageToken":"t","sessionToken":"s","isAnon":true,"skin":"vector","default_sample":true}"revision":18201205,"schema":"ReadingDepth"}`,
	`{"event"`,
	`{"schema":"ReadingDepth","revision":18201205,"event":{}`,
	`{"$schema":"/x/1.0.0","event":{},"revision":18201205,"schema":"ReadingDepth"}`,
	`{"event":{"action":"pageLoaded","pageTitle":"x","namespaceId":0,"pageToken":"t","sessionToken":"s","isAnon":true,"skin":"vector","default_sample":true},"revision":18201205,"schema":"ReadingDepth"`,
	`{"event":{"action":"pageLoaded","pageTitle":"x` + "\xff" + `","namespaceId":0,"pageToken":"t","sessionToken":"s","isAnon":true,"skin":"vector","default_sample":true},"revision":18201205,"schema":"ReadingDepth"}`,
}

// TestFastPathAgrees: the committed workload and the edge cases give the
// same verdicts and outputs with and without the fast path.
func TestFastPathAgrees(t *testing.T) {
	pp := newFastPathPair(t)
	for _, c := range workloadCapsules(t, 3000) {
		pp.check(t, c)
	}
	for _, c := range fastPathEdgeCases {
		pp.check(t, []byte(c))
	}
}

// FuzzFastPathAgrees: for any capsule JSON, the fast path and the general
// path (the decoder and the jsonschema library) give the same verdict and,
// for valid events, the same capsule modulo key order. Seeds: workload
// capsules and the edge cases above.
func FuzzFastPathAgrees(f *testing.F) {
	for _, c := range workloadCapsules(f, 40) {
		f.Add(c)
	}
	for _, c := range fastPathEdgeCases {
		f.Add([]byte(c))
	}
	pp := newFastPathPair(f)
	f.Fuzz(func(t *testing.T, event []byte) {
		pp.check(t, event)
	})
}
