package schema

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventlogging/eventlogging/internal/capsule"
)

// byteSchemas are the schemas ValidJSON is checked on: the fast-path table,
// the example schemas and the standard workload's.
func byteSchemas(tb testing.TB) []*Schema {
	tb.Helper()
	var schemas []*Schema
	for i, tt := range fastSchemas {
		schemas = append(schemas, compileFast(tb, i, tt.doc))
	}
	for _, rel := range []string{"Edit/1.json", "ButtonClick/7.json", "PageView/3.json", "NavigationTiming/2.yaml"} {
		schemas = append(schemas, compileFile(tb, rel))
	}
	return append(schemas, workloadSchemas(tb)...)
}

// workloadSchemas compiles the standard workload's schemas
// (testdata/workload/schemas at the repository root).
func workloadSchemas(tb testing.TB) []*Schema {
	tb.Helper()
	dir := filepath.Join("..", "..", "testdata", "workload", "schemas")
	paths, err := filepath.Glob(filepath.Join(dir, "*", "*.json"))
	if err != nil || len(paths) == 0 {
		tb.Fatalf("standard workload schemas missing under %s: %v", dir, err)
	}
	var out []*Schema
	for i, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		doc, err := ParseDocument(raw)
		if err != nil {
			tb.Fatal(err)
		}
		s, err := Compile(ID{Name: filepath.Base(filepath.Dir(p)), Revision: int64(i + 1)}, doc)
		if err != nil {
			tb.Fatal(err)
		}
		if s.fast == nil {
			tb.Fatalf("%s has no fast tree", p)
		}
		out = append(out, s)
	}
	return out
}

// checkValidJSON fails when ValidJSON accepts text the decoder refuses or
// the library finds invalid. It reports whether ValidJSON accepted it.
func checkValidJSON(t *testing.T, s *Schema, b []byte) bool {
	t.Helper()
	if CompactValueEnd(b) == len(b) {
		if _, err := capsule.Decode(b); err != nil {
			t.Fatalf("CompactValueEnd accepts %q, which the decoder refuses: %v", b, err)
		}
	}
	if !s.ValidJSON(b) {
		return false
	}
	v, err := capsule.Decode(b)
	if err != nil {
		t.Fatalf("schema %s: ValidJSON accepts %q, which the decoder refuses: %v", s.ID(), b, err)
	}
	if err := s.compiled.Validate(v); err != nil {
		t.Fatalf("schema %s: ValidJSON accepts %s, the library says %v", s.ID(), b, err)
	}
	return true
}

// TestValidJSONAgrees: on the fast-path table's values and random
// mutations of them, written as compact JSON, ValidJSON never accepts what
// the library rejects, and accepts most of what the library accepts.
func TestValidJSONAgrees(t *testing.T) {
	schemas := byteSchemas(t)
	seeds := make([][]string, 0, len(schemas))
	for _, tt := range fastSchemas {
		seeds = append(seeds, tt.valid)
	}
	seeds = append(seeds, []string{edit}, []string{buttonClick}, []string{pageView}, []string{navigationTiming})
	rng := rand.New(rand.NewPCG(5, 6))
	libValid, accepted := 0, 0
	for i, s := range schemas {
		if i >= len(seeds) || len(seeds[i]) == 0 {
			continue
		}
		keys := propertyNames(s.Document(), []string{"x"})
		for range 3000 {
			v := decodeEvent(t, seeds[i][rng.IntN(len(seeds[i]))])
			for range rng.IntN(4) {
				v = mutate(rng, v, keys, 0)
			}
			b := capsule.AppendValue(nil, v)
			ok := checkValidJSON(t, s, b)
			if s.compiled.Validate(v) == nil {
				libValid++
				if ok {
					accepted++
				}
			}
			// Whitespace is left to the slow path.
			if spaced, err := json.MarshalIndent(v, "", " "); err == nil && !bytes.Equal(spaced, b) && s.ValidJSON(spaced) {
				t.Fatalf("ValidJSON accepts text with whitespace: %s", spaced)
			}
		}
	}
	t.Logf("ValidJSON accepted %d of the %d values the library accepts", accepted, libValid)
	if accepted < libValid*3/4 {
		t.Errorf("ValidJSON accepted only %d of the %d values the library accepts: the fast path is rarely taken", accepted, libValid)
	}
}

