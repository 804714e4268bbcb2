package compat

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/twmb/avro"
)

// avroGen builds random record schemas from a small pool of field names,
// types and symbols, so that two of them often share structure.
type avroGen struct {
	rng *rand.Rand
}

var avroPrimitives = []string{"null", "boolean", "int", "long", "float", "double", "string", "bytes"}

// typ returns a random type for the field at path (named types are named
// after it, so two schemas name the same place alike) and a default for
// it, or nil when it has none that is easy to write.
func (g avroGen) typ(path string, depth int) (t, def any) {
	switch n := g.rng.IntN(12); {
	case n < 5 || depth > 2:
		p := avroPrimitives[g.rng.IntN(len(avroPrimitives))]
		return p, primitiveDefault(p)
	case n == 5:
		syms := []any{}
		for _, s := range []string{"A", "B", "C"} {
			if g.rng.IntN(3) > 0 {
				syms = append(syms, s)
			}
		}
		if len(syms) == 0 {
			syms = []any{"A"}
		}
		e := map[string]any{"type": "enum", "name": "E" + path, "symbols": syms}
		if g.rng.IntN(3) == 0 {
			e["default"] = syms[0]
		}
		if g.rng.IntN(4) == 0 {
			e["name"] = "X" + path
			e["aliases"] = []any{"E" + path}
		}
		return e, syms[0]
	case n == 6:
		pool := slices.Clone(avroPrimitives)
		g.rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
		branches := []any{}
		for _, p := range pool[:2+g.rng.IntN(2)] {
			branches = append(branches, p)
		}
		return branches, primitiveDefault(branches[0].(string))
	case n == 7:
		it, _ := g.typ(path+"i", depth+1)
		return map[string]any{"type": "array", "items": it}, []any{}
	case n == 8:
		vt, _ := g.typ(path+"v", depth+1)
		return map[string]any{"type": "map", "values": vt}, map[string]any{}
	case n == 9:
		return map[string]any{"type": "fixed", "name": "F" + path, "size": 4 + 4*g.rng.IntN(2)}, nil
	default:
		return g.record("R"+path, path, depth+1), nil
	}
}

func primitiveDefault(p string) any {
	switch p {
	case "null":
		return nil
	case "boolean":
		return false
	case "string", "bytes":
		return ""
	}
	return 0
}

func (g avroGen) record(name, path string, depth int) map[string]any {
	fields := []any{}
	for _, f := range []string{"a", "b", "c", "d"} {
		if g.rng.IntN(3) == 0 {
			continue
		}
		t, def := g.typ(path+f, depth)
		field := map[string]any{"name": f, "type": t}
		if g.rng.IntN(2) == 0 {
			if _, isRecord := t.(map[string]any); !isRecord || def != nil {
				if def != nil || t == "null" || isNullUnion(t) {
					field["default"] = def
				}
			}
		}
		if g.rng.IntN(8) == 0 {
			field["name"] = f + "2"
			field["aliases"] = []any{f}
		}
		fields = append(fields, field)
	}
	return map[string]any{"type": "record", "name": name, "fields": fields}
}

