package loadgen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/eventlogging/eventlogging/internal/schema"
)

// violation is one controlled way to make an event of a schema invalid.
type violation struct {
	// prop is the index of the root property that gets value; the number
	// of properties means an undeclared property instead.
	prop  int
	value []byte
	desc  string // "/count: wrong type (string)"
}

// unexpectedProperty is the undeclared property of "additional" violations.
const unexpectedProperty = "benchUnexpectedProperty"

// selfChecks is how many events newSchema generates and validates to make
// sure the generator's output is what it claims.
const selfChecks = 200

func newSchema(id schema.ID, compiled *schema.Schema) *Schema {
	s := &Schema{ID: id, compiled: compiled, pad: -1}
	g, err := buildValue(compiled.Document(), "")
	if err != nil {
		s.unsupported = err.Error()
		return s
	}
	root, ok := g.(withTypes).g.(*objectGen)
	if !ok {
		s.unsupported = "the schema root is not an object"
		return s
	}
	s.root = root
	s.violations = findViolations(root)
	s.pad = findPad(root)

	// Self-check: generated valid events validate, invalid ones do not.
	r := rand.New(rand.NewPCG(uint64(id.Revision), 1))
	var buf []byte
	for range selfChecks {
		buf = root.appendObject(buf[:0], r, -1, nil, -1, 0, 0)
		if err := validateJSON(s, buf); err != nil {
			s.unsupported = fmt.Sprintf("a generated event does not validate (%v): %s", err, buf)
			return s
		}
	}
	s.violations = slices.DeleteFunc(s.violations, func(v violation) bool {
		for range selfChecks / 10 {
			buf = root.appendObject(buf[:0], r, v.prop, v.value, -1, 0, 0)
			if validateJSON(s, buf) == nil {
				return true // not a violation after all (e.g. a combining keyword allows it)
			}
		}
		return false
	})
	return s
}

// validateJSON decodes an event as the processor does and validates it.
func validateJSON(s *Schema, event []byte) error {
	dec := json.NewDecoder(bytes.NewReader(event))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("generated JSON does not decode: %w", err)
	}
	return s.compiled.Validate(v)
}

// findViolations lists, for each root property, a value of a type it does
// not allow and a string outside its enum; and, when the root is closed, an
// undeclared property.
func findViolations(root *objectGen) []violation {
	var out []violation
	for i, p := range root.props {
		g := p.gen
		if w, ok := g.(withTypes); ok {
			g = w.g
		}
		types := p.gen.allowed()
		if e, ok := g.(*enumGen); ok {
			const outside = "bench-not-in-enum"
			if !slices.ContainsFunc(e.raw, func(v any) bool { return v == outside }) {
				out = append(out, violation{prop: i, value: []byte(strconv.Quote(outside)), desc: "/" + p.name + ": value not in enum"})
			}
		}
		if types == nil {
			continue // any type is allowed
		}
		allows := func(t string) bool {
			return slices.Contains(types, t) || (t == "integer" && slices.Contains(types, "number"))
		}
		for _, c := range []struct{ typ, value string }{
			{"string", `"bench-wrong-type"`}, {"integer", `12345`}, {"boolean", `true`},
			{"object", `{}`}, {"array", `[]`}, {"null", `null`},
		} {
			if !allows(c.typ) {
				out = append(out, violation{prop: i, value: []byte(c.value), desc: "/" + p.name + ": wrong type (" + c.typ + ")"})
				break
			}
		}
	}
	if root.closed {
		out = append(out, violation{prop: len(root.props), value: []byte("1"), desc: "/" + unexpectedProperty + ": undeclared property"})
	}
	return out
}

// findPad picks the root string property (free text: no enum, no format)
// that can pad events to a size: unbounded if one is, else the longest.
func findPad(root *objectGen) int {
	best, bestMax := -1, 0
	for i, p := range root.props {
		w, ok := p.gen.(withTypes)
		if !ok {
			continue
		}
		sg, ok := w.g.(*stringGen)
		if !ok || sg.format != nil {
			continue
		}
		switch {
		case sg.maxLen < 0:
			return i
		case sg.maxLen > bestMax:
			best, bestMax = i, sg.maxLen
		}
	}
	return best
}

// padGen is the string generator of a schema's padding property.
func (s *Schema) padGen() *stringGen {
	return s.root.props[s.pad].gen.(withTypes).g.(*stringGen)
}

// Mix resolves a schema mix to schemas and weights. The empty mix is the
// newest revision of every schema events can be generated for, equally;
// notes say which were left out and why. A named schema that cannot be
// generated is an error.
func (set *SchemaSet) Mix(entries []MixEntry) (schemas []*Schema, weights []float64, notes []string, err error) {
	if len(entries) == 0 {
		for _, s := range set.Latest() {
			if s.unsupported != "" {
				notes = append(notes, fmt.Sprintf("schema %s left out of the mix: %s", s.ID, s.unsupported))
				continue
			}
			schemas = append(schemas, s)
			weights = append(weights, 1)
		}
		if len(schemas) == 0 {
			return nil, nil, notes, fmt.Errorf("loadgen: no schema in %s can be generated", set.dir)
		}
		return schemas, weights, notes, nil
	}
	for _, e := range entries {
		s, err := set.Lookup(e.Ref)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("loadgen: schema mix: %w", err)
		}
		if s.unsupported != "" {
			return nil, nil, nil, fmt.Errorf("loadgen: schema mix: cannot generate events of %s: %s", s.ID, s.unsupported)
		}
		if i := slices.Index(schemas, s); i >= 0 {
			weights[i] += e.Weight
			continue
		}
		schemas = append(schemas, s)
		weights = append(weights, e.Weight)
	}
	return schemas, weights, nil, nil
}

