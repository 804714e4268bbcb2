package compat

import (
	"testing"

	"github.com/twmb/avro"
)

// fuzzSeeds adds the schema pairs of testdata/cases.yaml of one type.
func fuzzSeeds(f *testing.F, typ string) {
	for _, c := range loadCases(f) {
		if c.Type == typ {
			f.Add(c.Old, c.New)
		}
	}
}

// fuzzCheck: Check and CanRead never panic, an error is a parse error of
// the schema that does not parse, and a schema that parses can always
// follow itself.
func fuzzCheck(t *testing.T, typ, old, next string) {
	for _, l := range []Level{FullTransitive, Full} {
		vs, err := Check(typ, l, next, []string{old, next})
		if err != nil {
			continue
		}
		_ = vs
	}
	if _, err := CanRead(typ, old, next); err != nil {
		return
	}
	for _, s := range []string{old, next} {
		vs, err := Check(typ, Full, s, []string{s})
		if err != nil {
			t.Fatalf("schema parsed once, then failed: %v", err)
		}
		if len(vs) > 0 {
			t.Fatalf("a schema cannot follow itself: %v\nschema: %s", vs, s)
		}
	}
}

func FuzzCheckJSON(f *testing.F) {
	fuzzSeeds(f, TypeJSON)
	f.Fuzz(func(t *testing.T, old, next string) { fuzzCheck(t, TypeJSON, old, next) })
}

// FuzzCheckAvro also checks that the walk listing violations finds some
// exactly when twmb/avro's verdict is "incompatible".
func FuzzCheckAvro(f *testing.F) {
	fuzzSeeds(f, TypeAvro)
	f.Fuzz(func(t *testing.T, old, next string) {
		fuzzCheck(t, TypeAvro, old, next)
		o, err := avroFormat{}.parse(old)
		if err != nil {
			return
		}
		n, err := avroFormat{}.parse(next)
		if err != nil {
			return
		}
		for _, p := range [][2]*avroSchema{{n.(*avroSchema), o.(*avroSchema)}, {o.(*avroSchema), n.(*avroSchema)}} {
			lib := avro.CheckCompatibility(p[1].s, p[0].s)
			if walk := walkAvro(p[0], p[1], dirCanRead, true); (lib == nil) != (len(walk) == 0) {
				t.Fatalf("library says %v, walk says %v\nreader: %s\nwriter: %s", lib, walk, p[0].s, p[1].s)
			}
		}
	})
}
