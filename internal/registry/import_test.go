package registry

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/testsupport"

	"github.com/eventlogging/eventlogging/internal/kafka/schemalog"
	"github.com/eventlogging/eventlogging/internal/schema"
)

const examples = "../../examples/schemas"

func TestImportDirAndClient(t *testing.T) {
	in := newInstance(t, nil)
	ctx := t.Context()
	stats, err := in.r.ImportDir(ctx, examples)
	if err != nil {
		t.Fatal(err)
	}
	legacy, err := schema.NewDirSource(examples).List()
	if err != nil {
		t.Fatal(err)
	}
	const eventPlatform = 3 // analytics/edit_funnel 1.0.0 and 1.1.0, analytics/search_satisfaction 1.0.0
	if want := (ImportStats{Registered: len(legacy) + eventPlatform}); stats.Registered != want.Registered || stats.Unchanged != 0 || len(stats.Skipped) != 0 {
		t.Errorf("ImportDir = %+v, want %+v", stats, want)
	}
	again, err := in.r.ImportDir(ctx, examples)
	if err != nil || again.Unchanged != stats.Registered || again.Registered != 0 {
		t.Errorf("second ImportDir = %+v, %v; want everything unchanged", again, err)
	}

	generic, err := os.ReadFile(filepath.Join(examples, "Generic", "13.json"))
	if err != nil {
		t.Fatal(err)
	}
	in.run(t, []step{
		{name: "legacy id = revision", method: "GET", path: "/subjects/Generic/versions/1", status: 200, contains: `"id":13`},
		{method: "GET", path: "/subjects/Analytics/versions/latest", status: 200, contains: `"id":13317883`},
		{method: "GET", path: "/schemas/ids/13/schema", status: 200, wantText: strings.TrimSpace(string(generic))},
		{method: "GET", path: "/schemas/ids/13/versions", status: 200, wantJSON: `[{"subject":"Generic","version":1}]`},
		{name: "YAML registered as JSON", method: "GET", path: "/schemas/ids/123/schema", status: 200, contains: `"required": true`},
		{name: "Event Platform ids follow the highest", method: "GET", path: "/subjects/analytics%2Fedit_funnel/versions/1", status: 200,
			contains: `"id":13317884,"schemaType":"JSON","metadata":{"properties":{"version":"1.0.0"}}`},
		{method: "GET", path: "/analytics/edit_funnel/1.0.0", status: 200, contains: `"title": "analytics/edit_funnel"`},
	})

	cl, err := NewClient(in.base+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cl.Fetch(ctx, schema.ID{Name: "Generic", Revision: 13})
	if err != nil || string(got) != strings.TrimSpace(string(generic)) {
		t.Errorf("Fetch Generic/13 = %q, %v", got, err)
	}
	for _, id := range []schema.ID{
		{Name: "Generic", Revision: 7},       // id 7 is NavigationTiming's
		{Name: "Generic", Revision: 99999},   // no such id
		{Name: "Nope", Revision: 13},         // no such subject
		{Name: "Generic", Revision: 0},       // not an id
		{Name: "../x", Revision: 13},         // not a name
		{Name: "Generic", Revision: 1 << 40}, // past int32
	} {
		if _, err := cl.Fetch(ctx, id); !errors.Is(err, schema.ErrNotFound) {
			t.Errorf("Fetch %v: %v, want ErrNotFound", id, err)
		}
	}
	if b, err := cl.FetchURI(ctx, "/analytics/edit_funnel/1.0.0"); err != nil || !strings.Contains(string(b), `"analytics/edit_funnel"`) {
		t.Errorf("FetchURI = %.80s, %v", b, err)
	}
	for _, uri := range []string{"/analytics/edit_funnel/9.9.9", "/analytics/../x/1.0.0", "/subjects/Generic/versions/1"} {
		if _, err := cl.FetchURI(ctx, uri); !errors.Is(err, schema.ErrNotFound) {
			t.Errorf("FetchURI %s: %v, want ErrNotFound", uri, err)
		}
	}

	// The processor's resolver works through the client.
	res := schema.NewResolver(cl, schema.ResolverConfig{})
	s, err := res.Resolve(ctx, schema.ID{Name: "Generic", Revision: 13})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(map[string]any{"articleId": json.Number("1"), "articleTitle": "Main"}); err != nil {
		t.Errorf("valid Generic event: %v", err)
	}
	if err := s.Validate(map[string]any{"articleId": "x"}); err == nil {
		t.Error("invalid Generic event passed (the draft-3 schema was not normalised?)")
	}
	if _, err := res.ResolveURI(ctx, "/analytics/edit_funnel/1.0.0"); err != nil {
		t.Errorf("ResolveURI: %v", err)
	}
}

func TestClientErrors(t *testing.T) {
	for _, base := range []string{"", "ftp://x", "http://", "::"} {
		if _, err := NewClient(base, nil); err == nil {
			t.Errorf("NewClient(%q): no error", base)
		}
	}
	status := http.StatusInternalServerError
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		rw.WriteHeader(status)
		_, _ = rw.Write([]byte(`{"error_code":50001,"message":"store down"}`))
	}))
	defer srv.Close()
	cl, err := NewClient(srv.URL, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	_, err = cl.Fetch(t.Context(), schema.ID{Name: "Generic", Revision: 13})
	if err == nil || errors.Is(err, schema.ErrNotFound) || !strings.Contains(err.Error(), "store down") {
		t.Errorf("Fetch from a failing registry: %v, want a transient error with the message", err)
	}
	status = http.StatusNotFound
	if _, err := cl.FetchURI(t.Context(), "/a/b/1.0.0"); !errors.Is(err, schema.ErrNotFound) {
		t.Errorf("FetchURI 404: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := cl.FetchURI(ctx, "/a/b/1.0.0"); err == nil || errors.Is(err, schema.ErrNotFound) {
		t.Errorf("FetchURI with a canceled ctx: %v", err)
	}
}

func TestImportDirConflicts(t *testing.T) {
	write := func(t *testing.T, dir, name, text string) string {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		testsupport.WriteFile(t, p, text)
		return p
	}
	t.Run("id used by another schema", func(t *testing.T) {
		in := newInstance(t, nil)
		dir := t.TempDir()
		write(t, dir, "A/5.json", `{"properties": {"a": {"type": "string"}}}`)
		if _, err := in.r.ImportDir(t.Context(), dir); err != nil {
			t.Fatal(err)
		}
		other := t.TempDir()
		p := write(t, other, "B/5.json", `{"properties": {"b": {"type": "string"}}}`)
		_, err := in.r.ImportDir(t.Context(), other)
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("ImportDir with id 5 taken: %v, want an error naming %s", err, p)
		}
		// And the schema that has revision 5 (issue 31).
		if err == nil || !strings.Contains(err.Error(), "A version 1 has it") {
			t.Errorf("ImportDir with id 5 taken: %v, want it to name the schema that has it (A version 1)", err)
		}
	})
	t.Run("version changed", func(t *testing.T) {
		in := newInstance(t, nil)
		dir := t.TempDir()
		p := write(t, dir, "jsonschema/a/b/1.0.0.yaml", "title: a/b\ntype: object\n")
		if _, err := in.r.ImportDir(t.Context(), dir); err != nil {
			t.Fatal(err)
		}
		write(t, dir, "jsonschema/a/b/1.0.0.yaml", "title: a/b\ntype: object\ndescription: changed\n")
		_, err := in.r.ImportDir(t.Context(), dir)
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("ImportDir of a changed version: %v, want an error naming %s", err, p)
		}
	})
	t.Run("invalid schema", func(t *testing.T) {
		in := newInstance(t, nil)
		dir := t.TempDir()
		p := write(t, dir, "A/1.json", `{"type": 12}`)
		_, err := in.r.ImportDir(t.Context(), dir)
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("ImportDir of an invalid schema: %v, want an error naming %s", err, p)
		}
	})
	t.Run("versions in order, soft-deleted not resurrected", func(t *testing.T) {
		in := newInstance(t, nil)
		dir := t.TempDir()
		for _, v := range []string{"1.10.0", "1.9.0", "2.0.0"} {
			write(t, dir, "jsonschema/x/"+v+".json", `{"title": "x", "description": "`+v+`"}`)
		}
		write(t, dir, "jsonschema/x/README.md", "not a schema")
		if st, err := in.r.ImportDir(t.Context(), dir); err != nil || st.Registered != 3 {
			t.Fatalf("ImportDir = %+v, %v", st, err)
		}
		in.run(t, []step{
			{method: "GET", path: "/subjects/x/versions/1", status: 200, contains: `"version":"1.9.0"`},
			{method: "GET", path: "/subjects/x/versions/2", status: 200, contains: `"version":"1.10.0"`},
			{method: "DELETE", path: "/subjects/x/versions/3", status: 200},
		})
		if st, err := in.r.ImportDir(t.Context(), dir); err != nil || st.Registered != 0 {
			t.Errorf("ImportDir after a soft delete = %+v, %v; want nothing registered", st, err)
		}
	})
	t.Run("follower", func(t *testing.T) {
		topic := newMemTopic()
		newInstance(t, topic)
		follower := newInstance(t, topic)
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		if _, err := follower.r.ImportDir(ctx, examples); !errors.Is(err, schemalog.ErrNotLeader) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("ImportDir on a follower: %v, want ErrNotLeader", err)
		}
		// Once it leads, a waiting ImportDir imports.
		done := make(chan error, 1)
		go func() {
			_, err := follower.r.ImportDir(t.Context(), examples)
			done <- err
		}()
		topic.setLeader(follower.log)
		if err := <-done; err != nil {
			t.Errorf("ImportDir after becoming leader: %v", err)
		}
	})
	t.Run("missing folder", func(t *testing.T) {
		in := newInstance(t, nil)
		if _, err := in.r.ImportDir(t.Context(), filepath.Join(t.TempDir(), "nope")); err == nil {
			t.Error("ImportDir of a missing folder: no error")
		}
	})
}
