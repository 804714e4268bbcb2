package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/inspect"
)

// fakeBackend is an in-memory Backend for the UI logic.
type fakeBackend struct {
	overview inspect.Overview
	schemas  []inspect.SchemaSummary
	details  map[string]inspect.SchemaDetail
	errs     []inspect.ErrorRecord
	topics   []string
	fail     error // every call but Tail fails with it when set
	// tail runs Backend.Tail; nil: no records, wait for ctx.
	tail func(ctx context.Context, topic string, fn func(inspect.TailEvent) error) error

	mu       sync.Mutex
	replays  [][]string
	filters  []inspect.ErrorFilter
	tailsRun int
}

func (f *fakeBackend) Overview(context.Context) (inspect.Overview, error) {
	return f.overview, f.fail
}

func (f *fakeBackend) Schemas(context.Context) ([]inspect.SchemaSummary, error) {
	if f.fail != nil {
		return nil, f.fail
	}
	return f.schemas, nil
}

func (f *fakeBackend) Schema(_ context.Context, name string) (inspect.SchemaDetail, error) {
	if f.fail != nil {
		return inspect.SchemaDetail{}, f.fail
	}
	d, ok := f.details[name]
	if !ok {
		return d, fmt.Errorf("schema %q: %w", name, inspect.ErrNotFound)
	}
	return d, nil
}

func (f *fakeBackend) Errors(_ context.Context, flt inspect.ErrorFilter) ([]inspect.ErrorRecord, error) {
	f.mu.Lock()
	f.filters = append(f.filters, flt)
	f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	var out []inspect.ErrorRecord
	for _, e := range f.errs {
		if flt.Schema == "" || e.Schema == flt.Schema {
			out = append(out, e)
		}
	}
	return out[:min(len(out), flt.Limit)], nil
}

func (f *fakeBackend) Replay(_ context.Context, uuids []string, _ inspect.ReplayOptions) (inspect.ReplayResult, error) {
	if f.fail != nil {
		return inspect.ReplayResult{}, f.fail
	}
	f.mu.Lock()
	f.replays = append(f.replays, uuids)
	f.mu.Unlock()
	var res inspect.ReplayResult
	for _, u := range uuids {
		i := slices.IndexFunc(f.errs, func(e inspect.ErrorRecord) bool { return e.UUID == u })
		switch {
		case i < 0:
			res.Skipped++
			res.Reasons = append(res.Reasons, u+": not found")
		case !f.errs[i].Replayable || f.errs[i].Replayed:
			res.Skipped++
			res.Reasons = append(res.Reasons, u+": not replayable")
		default:
			res.Replayed++
			res.Valid++
		}
	}
	return res, nil
}

func (f *fakeBackend) Topics(context.Context) ([]string, error) {
	if f.fail != nil {
		return nil, f.fail
	}
	return f.topics, nil
}

func (f *fakeBackend) Tail(ctx context.Context, topic string, fn func(inspect.TailEvent) error) error {
	f.mu.Lock()
	f.tailsRun++
	f.mu.Unlock()
	if f.tail != nil {
		return f.tail(ctx, topic, fn)
	}
	<-ctx.Done()
	return ctx.Err()
}

// testNow is the clock of the test handlers.
var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// newFake returns a backend with a little of everything, including
// hostile text.
func newFake() *fakeBackend {
	v1 := json.RawMessage(`{"title":"NavigationTiming","type":"object","properties":{"action":{"type":"string"}},"required":["action"]}`)
	v2 := json.RawMessage(`{"title":"NavigationTiming","type":"object","properties":{"action":{"type":"string"},"duration":{"type":"integer"}},"required":["action"]}`)
	v3 := json.RawMessage(`{"title":"NavigationTiming","type":"object","properties":{"action":{"type":"string","enum":["click","view"]},"duration":{"type":"integer"}},"required":["action","duration"]}`)
	f := &fakeBackend{
		overview: inspect.Overview{
			Time: testNow,
			Streams: []inspect.StreamStats{
				{Topic: "eventlogging-client-side", Kind: "raw", Total: 12345, Rate: 40.5, Recent: []float64{1, 5, 3, 40.5}},
				{Topic: "eventlogging_EventError", Kind: "error", Total: 17, Rate: 0.5, Recent: []float64{0, 0, 1}},
				{Topic: "eventlogging_NavigationTiming", Kind: "schema", Total: 12000, Rate: 40, Recent: []float64{1, 2, 3}},
				{Topic: `eventlogging_<script>x</script>`, Kind: "schema", Total: 1, Rate: 0},
			},
			Groups: []inspect.GroupStats{
				{Group: "eventlogging-processor", State: "Stable", Members: 2, Lag: 7, Topics: []inspect.TopicGroupLag{{Topic: "eventlogging-client-side", Lag: 7}}},
				{Group: "eventlogging-sink-sql", State: "Empty", Members: 0, Lag: 900},
			},
			Roles: []inspect.RoleHealth{
				{Role: "intake", Healthy: true, Detail: "spool empty"},
				{Role: "sink-sql", Healthy: false, Detail: "no members"},
			},
			ValidRate:   40,
			InvalidRate: 0.5,
		},
		schemas: []inspect.SchemaSummary{
			{Name: "NavigationTiming", Type: "JSON", Versions: []int{1, 2, 3}, Latest: 3, LatestLabel: "12", Compatibility: "BACKWARD"},
			{Name: "Edit", Type: "AVRO", Versions: []int{1}, Latest: 1, LatestLabel: "20", Compatibility: "FULL"},
		},
		topics: []string{"eventlogging-client-side", "eventlogging_NavigationTiming"},
	}
	nav := inspect.SchemaDetail{SchemaSummary: f.schemas[0], Versions: []inspect.SchemaVersion{
		{Version: 1, ID: 10, Label: "10", Schema: v1},
		{Version: 2, ID: 11, Label: "11", Schema: v2},
		{Version: 3, ID: 12, Label: "12", Schema: v3, Example: json.RawMessage(`{"action":"click","duration":12}`)},
	}}
	edit := inspect.SchemaDetail{SchemaSummary: f.schemas[1], Versions: []inspect.SchemaVersion{
		{Version: 1, ID: 20, Label: "20", Schema: json.RawMessage(`"{\"type\":\"record\",\"name\":\"Edit\",\"fields\":[]}"`)},
	}}
	f.details = map[string]inspect.SchemaDetail{"NavigationTiming": nav, "Edit": edit}
	f.errs = []inspect.ErrorRecord{
		{
			UUID: "u-1", Time: testNow.Add(-5 * time.Second), Schema: "NavigationTiming", Revision: 12, Subject: "NavigationTiming", Label: "12",
			Code: "validation", Message: "event does not match its schema: <b>bad</b>",
			RawEvent:   `?%7B%22schema%22%3A%22NavigationTiming%22%7D;`,
			Event:      json.RawMessage(`{"schema":"NavigationTiming","revision":3,"event":{"action":"<img src=x onerror=alert(1)>","a/b":{"t~x":[1,2,{"deep":true}]}}}`),
			Errors:     []inspect.Violation{{Path: "/event/action", Message: "not one of click, view"}, {Path: "/event/duration", Message: "missing property duration"}},
			Replayable: true,
			// Replayed once, failed again: still replayable.
			Replay: &capsule.ReplayOutcome{Status: capsule.ReplayInvalid, Time: testNow.Add(-2 * time.Minute), Code: "validation", Message: "/event/action: not one of click, view"},
		},
		{
			UUID: "u-2", Time: testNow.Add(-time.Hour), Schema: "Edit", Revision: -1, Subject: "Edit", Code: "processor", Message: "cut", RawEvent: "…",
			Replayable: false,
		},
		{
			UUID: "u-3", Time: testNow.Add(-2 * time.Hour), Schema: "NavigationTiming", Revision: 11, Subject: "NavigationTiming", Label: "11", Code: "validation", Message: "done",
			Replayable: true, Replayed: true,
			Replay: &capsule.ReplayOutcome{Status: capsule.ReplayValid, Time: time.Date(2026, 3, 1, 10, 3, 42, 0, time.UTC), UUID: "b1c2"},
		},
	}
	return f
}