// mutate returns a changed deep copy of type t: types swapped or
// promoted, union branches and enum symbols added or removed, fields
// dropped, renamed or added, defaults dropped.
func (g avroGen) mutate(t any, path string) any {
	p := g.rng.IntN(10)
	switch t := t.(type) {
	case string:
		if p < 2 {
			return avroPrimitives[g.rng.IntN(len(avroPrimitives))]
		}
		return t
	case []any:
		u := slices.Clone(t)
		switch {
		case p < 2:
			for _, b := range avroPrimitives {
				if !slices.Contains(u, any(b)) {
					return append(u, b)
				}
			}
		case p < 4 && len(u) > 2:
			return u[:len(u)-1]
		}
		return u
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, v := range t {
			m[k] = v
		}
		switch t["type"] {
		case "enum":
			syms := slices.Clone(t["symbols"].([]any))
			switch {
			case p < 2:
				syms = append(syms, "D")
			case p < 4 && len(syms) > 1:
				syms = syms[:len(syms)-1]
				if d, ok := m["default"]; ok && !slices.Contains(syms, d) {
					m["default"] = syms[0]
				}
			case p < 5:
				if _, ok := m["default"]; ok {
					delete(m, "default")
				} else {
					m["default"] = syms[0]
				}
			}
			m["symbols"] = syms
		case "array":
			m["items"] = g.mutate(t["items"], path+"i")
		case "map":
			m["values"] = g.mutate(t["values"], path+"v")
		case "fixed":
			if p < 2 {
				m["size"] = 12
			}
		case "record":
			var fields []any
			for _, f := range t["fields"].([]any) {
				f := f.(map[string]any)
				nf := map[string]any{}
				for k, v := range f {
					nf[k] = v
				}
				switch g.rng.IntN(10) {
				case 0:
					continue // dropped
				case 1:
					nf["name"] = f["name"].(string) + "3"
					if g.rng.IntN(2) == 0 {
						nf["aliases"] = []any{f["name"]}
					}
				case 2:
					delete(nf, "default")
				}
				nt := g.mutate(f["type"], path+f["name"].(string))
				if !reflectEqualJSON(nt, f["type"]) {
					delete(nf, "default") // it may not fit the new type
				}
				nf["type"] = nt
				fields = append(fields, nf)
			}
			if p < 3 {
				nt, def := g.typ(path+"z", 2)
				nf := map[string]any{"name": "z", "type": nt}
				if def != nil && g.rng.IntN(2) == 0 {
					nf["default"] = def
				}
				fields = append(fields, nf)
			}
			if fields == nil {
				fields = []any{}
			}
			m["fields"] = fields
		}
		return m
	}
	return t
}

func reflectEqualJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func isNullUnion(t any) bool {
	u, ok := t.([]any)
	return ok && len(u) > 0 && u[0] == "null"
}

// TestAvroWalkAgreesOnRandomSchemas compares the walk (with twmb/avro's
// implicit null default) with twmb/avro's CheckCompatibility on random
// schema pairs, and the production walk with it where they may differ.
func TestAvroWalkAgreesOnRandomSchemas(t *testing.T) {
	g := avroGen{rng: rand.New(rand.NewPCG(1, 2))}
	n, incompatible := 0, 0
	for range 3000 {
		var s [2]*avroSchema
		var raw [2][]byte
		w := g.record("Event", "", 0)
		trees := []any{g.mutate(w, ""), w}
		if g.rng.IntN(4) == 0 {
			trees[0] = g.record("Event", "", 0) // unrelated schemas
		}
		for i := range s {
			raw[i], _ = json.Marshal(trees[i])
			p, err := avroFormat{}.parse(string(raw[i]))
			if err != nil {
				break // a random default the parser rejects
			}
			s[i] = p.(*avroSchema)
		}
		if s[0] == nil || s[1] == nil {
			continue
		}
		for _, o := range [][2]int{{0, 1}, {1, 0}} {
			r, w := s[o[0]], s[o[1]]
			n++
			lib := avro.CheckCompatibility(w.s, r.s)
			if lib != nil {
				incompatible++
			}
			walk := walkAvro(r, w, dirCanRead, true)
			if (lib == nil) != (len(walk) == 0) {
				t.Fatalf("library says %v, walk says %v\nreader: %s\nwriter: %s", lib, walk, raw[o[0]], raw[o[1]])
			}
			// Without the implicit default the walk may only be stricter.
			if strict := walkAvro(r, w, dirCanRead, false); len(strict) < len(walk) {
				t.Fatalf("strict walk %v found less than %v", strict, walk)
			}
		}
	}
	if n < 4000 || incompatible == 0 || incompatible == n {
		t.Fatalf("%d pairs, %d incompatible: the generator is broken", n, incompatible)
	}
	t.Logf("%d pairs, %d incompatible", n, incompatible)
}
