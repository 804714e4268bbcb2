package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
)

// schemaCacheTTL bounds how stale the schema list may be: the list page
// must stay fast with hundreds of subjects, so Run refreshes it in the
// background and requests read the cache.
const schemaCacheTTL = 15 * time.Second

// Schemas lists the registry's subjects with their versions and
// compatibility level.
func (i *Inspector) Schemas(ctx context.Context) ([]SchemaSummary, error) {
	if i.sr == nil {
		return nil, nil
	}
	i.schemaMu.Lock()
	defer i.schemaMu.Unlock()
	if i.schemaCache != nil && time.Since(i.schemaCached) < schemaCacheTTL {
		return slices.Clone(i.schemaCache), nil
	}
	return i.loadSchemas(ctx)
}

// refreshSchemas reloads the schema list unless it is younger than half
// its TTL (Run calls it).
func (i *Inspector) refreshSchemas(ctx context.Context) {
	if i.sr == nil {
		return
	}
	i.schemaMu.Lock()
	defer i.schemaMu.Unlock()
	if i.schemaCache != nil && time.Since(i.schemaCached) < schemaCacheTTL/2 {
		return
	}
	if _, err := i.loadSchemas(ctx); err != nil && ctx.Err() == nil {
		i.cfg.Logger.Warn("loading the schema list", "err", err)
	}
}

// loadSchemas fetches the list; schemaMu is held.
func (i *Inspector) loadSchemas(ctx context.Context) ([]SchemaSummary, error) {
	all, err := i.sr.AllSchemas(ctx)
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	bySubject := map[string]*SchemaSummary{}
	var names []string
	for _, s := range all {
		sum, ok := bySubject[s.Subject]
		if !ok {
			sum = &SchemaSummary{Name: s.Subject, Type: schemaType(s.Type)}
			bySubject[s.Subject] = sum
			names = append(names, s.Subject)
		}
		sum.Versions = append(sum.Versions, s.Version)
		if s.Version > sum.Latest {
			sum.Latest, sum.LatestLabel = s.Version, versionLabel(s)
		}
	}
	levels := i.levels(ctx, names)
	out := make([]SchemaSummary, 0, len(names))
	for _, n := range names {
		s := bySubject[n]
		slices.Sort(s.Versions)
		s.Compatibility = levels[n]
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b SchemaSummary) int { return strings.Compare(a.Name, b.Name) })
	if len(out) == 0 {
		// An empty registry is cheap to ask again, and is often one being
		// filled (a standalone imports its schema folder as it starts):
		// not cached, so its schemas are listed as soon as they are there.
		i.schemaCache = nil
		return out, nil
	}
	i.schemaCache, i.schemaCached = out, time.Now()
	return slices.Clone(out), nil
}

// levels returns each subject's compatibility level, the global one where
// a subject has none of its own.
func (i *Inspector) levels(ctx context.Context, subjects []string) map[string]string {
	global := "BACKWARD"
	if g := i.sr.Compatibility(ctx); len(g) == 1 && g[0].Err == nil {
		global = g[0].Level.String()
	}
	out := make(map[string]string, len(subjects))
	for _, r := range i.sr.Compatibility(ctx, subjects...) {
		if r.Err == nil {
			out[r.Subject] = r.Level.String()
		} else {
			out[r.Subject] = global
		}
	}
	return out
}

// versionLabel is a registered version as users name it: the Event
// Platform version its metadata carries ("1.1.0", as the registry's
// import and `schema push` register it), else the global id, which is the
// legacy revision.
func versionLabel(s sr.SubjectSchema) string {
	if m := s.SchemaMetadata; m != nil && m.Properties["version"] != "" {
		return m.Properties["version"]
	}
	return strconv.Itoa(s.ID)
}

func schemaType(t sr.SchemaType) string {
	if t == sr.TypeAvro {
		return "AVRO"
	}
	if t == sr.TypeProtobuf {
		return "PROTOBUF"
	}
	return "JSON"
}

// Schema returns one subject with every version; an unknown subject is an
// error wrapping ErrNotFound.
func (i *Inspector) Schema(ctx context.Context, name string) (SchemaDetail, error) {
	if i.sr == nil {
		return SchemaDetail{}, fmt.Errorf("schema %s: %w (no registry configured)", name, ErrNotFound)
	}
	vs, err := i.sr.Schemas(ctx, name)
	if err != nil {
		var re *sr.ResponseError
		if errors.As(err, &re) && re.StatusCode == http.StatusNotFound {
			return SchemaDetail{}, fmt.Errorf("schema %s: %w", name, ErrNotFound)
		}
		return SchemaDetail{}, fmt.Errorf("registry: %w", err)
	}
	d := SchemaDetail{SchemaSummary: SchemaSummary{Name: name}}
	for _, v := range vs {
		d.Type = schemaType(v.Type)
		d.SchemaSummary.Versions = append(d.SchemaSummary.Versions, v.Version)
		sv := SchemaVersion{Version: v.Version, ID: v.ID, Label: versionLabel(v), Schema: json.RawMessage(v.Schema.Schema)}
		if v.Version > d.Latest {
			d.Latest, d.LatestLabel = v.Version, sv.Label
		}
		if !json.Valid(sv.Schema) {
			sv.Schema, _ = json.Marshal(v.Schema.Schema)
		}
		sv.Example = example(sv.Schema)
		d.Versions = append(d.Versions, sv)
	}
	slices.SortFunc(d.Versions, func(a, b SchemaVersion) int { return a.Version - b.Version })
	slices.Sort(d.SchemaSummary.Versions)
	d.Compatibility = i.levels(ctx, []string{name})[name]
	return d, nil
}

// example is the first of a JSON Schema's "examples", if any.
func example(schema json.RawMessage) json.RawMessage {
	var s struct {
		Examples []json.RawMessage `json:"examples"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Examples) == 0 {
		return nil
	}
	return s.Examples[0]
}