// GenConfig tunes a Generator.
type GenConfig struct {
	// RunID is put in every event's marker; required, letters and digits.
	RunID string
	// Invalid is the share of events, in [0, 1], generated with one
	// controlled violation.
	Invalid float64
	// EventSize, if > 0, is the approximate size in bytes of each capsule
	// (its JSON text): events are padded through a free string property of
	// their schema. Schemas without one keep their natural size.
	EventSize int
}

// Generator makes legacy capsules of a mix of schemas. It is immutable and
// safe for concurrent use; each caller brings its own *rand.Rand.
type Generator struct {
	cfg     GenConfig
	schemas []*Schema
	cum     []float64 // cumulative weights, the last one is 1
	prefix  []byte    // `{"webHost":"bench-<run>-`
	headers [][]byte  // per schema: `","wiki":"bench-<run>","schema":"Name","revision":N,"event":`
}

// NewGenerator builds a generator of the schemas, picked with the weights.
func NewGenerator(schemas []*Schema, weights []float64, cfg GenConfig) (*Generator, error) {
	if len(schemas) == 0 || len(schemas) != len(weights) {
		return nil, errors.New("loadgen: generator needs schemas and one weight each")
	}
	if cfg.RunID == "" || !alnum(cfg.RunID) {
		return nil, fmt.Errorf("loadgen: run id %q must be letters and digits", cfg.RunID)
	}
	if !(cfg.Invalid >= 0 && cfg.Invalid <= 1) {
		return nil, fmt.Errorf("loadgen: invalid share %v must be within [0, 1]", cfg.Invalid)
	}
	g := &Generator{cfg: cfg, schemas: schemas}
	var total float64
	for _, w := range weights {
		if !(w > 0) {
			return nil, fmt.Errorf("loadgen: weight %v must be above 0", w)
		}
		total += w
	}
	var acc float64
	for _, w := range weights {
		acc += w / total
		g.cum = append(g.cum, acc)
	}
	g.cum[len(g.cum)-1] = 1
	g.prefix = []byte(`{"webHost":"` + MarkerPrefix(cfg.RunID))
	for _, s := range schemas {
		name, _ := json.Marshal(s.ID.Name)
		h := fmt.Appendf(nil, `","wiki":"bench-%s","schema":%s,"revision":%d,"event":`, cfg.RunID, name, s.ID.Revision)
		g.headers = append(g.headers, h)
	}
	return g, nil
}

// Schemas returns the schemas of the mix, in the order Event's index uses.
func (g *Generator) Schemas() []*Schema { return g.schemas }

// Notes says which schemas of the mix ignore EventSize, and which cannot
// be made invalid.
func (g *Generator) Notes() []string {
	var notes []string
	for _, s := range g.schemas {
		if g.cfg.EventSize > 0 && s.pad < 0 {
			notes = append(notes, fmt.Sprintf("schema %s has no free string property: its events are not padded to --event-size", s.ID))
		}
		if g.cfg.EventSize > 0 && s.pad >= 0 && s.padGen().maxLen >= 0 {
			notes = append(notes, fmt.Sprintf("schema %s pads through %q, at most %d characters", s.ID, s.root.props[s.pad].name, s.padGen().maxLen))
		}
		if g.cfg.Invalid > 0 && len(s.violations) == 0 {
			notes = append(notes, fmt.Sprintf("schema %s offers no controlled violation: its events are all valid", s.ID))
		}
	}
	return notes
}

// MarkerPrefix is the start of the webHost marker of every event of a run:
// the sequence number and the send time follow it.
func MarkerPrefix(runID string) string { return "bench-" + runID + "-" }

// Event appends one capsule (JSON) to dst: the marker of event seq sent
// sentMicros µs after the run started, the capsule fields and an event of
// a schema of the mix, invalid with probability GenConfig.Invalid. It
// returns the schema's index in Schemas and whether the event is invalid.
func (g *Generator) Event(dst []byte, r *rand.Rand, seq uint64, sentMicros int64) ([]byte, int, bool) {
	i := 0
	if len(g.cum) > 1 {
		u := r.Float64()
		for i < len(g.cum)-1 && u >= g.cum[i] {
			i++
		}
	}
	s := g.schemas[i]
	base := len(dst)
	dst = append(dst, g.prefix...)
	dst = strconv.AppendUint(dst, seq, 10)
	dst = append(dst, '-')
	dst = strconv.AppendInt(dst, sentMicros, 10)
	dst = append(dst, g.headers[i]...)
	force, forceValue := -1, []byte(nil)
	invalid := g.cfg.Invalid > 0 && len(s.violations) > 0 && r.Float64() < g.cfg.Invalid
	if invalid {
		v := &s.violations[r.IntN(len(s.violations))]
		force, forceValue = v.prop, v.value
	}
	pad, target := -1, 0
	if g.cfg.EventSize > 0 && s.pad >= 0 {
		pad, target = s.pad, g.cfg.EventSize
	}
	dst = s.root.appendObject(dst, r, force, forceValue, pad, target, base)
	return append(dst, '}'), i, invalid
}

func alnum(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		default:
			return false
		}
	}
	return true
}
