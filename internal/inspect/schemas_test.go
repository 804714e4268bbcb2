package inspect

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/eventlogging/eventlogging/internal/kafka"
)

// fakeRegistry answers the reads of the schema pages as the registry
// does: GET /schemas, /subjects/S/versions[/N] and /config[/S]. Event
// Platform versions carry metadata property "version", as the registry's
// import and `schema push` register them.
type fakeRegistry struct {
	mu      sync.Mutex
	schemas []sr.SubjectSchema
	lists   int // GET /schemas answered
}

func (f *fakeRegistry) add(subject string, id int, version string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 1
	for _, s := range f.schemas {
		if s.Subject == subject {
			n++
		}
	}
	s := sr.SubjectSchema{Subject: subject, Version: n, ID: id, Schema: sr.Schema{Schema: `{"type":"object"}`, Type: sr.TypeJSON}}
	if version != "" {
		s.SchemaMetadata = &sr.SchemaMetadata{Properties: map[string]string{"version": version}}
	}
	f.schemas = append(f.schemas, s)
}

func (f *fakeRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var segs []string
	for _, s := range strings.Split(strings.Trim(r.URL.EscapedPath(), "/"), "/") {
		u, _ := url.PathUnescape(s)
		segs = append(segs, u)
	}
	answer := func(v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	var of []sr.SubjectSchema
	if len(segs) >= 2 && segs[0] == "subjects" {
		for _, s := range f.schemas {
			if s.Subject == segs[1] {
				of = append(of, s)
			}
		}
	}
	switch {
	case len(segs) == 1 && segs[0] == "schemas":
		f.lists++
		answer(f.schemas)
	case segs[0] == "config":
		answer(map[string]string{"compatibilityLevel": "BACKWARD"})
	case len(of) == 0:
		w.WriteHeader(http.StatusNotFound)
		answer(map[string]any{"error_code": 40401, "message": "Subject not found"})
	case len(segs) == 3 && segs[2] == "versions":
		var ns []int
		for _, s := range of {
			ns = append(ns, s.Version)
		}
		answer(ns)
	case len(segs) == 4 && segs[2] == "versions":
		n, _ := strconv.Atoi(segs[3])
		i := slices.IndexFunc(of, func(s sr.SubjectSchema) bool { return s.Version == n })
		if i < 0 {
			w.WriteHeader(http.StatusNotFound)
			answer(map[string]any{"error_code": 40402, "message": "Version not found"})
			return
		}
		answer(of[i])
	default:
		http.NotFound(w, r)
	}
}

// TestSchemaLabels: a version is labelled as users name it, the legacy
// revision (the global id) or the Event Platform version; an empty list is
// not cached, so a registry being filled shows its schemas at once.
func TestSchemaLabels(t *testing.T) {
	reg := &fakeRegistry{}
	srv := httptest.NewServer(reg)
	t.Cleanup(srv.Close)
	i, err := New(Config{Kafka: kafka.Config{Brokers: cluster(t)}, RegistryURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(i.Close)
	ctx := t.Context()

	if list, err := i.Schemas(ctx); err != nil || len(list) != 0 {
		t.Fatalf("empty registry: Schemas = %v, %v", list, err)
	}
	reg.add("NavigationTiming", 7, "")
	reg.add("NavigationTiming", 9, "")
	reg.add("analytics/edit_funnel", 100, "1.0.0")
	reg.add("analytics/edit_funnel", 101, "1.1.0")
	list, err := i.Schemas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range list {
		got[s.Name] = strconv.Itoa(s.Latest) + " " + s.LatestLabel
	}
	if want := map[string]string{"NavigationTiming": "2 9", "analytics/edit_funnel": "2 1.1.0"}; !maps.Equal(got, want) {
		t.Errorf("Schemas: latest %v, want %v", got, want)
	}
	lists := reg.lists
	if _, err := i.Schemas(ctx); err != nil || reg.lists != lists {
		t.Errorf("a listed registry is read again within the cache's life (%d reads, then %d; %v)", lists, reg.lists, err)
	}

	d, err := i.Schema(ctx, "analytics/edit_funnel")
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, v := range d.Versions {
		labels = append(labels, strconv.Itoa(v.Version)+":"+v.Label)
	}
	if want := []string{"1:1.0.0", "2:1.1.0"}; !slices.Equal(labels, want) || d.LatestLabel != "1.1.0" {
		t.Errorf("Schema: versions %v, latest %q; want %v, 1.1.0", labels, d.LatestLabel, want)
	}
	if d, err := i.Schema(ctx, "NavigationTiming"); err != nil || d.Versions[0].Label != "7" || d.LatestLabel != "9" {
		t.Errorf("legacy Schema: %+v, %v; want revisions 7 and 9", d, err)
	}
}

func TestSubjectOf(t *testing.T) {
	for _, tc := range []struct {
		schema         string
		revision       int64
		subject, label string
	}{
		{"NavigationTiming", 7, "NavigationTiming", "7"},
		{"NavigationTiming", -1, "NavigationTiming", ""},
		{"/analytics/edit_funnel/1.0.0", -1, "analytics/edit_funnel", "1.0.0"},
		{"analytics/edit_funnel/1.1.0", -1, "analytics/edit_funnel", "1.1.0"},
		{"https://schema.example.org/analytics/edit_funnel/1.0.0.yaml", -1, "analytics/edit_funnel", "1.0.0"},
		{"/mediawiki/page/change/2.0.0", 0, "mediawiki/page/change", "2.0.0"},
		{"/1.0.0", -1, "", ""},
		{"/../etc/passwd", -1, "", ""},
		{"", -1, "", ""},
	} {
		if s, l := subjectOf(tc.schema, tc.revision); s != tc.subject || l != tc.label {
			t.Errorf("subjectOf(%q, %d) = %q, %q; want %q, %q", tc.schema, tc.revision, s, l, tc.subject, tc.label)
		}
	}
}

// TestStatusTextNamesVersions: `eventlogging status` names a legacy
// schema's revision, an Event Platform $schema as it is, and never an
// unknown revision as -1.
func TestStatusTextNamesVersions(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	st := Status{Errors: []ErrorRecord{
		{UUID: "a", Time: at, Schema: "NavigationTiming", Revision: 7, Subject: "NavigationTiming", Label: "7", Code: "validation"},
		{UUID: "b", Time: at, Schema: "/analytics/edit_funnel/1.0.0", Revision: -1, Subject: "analytics/edit_funnel", Label: "1.0.0", Code: "validation"},
		{UUID: "c", Time: at, Schema: "unknown", Revision: -1, Subject: "unknown", Code: "processor"},
	}}
	var b strings.Builder
	st.WriteText(&b)
	out := b.String()
	for _, want := range []string{"  NavigationTiming/7  validation", "  /analytics/edit_funnel/1.0.0  validation", "  unknown  processor"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "-1") {
		t.Errorf("status shows -1:\n%s", out)
	}
}