// TestValidJSONCases: text the byte walker must leave to the slow path, or
// judge exactly.
func TestValidJSONCases(t *testing.T) {
	s := compileFast(t, 0, `{"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 10}, "n": {"type": "number", "minimum": 0, "maximum": 1}, "s": {"enum": ["x", "y"]}, "o": {"type": "object"}}, "required": ["a"], "additionalProperties": false}`)
	for _, tc := range []struct {
		text string
		want bool
	}{
		{`{"a":1}`, true},
		{`{"a":1.0}`, true},
		{`{"a":1.5}`, false},
		{`{"a":1e0}`, false}, // valid, but exponents are left to the library
		{`{"a":11}`, false},
		{`{"a":-0}`, true},
		{`{"a":1,"n":0.5}`, true},
		{`{"a":1,"n":1.5}`, false},
		{`{"a":1,"n":-0.0}`, true},
		{`{"a":1,"n":-0.1}`, false},
		{`{"a":1,"n":1.000}`, true},
		{`{"a":1,"n":1.001}`, false},
		{`{"a":1,"s":"x"}`, true},
		{`{"a":1,"s":"\u0078"}`, false}, // valid, but the content is escaped
		{`{"a":1,"s":"z"}`, false},
		{`{"a":1,"o":{"k":"\n","k2":[1,{"k":2}]}}`, true},
		{`{"a":1,"o":{"k":1,"k":2}}`, false},          // duplicate key
		{`{"a":"x","a":1}`, false},                    // duplicate key: the decoder keeps the last
		{`{"a":1,"o":{"\u006b":1}}`, false},           // escaped key
		{`{"a":1, "n":0.5}`, false},                   // whitespace
		{`{"a":1}` + "\n", false},                     // trailing whitespace
		{`{"a":1,"o":{"k":"` + "\xff" + `"}}`, false}, // invalid UTF-8
		{`{"a":1,"o":{"k":"` + "\x01" + `"}}`, false}, // control character
		{`{"a":01}`, false},                           // not JSON
		{`{"a":1,}`, false},                           // not JSON
		{`{"a":1}{}`, false},                          // two values
		{`{"a":1,"o":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`, false}, // deep
		{`{"b":1}`, false},
		{`{}`, false},
	} {
		if got := s.ValidJSON([]byte(tc.text)); got != tc.want {
			t.Errorf("ValidJSON(%s) = %v, want %v", tc.text, got, tc.want)
		}
		checkValidJSON(t, s, []byte(tc.text))
	}
}

// TestValidJSONDoesNotAllocate: an event of the standard workload
// (ReadingDepth) is judged without allocating.
func TestValidJSONDoesNotAllocate(t *testing.T) {
	b := []byte(`{"action":"pageUnloaded","pageTitle":"Héctor_Elizondo","namespaceId":0,"pageToken":"d6c07b3fe008f6360377","sessionToken":"333740d8a2fd15bbe6da","isAnon":true,"skin":"minerva","default_sample":false,"domInteractiveTime":42,"firstPaintTime":206,"totalLength":110159,"visibleLength":48356}`)
	for _, s := range workloadSchemas(t) {
		if s.ID().Name != "ReadingDepth" {
			continue
		}
		if !s.ValidJSON(b) {
			t.Fatalf("ValidJSON(%s) = false", b)
		}
		if n := testing.AllocsPerRun(100, func() { s.ValidJSON(b) }); n != 0 {
			t.Errorf("ValidJSON allocates %v times", n)
		}
		return
	}
	t.Fatal("no ReadingDepth schema in the workload")
}

// FuzzValidJSON feeds raw text to ValidJSON on every schema: what it
// accepts must decode and satisfy the library.
func FuzzValidJSON(f *testing.F) {
	for _, seed := range []string{`{"a":1,"n":1.5,"s":null,"b":true}`, `{"a":"1","n":1.0,"s":"abc","x":"b","other":[1]}`,
		`{"obj":{"a":1},"a":2}`, `{"a":1,"s":"x"}`, `{"a":1,"obj":{"a":2,"obj":{"a":3}}}`, `[1,"a",null]`, `"abc"`,
		`{"wiki":"enwiki","pageId":1,"responseStart":12,"isAnon":false}`, `{"a":1,"a":2}`, `{"s":"\u00e9"}`} {
		f.Add([]byte(seed))
	}
	schemas := byteSchemas(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, s := range schemas {
			checkValidJSON(t, s, data)
		}
	})
}

// BenchmarkValidJSON judges the events of the standard workload's valid
// lines (testdata/workload/raw.tsv), as the processor's fast path does.
func BenchmarkValidJSON(b *testing.B) {
	byName := map[string]*Schema{}
	for _, s := range workloadSchemas(b) {
		byName[s.ID().Name] = s
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "workload", "raw.tsv"))
	if err != nil {
		b.Fatal(err)
	}
	type item struct {
		s     *Schema
		event []byte
	}
	var items []item
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		q, _, _ := strings.Cut(strings.TrimPrefix(line, "?"), ";")
		text, err := url.QueryUnescape(q)
		if err != nil || !strings.HasPrefix(text, `{"event":`) {
			continue
		}
		ev := []byte(strings.TrimPrefix(text, `{"event":`))
		end := CompactValueEnd(ev)
		var c struct{ Schema string }
		if end < 0 || json.Unmarshal([]byte(text), &c) != nil || byName[c.Schema] == nil {
			continue
		}
		if s := byName[c.Schema]; s.ValidJSON(ev[:end]) {
			items = append(items, item{s, ev[:end]})
		}
	}
	if len(items) < 1000 {
		b.Fatalf("only %d workload events judged valid", len(items))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		it := items[i]
		if !it.s.ValidJSON(it.event) {
			b.Fatal("not valid")
		}
		if i++; i == len(items) {
			i = 0
		}
	}
}
