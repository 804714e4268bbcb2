package compat

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/eventlogging/eventlogging/internal/schema"
)

// jsonGen builds random JSON schemas, changes them, and builds instances
// that mostly fit them, all from small pools so that they overlap.
type jsonGen struct {
	rng *rand.Rand
}

func (g jsonGen) pick(n int) bool { return g.rng.IntN(n) == 0 }

func (g jsonGen) schema(depth int) map[string]any {
	kinds := []string{"integer", "number", "string", "boolean", "null", "object", "array", "string|null", "any"}
	if depth > 2 {
		kinds = kinds[:5]
	}
	s := map[string]any{}
	switch k := kinds[g.rng.IntN(len(kinds))]; k {
	case "any":
	case "string|null":
		s["type"] = []any{"string", "null"}
	default:
		s["type"] = k
		switch k {
		case "integer", "number":
			if g.pick(3) {
				s["minimum"] = json.Number("0")
			}
			if g.pick(3) {
				s["maximum"] = json.Number("10")
			}
			if g.pick(4) {
				s["enum"] = []any{json.Number("1"), json.Number("2"), json.Number("3")}[:1+g.rng.IntN(3)]
			}
			if g.pick(6) {
				s["multipleOf"] = json.Number("2")
			}
		case "string":
			if g.pick(4) {
				s["enum"] = []any{"a", "b", "c"}[:1+g.rng.IntN(3)]
			}
			if g.pick(4) {
				s["maxLength"] = json.Number("2")
			}
			if g.pick(6) {
				s["pattern"] = "^a"
			}
			if g.pick(8) {
				s["format"] = "date"
			}
		case "object":
			props := map[string]any{}
			var req []any
			for _, p := range []string{"p", "q", "r"} {
				if g.pick(2) {
					props[p] = g.schema(depth + 1)
					if g.pick(3) {
						req = append(req, p)
					}
				}
			}
			s["properties"] = props
			if len(req) > 0 {
				s["required"] = req
			}
			switch g.rng.IntN(4) {
			case 0:
				s["additionalProperties"] = false
			case 1:
				s["additionalProperties"] = true
			case 2:
				s["additionalProperties"] = map[string]any{"type": "integer"}
			}
		case "array":
			s["items"] = g.schema(depth + 1)
			if g.pick(4) {
				s["minItems"] = json.Number("1")
			}
			if g.pick(4) {
				s["maxItems"] = json.Number("2")
			}
		}
	}
	return s
}

// mutate returns a changed deep copy of s.
func (g jsonGen) mutate(s map[string]any, depth int) map[string]any {
	if g.pick(8) {
		return g.schema(depth)
	}
	m := map[string]any{}
	for k, v := range s {
		m[k] = v
	}
	switch g.rng.IntN(8) {
	case 0:
		if t, ok := m["type"].(string); ok && t == "integer" {
			m["type"] = "number"
		} else if ok && t == "number" {
			m["type"] = "integer"
		}
	case 1:
		if e, ok := m["enum"].([]any); ok && len(e) > 1 {
			m["enum"] = e[:len(e)-1]
		} else {
			delete(m, "enum")
		}
	case 2:
		for _, k := range []string{"minimum", "maximum", "maxLength", "minItems", "maxItems", "pattern", "format", "multipleOf"} {
			if _, ok := m[k]; ok {
				delete(m, k)
				break
			}
		}
	case 3:
		if _, ok := m["required"]; ok {
			delete(m, "required")
		} else if props, ok := m["properties"].(map[string]any); ok {
			for p := range props {
				m["required"] = []any{p}
				break
			}
		}
	case 4:
		if _, ok := m["additionalProperties"]; ok {
			delete(m, "additionalProperties")
		} else if _, ok := m["properties"]; ok {
			m["additionalProperties"] = g.pick(2)
		}
	}
	if props, ok := m["properties"].(map[string]any); ok {
		np := map[string]any{}
		for k, v := range props {
			switch {
			case g.pick(6): // dropped
			case g.pick(3):
				np[k] = g.mutate(v.(map[string]any), depth+1)
			default:
				np[k] = v
			}
		}
		if g.pick(4) {
			np["r"] = g.schema(depth + 1)
		}
		m["properties"] = np
	}
	if items, ok := m["items"].(map[string]any); ok && g.pick(2) {
		m["items"] = g.mutate(items, depth+1)
	}
	return m
}