// withEventPlatform adds an Event Platform schema to f, as the registry
// holds it (subject analytics/edit_funnel, versions 1.0.0 and 1.1.0), and
// EventErrors as inspect reads them: e-1 of a registered version, e-2 of a
// version and e-3 of a legacy schema the registry does not have.
func withEventPlatform(f *fakeBackend) *fakeBackend {
	v1 := json.RawMessage(`{"title":"analytics/edit_funnel","type":"object","properties":{"action":{"type":"string"}}}`)
	v2 := json.RawMessage(`{"title":"analytics/edit_funnel","type":"object","properties":{"action":{"type":"string"},"page_id":{"type":"integer"}}}`)
	sum := inspect.SchemaSummary{Name: "analytics/edit_funnel", Type: "JSON", Versions: []int{1, 2}, Latest: 2, LatestLabel: "1.1.0", Compatibility: "BACKWARD"}
	f.schemas = append(f.schemas, sum)
	f.details[sum.Name] = inspect.SchemaDetail{SchemaSummary: sum, Versions: []inspect.SchemaVersion{
		{Version: 1, ID: 31, Label: "1.0.0", Schema: v1},
		{Version: 2, ID: 32, Label: "1.1.0", Schema: v2},
	}}
	f.errs = append(f.errs,
		inspect.ErrorRecord{
			UUID: "e-1", Time: testNow.Add(-3 * time.Hour), Schema: "/analytics/edit_funnel/1.0.0", Revision: -1,
			Subject: "analytics/edit_funnel", Label: "1.0.0", Code: "validation", Message: "/action: not one of init, save",
			Event: json.RawMessage(`{"$schema":"/analytics/edit_funnel/1.0.0","action":"explode"}`), Replayable: true,
		},
		inspect.ErrorRecord{
			UUID: "e-2", Time: testNow.Add(-4 * time.Hour), Schema: "/analytics/edit_funnel/9.9.9", Revision: -1,
			Subject: "analytics/edit_funnel", Label: "9.9.9", Code: "processor", Message: "unknown schema /analytics/edit_funnel/9.9.9",
			Replayable: true,
		},
		inspect.ErrorRecord{
			UUID: "e-3", Time: testNow.Add(-5 * time.Hour), Schema: "Nope", Revision: 2,
			Subject: "Nope", Label: "2", Code: "processor", Message: "unknown schema Nope/2", Replayable: true,
		},
	)
	return f
}

// newTestHandler builds a handler on f, failing the test on error.
func newTestHandler(t testing.TB, f Backend, cfg Config) *Handler {
	t.Helper()
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return testNow }
	}
	h, err := New(f, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return h
}

// get serves one GET through the handler.
func get(t testing.TB, h http.Handler, target string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, target, nil))
	return rec
}

// page serves a GET and parses the page, checking the status.
func page(t testing.TB, h http.Handler, target string, status int) (*elem, string) {
	t.Helper()
	rec := get(t, h, target)
	if rec.Code != status {
		t.Fatalf("GET %s: status %d, want %d\n%s", target, rec.Code, status, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("GET %s: Content-Type %q", target, ct)
	}
	return parseHTML(t, rec.Body.String()), rec.Body.String()
}
