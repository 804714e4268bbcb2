package loadgen

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/process"
	"github.com/eventlogging/eventlogging/internal/schema"
)

const examples = "../../examples/schemas"

func loadExamples(t *testing.T) *SchemaSet {
	t.Helper()
	set, err := LoadSchemas(t.Context(), examples)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// decodedCapsule is a generated capsule, decoded as the processor does.
type decodedCapsule struct {
	WebHost  string         `json:"webHost"`
	Wiki     string         `json:"wiki"`
	Schema   string         `json:"schema"`
	Revision int64          `json:"revision"`
	Event    map[string]any `json:"event"`
}

func decodeCapsule(t *testing.T, b []byte) decodedCapsule {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	dec.DisallowUnknownFields() // the capsule root takes nothing else
	var c decodedCapsule
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("capsule %s: %v", b, err)
	}
	return c
}

// freshValidator compiles the schema file again, independently of the
// generator's copy, with internal/schema's compiler.
func freshValidator(t *testing.T, id schema.ID) *schema.Schema {
	t.Helper()
	raw, err := schema.NewDirSource(examples).Fetch(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := schema.ParseDocument(raw)
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.Compile(id, doc)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestGeneratedEventsValidate: for every legacy example schema, every
// generated valid event validates and every invalid one fails, with the
// marker, wiki, schema and revision in the capsule; the invalid share is
// about what was asked.
func TestGeneratedEventsValidate(t *testing.T) {
	set := loadExamples(t)
	schemas, weights, notes, err := set.Mix(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) > 0 || len(schemas) != 7 {
		t.Fatalf("every example schema should be supported: %d schemas, notes %q", len(schemas), notes)
	}
	const runID = "abc123"
	for _, size := range []int{0, 600} {
		g, err := NewGenerator(schemas, weights, GenConfig{RunID: runID, Invalid: 0.3, EventSize: size})
		if err != nil {
			t.Fatal(err)
		}
		validators := map[string]*schema.Schema{}
		for _, s := range schemas {
			validators[s.ID.Name] = freshValidator(t, s.ID)
		}
		r := rand.New(rand.NewPCG(1, 2))
		const n = 7000
		var invalid int
		perSchema := map[string]int{}
		for seq := range uint64(n) {
			b, si, bad := g.Event(nil, r, seq, int64(seq)*7)
			c := decodeCapsule(t, b)
			s := schemas[si]
			if c.Schema != s.ID.Name || c.Revision != s.ID.Revision || c.Wiki != "bench-"+runID {
				t.Fatalf("capsule fields %+v for schema %s", c, s.ID)
			}
			gotSeq, sent, ok := parseMarker([]byte(strings.TrimPrefix(c.WebHost, MarkerPrefix(runID))))
			if !strings.HasPrefix(c.WebHost, MarkerPrefix(runID)) || !ok || gotSeq != seq || sent != int64(seq)*7 {
				t.Fatalf("webHost %q: marker of seq %d", c.WebHost, seq)
			}
			err := validators[c.Schema].Validate(c.Event)
			switch {
			case bad && err == nil:
				t.Fatalf("invalid event of %s validates: %s", s.ID, b)
			case !bad && err != nil:
				t.Fatalf("valid event of %s fails: %v\n%s", s.ID, err, b)
			}
			if bad {
				invalid++
			}
			perSchema[c.Schema]++
			if size > 0 && s.pad >= 0 && s.padGen().maxLen < 0 && !bad && len(b) != size {
				t.Fatalf("--event-size %d: capsule of %s has %d bytes: %s", size, s.ID, len(b), b)
			}
		}
		if share := float64(invalid) / n; share < 0.27 || share > 0.33 {
			t.Errorf("invalid share %.3f, want about 0.3", share)
		}
		for _, s := range schemas {
			if got := perSchema[s.ID.Name]; got < n/7*8/10 {
				t.Errorf("schema %s: %d events of %d, want about a seventh", s.ID, got, n)
			}
		}
	}
}

// TestViolationKinds: each example schema offers the violations its
// properties allow (wrong type everywhere a type is declared, outside
// the enum where there is one, and an undeclared property at the closed
// root).
func TestViolationKinds(t *testing.T) {
	set := loadExamples(t)
	for ref, want := range map[string][]string{
		"NavigationTiming": {"/isHttps: wrong type (string)", "/loadEventEnd: wrong type (string)", "/mobileMode: value not in enum", "/mobileMode: wrong type (integer)", "/responseStart: wrong type (string)", "/benchUnexpectedProperty: undeclared property"},
		"FakeSchema":       {"/action: wrong type (integer)", "/benchUnexpectedProperty: undeclared property"},
	} {
		s, err := set.Lookup(ref)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, v := range s.violations {
			got = append(got, v.desc)
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%s violations:\n got %q\nwant %q", ref, got, want)
		}
	}
}

// TestEventSizeWithoutPad: a schema without a free string property keeps
// its natural size, and the generator says so.
func TestEventSizeWithoutPad(t *testing.T) {
	set := loadExamples(t)
	s, err := set.Lookup("NavigationTiming")
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGenerator([]*Schema{s}, []float64{1}, GenConfig{RunID: "x1", EventSize: 2000})
	if err != nil {
		t.Fatal(err)
	}
	if notes := g.Notes(); len(notes) != 1 || !strings.Contains(notes[0], "no free string property") {
		t.Errorf("notes %q", notes)
	}
	b, _, _ := g.Event(nil, rand.New(rand.NewPCG(3, 4)), 1, 1)
	if len(b) > 400 {
		t.Errorf("NavigationTiming event padded to %d bytes", len(b))
	}
}

// TestProcessorRoutesGenerated runs generated capsules through the real
// processing function (the synchronous POST's path): valid events become
// capsules in their schema topic with the marker in webHost, invalid ones
// EventErrors whose rawEvent holds the marker; and the beacon encoding
// decodes back to the same capsule.
func TestProcessorRoutesGenerated(t *testing.T) {
	set := loadExamples(t)
	schemas, weights, _, err := set.Mix(nil)
	if err != nil {
		t.Fatal(err)
	}
	proc, err := process.New(schema.NewResolver(schema.NewDirSource(examples), schema.ResolverConfig{}), nil,
		process.Config{IPPolicy: process.IPDrop, MixedTopic: "-"})
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGenerator(schemas, weights, GenConfig{RunID: "run9", Invalid: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	prefix := []byte(MarkerPrefix("run9"))
	for seq := range uint64(2000) {
		b, si, bad := g.Event(nil, r, seq, 42)
		beacon := appendURIComponent(nil, b)
		if dec, err := url.QueryUnescape(string(beacon)); err != nil || dec != string(b) {
			t.Fatalf("beacon encoding does not round-trip: %v\n%s\n%s", err, b, dec)
		}
		outs, res := proc.ProcessEvent(t.Context(), b, process.Meta{RecvFrom: "test", SeqID: int64(seq), Received: time.Now()}, nil)
		if len(outs) != 1 {
			t.Fatalf("%d outputs", len(outs))
		}
		want := capsule.TopicEventError
		if !bad {
			want = "eventlogging_" + schemas[si].ID.Name
		}
		if outs[0].Topic != want || res.Valid() == bad {
			t.Fatalf("event %s went to %s (%s), want %s", b, outs[0].Topic, res.Message, want)
		}
		i := bytes.Index(outs[0].Value, prefix)
		if i < 0 {
			t.Fatalf("no marker in the output %s", outs[0].Value)
		}
		if got, sent, ok := parseMarker(outs[0].Value[i+len(prefix):]); !ok || got != seq || sent != 42 {
			t.Fatalf("marker in the output reads %d, %d, %v; want %d", got, sent, ok, seq)
		}
	}
}

func TestParseMix(t *testing.T) {
	got, err := ParseMix("NavigationTiming:3, Generic/13 ,PageView:0.5")
	if err != nil {
		t.Fatal(err)
	}
	want := []MixEntry{{"NavigationTiming", 3}, {"Generic/13", 1}, {"PageView", 0.5}}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d: %v, want %v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"A:0", "A:-1", "A:x", ":2", ",", "A:NaN"} {
		if _, err := ParseMix(bad); err == nil {
			t.Errorf("ParseMix(%q) accepted", bad)
		}
	}
	set := loadExamples(t)
	if _, _, _, err := set.Mix([]MixEntry{{"Nope", 1}}); err == nil {
		t.Error("unknown schema accepted in the mix")
	}
	if _, _, _, err := set.Mix([]MixEntry{{"Generic/99", 1}}); err == nil {
		t.Error("unknown revision accepted in the mix")
	}
	s, w, _, err := set.Mix([]MixEntry{{"Generic", 1}, {"Generic/13", 2}})
	if err != nil || len(s) != 1 || w[0] != 3 {
		t.Errorf("repeated schema: %v %v %v", s, w, err)
	}
}

// TestUnsupportedSchema: a required property the generator cannot make
// (a pattern) marks the schema unsupported; an optional one is left out.
func TestUnsupportedSchema(t *testing.T) {
	doc := map[string]any{
		"properties": map[string]any{
			"code":  map[string]any{"type": "string", "pattern": "^[A-Z]{3}$"},
			"label": map[string]any{"type": "string", "required": true},
		},
	}
	id := schema.ID{Name: "P", Revision: 1}
	c, err := schema.Compile(id, doc)
	if err != nil {
		t.Fatal(err)
	}
	if s := newSchema(id, c); s.unsupported != "" || len(s.root.props) != 1 {
		t.Errorf("optional pattern property: unsupported %q, %d props", s.unsupported, len(s.root.props))
	}
	doc["properties"].(map[string]any)["code"].(map[string]any)["required"] = true
	c, err = schema.Compile(id, doc)
	if err != nil {
		t.Fatal(err)
	}
	if s := newSchema(id, c); !strings.Contains(s.unsupported, `"pattern"`) {
		t.Errorf("required pattern property: unsupported %q", s.unsupported)
	}
}
