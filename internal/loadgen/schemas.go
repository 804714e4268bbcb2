package loadgen

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/eventlogging/eventlogging/internal/schema"
)

// Schema is one legacy schema version events are generated for: the
// compiled validator (the one the processor uses) and a value generator
// built from its normalised document.
type Schema struct {
	ID       schema.ID
	compiled *schema.Schema
	root     *objectGen
	// violations are the controlled ways to make an event invalid.
	violations []violation
	// pad is the index in root.props of the string property that pads
	// events to --event-size; -1 when the schema has none.
	pad int
	// unsupported says why events cannot be generated ("" when they can).
	unsupported string
}

// Validate checks a decoded event (encoding/json with UseNumber) against
// the schema, as the processor does.
func (s *Schema) Validate(event any) error { return s.compiled.Validate(event) }

// SchemaSet is every legacy schema version of a schema folder.
type SchemaSet struct {
	dir      string
	versions map[string][]*Schema // name -> versions, oldest first
	names    []string             // sorted
}

// LoadSchemas reads and compiles every legacy schema version of dir
// (<Name>/<revision>.json|yaml, as the processor and the registry read it).
// Event Platform schemas (jsonschema/…) are not loaded. A version whose
// events cannot be generated is kept, marked unsupported.
func LoadSchemas(ctx context.Context, dir string) (*SchemaSet, error) {
	src := schema.NewDirSource(dir)
	ids, err := src.List()
	if err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	set := &SchemaSet{dir: dir, versions: map[string][]*Schema{}}
	for _, id := range ids {
		raw, err := src.Fetch(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("loadgen: schema %s: %w", id, err)
		}
		doc, err := schema.ParseDocument(raw)
		if err != nil {
			return nil, fmt.Errorf("loadgen: schema %s: %w", id, err)
		}
		compiled, err := schema.Compile(id, doc)
		if err != nil {
			return nil, fmt.Errorf("loadgen: schema %s: %w", id, err)
		}
		s := newSchema(id, compiled)
		if _, ok := set.versions[id.Name]; !ok {
			set.names = append(set.names, id.Name) // List is sorted by name
		}
		set.versions[id.Name] = append(set.versions[id.Name], s)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("loadgen: no legacy schemas (<Name>/<revision>.json|yaml) in %s", dir)
	}
	return set, nil
}

// Latest returns the newest revision of every schema, by name.
func (set *SchemaSet) Latest() []*Schema {
	out := make([]*Schema, 0, len(set.names))
	for _, n := range set.names {
		vs := set.versions[n]
		out = append(out, vs[len(vs)-1])
	}
	return out
}

// Lookup finds "Name" (its newest revision) or "Name/revision".
func (set *SchemaSet) Lookup(ref string) (*Schema, error) {
	name, rev, hasRev := strings.Cut(ref, "/")
	vs, ok := set.versions[name]
	if !ok {
		return nil, fmt.Errorf("no schema %q in %s (have %s)", name, set.dir, strings.Join(set.names, ", "))
	}
	if !hasRev {
		return vs[len(vs)-1], nil
	}
	n, err := strconv.ParseInt(rev, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("schema %q: revision %q is not a number", ref, rev)
	}
	for _, s := range vs {
		if s.ID.Revision == n {
			return s, nil
		}
	}
	return nil, fmt.Errorf("no schema %s revision %d in %s", name, n, set.dir)
}

// MixEntry is one schema of the mix and its weight.
type MixEntry struct {
	Ref    string  // "Name" (newest revision) or "Name/revision"
	Weight float64 // > 0
}

// ParseMix parses "Name:weight,Name/revision:weight,...": a missing weight
// is 1. An empty string is the empty mix (every schema, equally).
func ParseMix(s string) ([]MixEntry, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []MixEntry
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		ref, w, hasW := strings.Cut(part, ":")
		e := MixEntry{Ref: strings.TrimSpace(ref), Weight: 1}
		if hasW {
			f, err := strconv.ParseFloat(strings.TrimSpace(w), 64)
			if err != nil || f <= 0 || f != f || f > 1e9 {
				return nil, fmt.Errorf("schema mix %q: weight %q must be a number above 0", part, w)
			}
			e.Weight = f
		}
		if e.Ref == "" {
			return nil, fmt.Errorf("schema mix %q: no schema name", part)
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		return nil, errors.New("schema mix: no entries")
	}
	return out, nil
}