// value builds an instance that often, not always, fits s.
func (g jsonGen) value(s map[string]any, depth int) any {
	if g.pick(6) || depth > 4 {
		return []any{nil, true, json.Number("1"), json.Number("1.5"), "a", "zz", map[string]any{}, []any{}}[g.rng.IntN(8)]
	}
	if e, ok := s["enum"].([]any); ok && !g.pick(4) {
		return e[g.rng.IntN(len(e))]
	}
	t, _ := s["type"].(string)
	if ts, ok := s["type"].([]any); ok {
		t = ts[g.rng.IntN(len(ts))].(string)
	}
	switch t {
	case "integer":
		return json.Number([]string{"-1", "0", "1", "2", "3", "4", "11"}[g.rng.IntN(7)])
	case "number":
		return json.Number([]string{"-1", "0", "1", "2.5", "3", "11"}[g.rng.IntN(6)])
	case "string":
		return []string{"", "a", "ab", "abc", "b", "2024-01-02"}[g.rng.IntN(6)]
	case "boolean":
		return g.pick(2)
	case "null":
		return nil
	case "array":
		items, _ := s["items"].(map[string]any)
		out := []any{}
		for range g.rng.IntN(4) {
			out = append(out, g.value(items, depth+1))
		}
		return out
	case "object":
		props, _ := s["properties"].(map[string]any)
		out := map[string]any{}
		for _, p := range []string{"p", "q", "r"} {
			if ps, ok := props[p].(map[string]any); ok && !g.pick(4) {
				out[p] = g.value(ps, depth+1)
			}
		}
		if g.pick(5) {
			out["x"] = g.value(map[string]any{}, depth+1)
		}
		return out
	}
	return g.value(map[string]any{"type": []any{"integer", "string", "object"}}, depth+1)
}

// TestJSONSoundOnRandomSchemas: whenever CanRead finds no violation, every
// instance the validator accepts under the writer it accepts under the
// reader, on random schema pairs and instances.
func TestJSONSoundOnRandomSchemas(t *testing.T) {
	g := jsonGen{rng: rand.New(rand.NewPCG(3, 4))}
	compile := func(doc map[string]any) *schema.Schema {
		s, err := schema.Compile(schema.ID{Name: "Random", Revision: 1}, doc)
		if err != nil {
			t.Fatalf("compile %v: %v", doc, err)
		}
		return s
	}
	pairs, compatible, changed, valid := 0, 0, 0, 0
	for range 1500 {
		w := g.schema(0)
		w["type"] = "object"
		if _, ok := w["properties"]; !ok {
			w["properties"] = map[string]any{}
		}
		r := w
		for range 1 + g.rng.IntN(3) {
			r = g.mutate(r, 0)
		}
		r["type"] = "object"
		if g.pick(2) {
			r, w = w, r // the change tightens as often as it loosens
		}
		rs, ws := compile(r), compile(w)
		rj, _ := json.Marshal(r)
		wj, _ := json.Marshal(w)
		vs, err := CanRead(TypeJSON, string(rj), string(wj))
		if err != nil {
			t.Fatal(err)
		}
		pairs++
		if len(vs) > 0 {
			continue
		}
		compatible++
		if string(rj) != string(wj) {
			changed++
		}
		for range 30 {
			v := g.value(w, 0)
			if ws.Validate(v) != nil {
				continue
			}
			valid++
			if rs.Validate(v) != nil {
				vj, _ := json.Marshal(v)
				t.Fatalf("unsound: %s is valid under the writer only\nreader: %s\nwriter: %s", vj, rj, wj)
			}
		}
	}
	if compatible < pairs/5 || compatible == pairs || changed < compatible/3 {
		t.Fatalf("%d of %d pairs compatible: the generator is broken", compatible, pairs)
	}
	t.Logf("%d pairs, %d compatible, %d of them changed; %d instances valid under the writer", pairs, compatible, changed, valid)
}
