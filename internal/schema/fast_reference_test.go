package schema

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// TestFastPathAgreesOnReferenceVectors: every event of the original's test
// vectors (parser.json's expected capsules, beacon.json's capsules), and
// 2,000 mutations of each, get the same answer from the fast path and from
// the jsonschema library, against the example schemas they name.
func TestFastPathAgreesOnReferenceVectors(t *testing.T) {
	ref := filepath.Join("..", "..", "testdata", "reference", "eventlogging")
	type capsule struct {
		Schema   string         `json:"schema"`
		Revision int64          `json:"revision"`
		Event    map[string]any `json:"event"`
	}
	var events []capsule
	var parser struct {
		Positive []struct {
			Expected capsule `json:"expected"`
		} `json:"positive"`
	}
	var beacon struct {
		Cases []struct {
			Capsule capsule `json:"capsule"`
		} `json:"cases"`
	}
	for name, v := range map[string]any{"parser.json": &parser, "beacon.json": &beacon} {
		raw, err := os.ReadFile(filepath.Join(ref, name))
		if err != nil {
			t.Fatalf("reference vectors missing: %v", err)
		}
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range parser.Positive {
		events = append(events, c.Expected)
	}
	for _, c := range beacon.Cases {
		events = append(events, c.Capsule)
	}
	src := NewDirSource("../../examples/schemas")
	rng := rand.New(rand.NewPCG(3, 4))
	checked := 0
	for _, c := range events {
		id := ID{Name: c.Schema, Revision: c.Revision}
		raw, err := src.Fetch(t.Context(), id)
		if err != nil {
			continue // a schema the examples do not hold (TestSchema)
		}
		doc, err := ParseDocument(raw)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Compile(id, doc)
		if err != nil {
			t.Fatal(err)
		}
		if s.fast == nil {
			t.Fatalf("%s has no fast path: the comparison would prove nothing", id)
		}
		b, _ := json.Marshal(c.Event)
		keys := propertyNames(s.Document(), []string{"x"})
		for range 2000 {
			v := decodeEvent(t, string(b))
			for range rng.IntN(4) {
				v = mutate(rng, v, keys, 0)
			}
			checkAgree(t, s, v)
			checked++
		}
	}
	if checked < 2000*4 {
		t.Fatalf("only %d values checked: the reference events name schemas the examples lack", checked)
	}
}
