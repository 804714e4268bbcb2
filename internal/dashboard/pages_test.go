package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/inspect"
)

func TestNewConfig(t *testing.T) {
	f := newFake()
	tests := []struct {
		name    string
		b       Backend
		cfg     Config
		wantErr string
	}{
		{"zero config", f, Config{}, ""},
		{"prefix", f, Config{Prefix: "/dashboard/"}, ""},
		{"nil backend", nil, Config{}, "nil backend"},
		{"relative prefix", f, Config{Prefix: "dashboard"}, "not an absolute URL path"},
		{"prefix with quote", f, Config{Prefix: `/d"x`}, "not an absolute URL path"},
		{"negative buffer", f, Config{TailBuffer: -1}, "negative tail buffer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := New(tt.b, tt.cfg)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if h.tailBuf != defaultTailBuffer {
					t.Errorf("tail buffer %d, want the default %d", h.tailBuf, defaultTailBuffer)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New: error %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestOverviewPage(t *testing.T) {
	h := newTestHandler(t, newFake(), Config{})
	doc, body := page(t, h, "/", http.StatusOK)

	if got := doc.one(t, "#valid-rate").Text(); got != "40.0/s" {
		t.Errorf("#valid-rate %q", got)
	}
	if got := doc.one(t, "#invalid-rate").attrs["data-value"]; got != "0.5" {
		t.Errorf("#invalid-rate data-value %q", got)
	}
	if got := doc.one(t, "#invalid-ratio").Text(); got != "1.23%" {
		t.Errorf("#invalid-ratio %q", got)
	}
	raw := doc.one(t, "tr.stream[data-topic=eventlogging-client-side]")
	if got := raw.one(t, ".total").Text(); got != "12345" {
		t.Errorf("raw total %q", got)
	}
	if got := raw.one(t, ".rate").Text(); got != "40.5/s" {
		t.Errorf("raw rate %q", got)
	}
	if got := raw.one(t, "td.spark svg polyline").attrs["points"]; got != sparkPoints([]float64{1, 5, 3, 40.5}) || got == "" {
		t.Errorf("sparkline points %q", got)
	}
	if n := len(doc.all("tr.stream")); n != 4 {
		t.Errorf("%d stream rows, want 4", n)
	}
	g := doc.one(t, "tr.group[data-group=eventlogging-processor]")
	if g.one(t, ".members").Text() != "2" || g.one(t, ".lag").Text() != "7" || g.one(t, ".state").Text() != "Stable" {
		t.Errorf("group row %q", g.Text())
	}
	if !doc.one(t, "li.role[data-role=intake]").hasClass("healthy") {
		t.Error("intake is not shown healthy")
	}
	down := doc.one(t, "li.role[data-role=sink-sql]")
	if !down.hasClass("unhealthy") || down.one(t, ".status").Text() != "down" {
		t.Errorf("sink-sql role %q", down.Text())
	}
	if doc.one(t, "nav#nav a.active").attrs["data-nav"] != "overview" {
		t.Error("overview is not the active navigation entry")
	}
	if !strings.Contains(body, "/static/overview.js?v=") {
		t.Error("the refresh script is not linked")
	}
	if strings.Contains(body, "<script>x</script>") {
		t.Error("a topic name reached the page unescaped")
	}
	if len(doc.all("#backend-error")) != 0 {
		t.Error("error box on a page that loaded")
	}
}

func TestSchemaPages(t *testing.T) {
	h := newTestHandler(t, newFake(), Config{Prefix: "/dashboard"})

	doc, _ := page(t, h, "/schemas", http.StatusOK)
	rows := doc.all("tr.schema")
	if len(rows) != 2 || rows[0].attrs["data-name"] != "Edit" {
		t.Fatalf("schema rows not sorted by name: %d rows", len(rows))
	}
	nav := doc.one(t, "tr.schema[data-name=NavigationTiming]")
	if nav.one(t, ".type").Text() != "JSON" || nav.one(t, ".versions").Text() != "3" ||
		nav.one(t, ".latest").Text() != "12" || nav.one(t, ".compat").Text() != "BACKWARD" {
		t.Errorf("schema row %q", nav.Text())
	}
	if href := nav.one(t, "td.name a").attrs["href"]; href != "/dashboard/schemas/NavigationTiming" {
		t.Errorf("schema link %q does not carry the prefix", href)
	}

	// Default: latest-1 against latest.
	doc, _ = page(t, h, "/schemas/NavigationTiming", http.StatusOK)
	diff := doc.one(t, "table#diff")
	if diff.attrs["data-a"] != "2" || diff.attrs["data-b"] != "3" {
		t.Errorf("default comparison v%s..v%s, want v2..v3", diff.attrs["data-a"], diff.attrs["data-b"])
	}
	if doc.one(t, "#compat").Text() != "BACKWARD" {
		t.Error("compatibility level not shown")
	}
	if n := len(doc.all("ul#versions li.version")); n != 3 {
		t.Errorf("%d versions listed, want 3", n)
	}
	if ex := doc.one(t, "pre#example").Text(); !strings.Contains(ex, `"action": "click"`) {
		t.Errorf("example %q", ex)
	}
	added := doc.all("table#diff td.right.added")
	removed := doc.all("table#diff td.left.removed")
	if len(added) == 0 || len(removed) == 0 {
		t.Fatalf("diff marks %d added and %d removed lines", len(added), len(removed))
	}
	var addedText []string
	for _, a := range added {
		addedText = append(addedText, a.Text())
	}
	if !strings.Contains(strings.Join(addedText, "\n"), `"enum": [`) {
		t.Errorf("added lines %q lack the new enum", addedText)
	}

	// Explicit versions.
	doc, _ = page(t, h, "/schemas/NavigationTiming?a=1&b=3", http.StatusOK)
	if d := doc.one(t, "table#diff"); d.attrs["data-a"] != "1" || d.attrs["data-b"] != "3" {
		t.Errorf("comparison v%s..v%s, want v1..v3", d.attrs["data-a"], d.attrs["data-b"])
	}

	// An Avro schema carried as a JSON string is unwrapped and shown.
	doc, _ = page(t, h, "/schemas/Edit", http.StatusOK)
	if txt := doc.one(t, "table#diff").Text(); !strings.Contains(txt, `"type": "record"`) {
		t.Errorf("Avro schema not shown: %q", txt)
	}

	// Failures are explained on the page.
	for _, tc := range []struct {
		target string
		status int
		want   string
	}{
		{"/schemas/Nope", http.StatusNotFound, "not found"},
		{"/schemas/NavigationTiming?a=9", http.StatusNotFound, "version 9"},
		{"/schemas/NavigationTiming?b=x", http.StatusBadRequest, "not a version number"},
	} {
		doc, _ := page(t, h, tc.target, tc.status)
		if got := doc.one(t, "#backend-error").Text(); !strings.Contains(got, tc.want) {
			t.Errorf("%s: error box %q, want %q", tc.target, got, tc.want)
		}
	}
}

func TestErrorsPage(t *testing.T) {
	f := newFake()
	h := newTestHandler(t, f, Config{})
	doc, body := page(t, h, "/errors", http.StatusOK)

	rows := doc.all("tr.error-row")
	if len(rows) != 3 {
		t.Fatalf("%d error rows, want 3", len(rows))
	}
	r1 := doc.one(t, "tr.error-row[data-uuid=u-1]")
	if box := r1.one(t, "input.replay-select"); box.attrs["value"] != "u-1" || hasAttr(box, "disabled") {
		t.Errorf("replayable row checkbox %v", box.attrs)
	}
	if r1.one(t, ".code").Text() != "validation" || r1.one(t, ".time").Text() != "5s ago" {
		t.Errorf("row u-1: %q", r1.Text())
	}
	if !strings.Contains(r1.one(t, ".message").Text(), "/event/action") {
		t.Error("violations are not listed in the row")
	}
	for uuid, tip := range map[string]string{"u-2": "Not replayable", "u-3": "Already replayed"} {
		box := doc.one(t, "tr.error-row[data-uuid="+uuid+"] input.replay-select")
		if !hasAttr(box, "disabled") || !strings.Contains(box.attrs["title"], tip) {
			t.Errorf("%s checkbox %v, want disabled with %q", uuid, box.attrs, tip)
		}
	}
	// What came of a replay, in words (issue 31).
	for uuid, want := range map[string]string{
		"u-1": "replayed 2026-03-01 11:58 UTC: failed again: /event/action: not one of click, view",
		"u-3": "replayed 2026-03-01 10:03 UTC: valid",
	} {
		if got := doc.one(t, "tr.error-row[data-uuid="+uuid+"] td.message .replay-outcome").Text(); got != want {
			t.Errorf("%s: replay shown as %q, want %q", uuid, got, want)
		}
	}
	if n := len(doc.all("tr.error-row[data-uuid=u-2] .replay-outcome")); n != 0 {
		t.Errorf("u-2, never replayed, shows %d replay outcomes", n)
	}
	if tip := doc.one(t, "tr.error-row[data-uuid=u-3] input.replay-select").attrs["title"]; tip != "Already replayed 2026-03-01 10:03 UTC: valid" {
		t.Errorf("u-3 checkbox title %q", tip)
	}
	doc.one(t, "#replay-button")
	doc.one(t, "#replay-result")
	if strings.Contains(body, "<b>bad</b>") {
		t.Error("an error message reached the page unescaped")
	}

	// The schema filter goes to the backend.
	doc, _ = page(t, h, "/errors?schema=Edit", http.StatusOK)
	if n := len(doc.all("tr.error-row")); n != 1 {
		t.Errorf("%d rows for schema Edit, want 1", n)
	}
	last := f.filters[len(f.filters)-1]
	if last.Schema != "Edit" || last.Limit != errorsLimit {
		t.Errorf("filter %+v", last)
	}
}

// minusOne is an unknown revision shown as if it were one: "revision -1",
// "r-1", "v-1", "Name/-1".
var minusOne = regexp.MustCompile(`(?i)\b(?:revision|rev|r|version|v)\s*[:#]?\s*-1\b|/-1\b`)

// TestSchemaVersionNames: Event Platform schemas show their versions
// (1.0.0), legacy schemas their revisions, never an unknown revision as
// "-1"; an EventError's schema links to the page of the version it named
// when the registry has it, to the subject's page when it has only the
// subject, and nowhere when it has neither (issue 31: the link was a 404).
func TestSchemaVersionNames(t *testing.T) {
	h := newTestHandler(t, withEventPlatform(newFake()), Config{Prefix: "/dashboard"})
	noMinusOne := func(target, body string) {
		t.Helper()
		if m := minusOne.FindString(body); m != "" {
			t.Errorf("%s shows %q:\n%s", target, m, body)
		}
	}

	doc, body := page(t, h, "/schemas", http.StatusOK)
	noMinusOne("/schemas", body)
	if got := doc.one(t, `tr.schema[data-name=analytics/edit_funnel] td.latest`).Text(); got != "1.1.0" {
		t.Errorf("analytics/edit_funnel latest %q, want 1.1.0", got)
	}

	doc, body = page(t, h, "/schemas/analytics%2Fedit_funnel", http.StatusOK)
	noMinusOne("/schemas/analytics%2Fedit_funnel", body)
	v1 := doc.one(t, "ul#versions li.version[data-version=1]")
	if v1.attrs["data-label"] != "1.0.0" || !strings.HasPrefix(v1.Text(), "1.0.0") {
		t.Errorf("version 1: label %q, text %q", v1.attrs["data-label"], v1.Text())
	}
	if got := doc.one(t, "#latest").Text(); got != "version 1.1.0" {
		t.Errorf("latest %q", got)
	}
	if got := doc.one(t, "table#diff thead").Text(); !strings.Contains(got, "1.0.0") || !strings.Contains(got, "1.1.0") {
		t.Errorf("diff header %q does not name the versions", got)
	}
	doc, _ = page(t, h, "/schemas/NavigationTiming?b=1", http.StatusOK)
	if got := doc.one(t, "ul#versions li.version[data-version=1] a").Text(); got != "revision 10" {
		t.Errorf("legacy version 1 shown as %q, want revision 10", got)
	}

	doc, body = page(t, h, "/errors", http.StatusOK)
	noMinusOne("/errors", body)
	if got := doc.one(t, "tr.error-row[data-uuid=e-1] td.schema").Text(); got != "analytics/edit_funnel version 1.0.0" {
		t.Errorf("errors list: e-1 schema %q", got)
	}
	if got := doc.one(t, "tr.error-row[data-uuid=u-2] td.schema").Text(); got != "Edit" {
		t.Errorf("errors list: u-2 (revision unknown) schema %q", got)
	}

	for _, tc := range []struct {
		uuid, href, text string
	}{
		{"u-1", "/dashboard/schemas/NavigationTiming?b=3", "NavigationTiming revision 12"},
		{"u-2", "/dashboard/schemas/Edit", "Edit"},
		{"e-1", "/dashboard/schemas/analytics%2Fedit_funnel?b=1", "analytics/edit_funnel version 1.0.0"},
		{"e-2", "/dashboard/schemas/analytics%2Fedit_funnel", "analytics/edit_funnel version 9.9.9 (version 9.9.9 is not in the schema registry)"},
		{"e-3", "", "Nope revision 2 (not in the schema registry)"},
	} {
		target := "/errors/" + tc.uuid
		doc, body := page(t, h, target, http.StatusOK)
		noMinusOne(target, body)
		dd := doc.one(t, "#error-schema")
		if got := strings.Join(strings.Fields(dd.Text()), " "); !strings.HasPrefix(got, tc.text) {
			t.Errorf("%s: schema %q, want %q", target, got, tc.text)
		}
		links := dd.all("a")
		switch {
		case tc.href == "" && len(links) > 0:
			t.Errorf("%s: schema links to %s, which the registry does not have", target, links[0].attrs["href"])
		case tc.href == "":
		case len(links) != 1 || links[0].attrs["href"] != tc.href:
			var hrefs []string
			for _, a := range links {
				hrefs = append(hrefs, a.attrs["href"])
			}
			t.Errorf("%s: schema links to %q, want %s", target, hrefs, tc.href)
		default:
			// The link leads somewhere.
			page(t, h, strings.TrimPrefix(tc.href, "/dashboard"), http.StatusOK)
		}
	}
}

func hasAttr(e *elem, name string) bool {
	_, ok := e.attrs[name]
	return ok
}

func TestErrorDetailPage(t *testing.T) {
	h := newTestHandler(t, newFake(), Config{})
	doc, body := page(t, h, "/errors/u-1", http.StatusOK)
	if doc.one(t, "#error-uuid").Text() != "u-1" || doc.one(t, "#error-code").Text() != "validation" {
		t.Error("uuid or code missing")
	}
	if !strings.Contains(doc.one(t, "#error-message").Text(), "<b>bad</b>") || strings.Contains(body, "<b>bad</b>") {
		t.Error("message not shown, or not escaped")
	}
	if doc.one(t, "pre#raw-event").Text() != `?%7B%22schema%22%3A%22NavigationTiming%22%7D;` {
		t.Error("raw event not shown as it is")
	}
	action := doc.one(t, "pre#event-json span[data-path=/event/action]")
	if !action.hasClass("violation") || !strings.Contains(action.attrs["title"], "not one of click, view") {
		t.Errorf("/event/action: class %q title %q", action.attrs["class"], action.attrs["title"])
	}
	parent := doc.one(t, "pre#event-json span[data-path=/event]")
	if !parent.hasClass("violation") || !parent.hasClass("violation-missing") || !strings.Contains(parent.attrs["title"], "missing property duration") {
		t.Errorf("/event (missing duration): class %q title %q", parent.attrs["class"], parent.attrs["title"])
	}
	if strings.Contains(body, "<img src=x") {
		t.Error("event value reached the page unescaped")
	}
	if n := len(doc.all("table#violations tr.violation-row")); n != 2 {
		t.Errorf("%d violations listed, want 2", n)
	}

	if got, want := doc.one(t, "#error-replay").Text(), "replayed 2026-03-01 11:58 UTC: failed again: /event/action: not one of click, view"; got != want {
		t.Errorf("#error-replay %q, want %q", got, want)
	}
	doc, _ = page(t, h, "/errors/u-3", http.StatusOK)
	if got, want := doc.one(t, "#error-replay").Text(), "replayed 2026-03-01 10:03 UTC: valid"; got != want {
		t.Errorf("u-3: #error-replay %q, want %q", got, want)
	}

	doc, _ = page(t, h, "/errors/nope", http.StatusNotFound)
	if !strings.Contains(doc.one(t, "#backend-error").Text(), "not among the latest") {
		t.Error("missing record not explained")
	}
	// Without an extracted event the page says so.
	doc, _ = page(t, h, "/errors/u-2", http.StatusOK)
	if len(doc.all("pre#event-json")) != 0 || !strings.Contains(doc.Text(), "could not be extracted") {
		t.Error("missing event not explained")
	}
	if box := doc.one(t, "input.replay-select"); !hasAttr(box, "disabled") {
		t.Error("non-replayable record has an enabled checkbox")
	}
	if got := doc.one(t, "#error-replay").Text(); got != "never replayed" {
		t.Errorf("u-2: #error-replay %q, want never replayed", got)
	}
}

// TestReplayText: every replay outcome is said in words.
func TestReplayText(t *testing.T) {
	at := time.Date(2026, 12, 4, 10, 3, 59, 0, time.FixedZone("CET", 3600))
	tests := []struct {
		o    *capsule.ReplayOutcome
		want string
	}{
		{nil, ""},
		{&capsule.ReplayOutcome{Status: capsule.ReplayValid, Time: at}, "replayed 2026-12-04 09:03 UTC: valid"},
		{&capsule.ReplayOutcome{Status: capsule.ReplayInvalid, Time: at, Code: "processor", Message: "unknown schema X revision 9"}, "replayed 2026-12-04 09:03 UTC: failed again: unknown schema X revision 9"},
		{&capsule.ReplayOutcome{Status: capsule.ReplayInvalid, Time: at, Code: "processor"}, "replayed 2026-12-04 09:03 UTC: failed again: processor"},
		{&capsule.ReplayOutcome{Status: capsule.ReplayForced, Time: at}, "replayed 2026-12-04 09:03 UTC: forced (closed whatever the outcome)"},
		{&capsule.ReplayOutcome{Status: capsule.ReplayForced, Time: at, Message: "still bad"}, "replayed 2026-12-04 09:03 UTC: forced, failed again: still bad"},
		{&capsule.ReplayOutcome{Status: capsule.ReplayForced}, "replayed: forced (closed whatever the outcome)"},
	}
	for _, tt := range tests {
		if got := replayText(tt.o); got != tt.want {
			t.Errorf("replayText(%+v) = %q, want %q", tt.o, got, tt.want)
		}
	}
}

func TestTailPage(t *testing.T) {
	h := newTestHandler(t, newFake(), Config{})
	doc, body := page(t, h, "/tail?topic=eventlogging_NavigationTiming", http.StatusOK)
	opts := doc.all("select#topic option")
	if len(opts) != 3 { // the prompt and two topics
		t.Fatalf("%d topic options, want 3", len(opts))
	}
	sel := doc.one(t, "select#topic option[value=eventlogging_NavigationTiming]")
	if !hasAttr(sel, "selected") {
		t.Error("?topic= is not preselected")
	}
	doc.one(t, "#pause")
	doc.one(t, "input#filter")
	doc.one(t, "tbody#tail-rows")
	if doc.one(t, "table#tail").attrs["data-rows"] != "200" {
		t.Error("row bound not passed to the script")
	}
	if !strings.Contains(body, "/static/tail.js?v=") {
		t.Error("tail script not linked")
	}
}

func TestBackendFailuresShowAnErrorBox(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		status int
		want   string
	}{
		{"unavailable", errors.New("kafka: connection refused"), http.StatusBadGateway, "connection refused"},
		{"timeout", fmt.Errorf("list groups: %w", context.DeadlineExceeded), http.StatusGatewayTimeout, "did not answer within 2s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			f.fail = tc.err
			h := newTestHandler(t, f, Config{})
			for _, p := range []string{"/", "/schemas", "/schemas/NavigationTiming", "/errors", "/errors/u-1", "/tail"} {
				doc, _ := page(t, h, p, tc.status)
				box := doc.one(t, "#backend-error")
				if !strings.Contains(box.Text(), tc.want) || box.one(t, ".error-title").Text() == "" {
					t.Errorf("%s: error box %q, want %q", p, box.Text(), tc.want)
				}
				doc.one(t, "nav#nav")
			}
			for _, p := range []string{"/api/overview", "/api/schemas", "/api/errors", "/api/topics"} {
				rec := get(t, h, p)
				if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.want) {
					t.Errorf("%s: %d %s", p, rec.Code, rec.Body)
				}
			}
		})
	}
}

func TestSlowBackendIsCutOff(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the backend timeout")
	}
	h := newTestHandler(t, &slowBackend{fakeBackend: newFake()}, Config{})
	start := time.Now()
	doc, _ := page(t, h, "/", http.StatusGatewayTimeout)
	if took := time.Since(start); took > backendTimeout+time.Second {
		t.Errorf("page took %s with a hung backend", took)
	}
	doc.one(t, "#backend-error")
}

// slowBackend's Overview hangs until its context ends.
type slowBackend struct{ *fakeBackend }

func (s *slowBackend) Overview(ctx context.Context) (inspect.Overview, error) {
	<-ctx.Done()
	return inspect.Overview{}, fmt.Errorf("overview: %w", ctx.Err())
}

func TestSecurityHeadersAndStatic(t *testing.T) {
	h := newTestHandler(t, newFake(), Config{})
	for _, p := range []string{"/", "/api/overview", "/static/dashboard.css", "/nope"} {
		rec := get(t, h, p)
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
			t.Errorf("%s: CSP %q", p, csp)
		}
		if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", p)
		}
	}
	for name, ctype := range map[string]string{"dashboard.css": "text/css", "overview.js": "text/javascript", "tail.js": "text/javascript", "errors.js": "text/javascript"} {
		rec := get(t, h, "/static/"+name)
		if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), ctype) || rec.Body.Len() == 0 {
			t.Errorf("%s: %d %q", name, rec.Code, rec.Header().Get("Content-Type"))
		}
		req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/static/"+name, nil)
		req.Header.Set("If-None-Match", rec.Header().Get("ETag"))
		rec2 := httptest.NewRecorder()
		h.ServeHTTP(rec2, req)
		if rec2.Code != http.StatusNotModified {
			t.Errorf("%s with its ETag: %d, want 304", name, rec2.Code)
		}
	}
	if rec := get(t, h, "/static/nope.js"); rec.Code != http.StatusNotFound {
		t.Errorf("missing static file: %d", rec.Code)
	}
	doc, _ := page(t, h, "/nope", http.StatusNotFound)
	doc.one(t, "#backend-error")
	if rec := get(t, h, "/api/nope"); rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), `"error"`) {
		t.Errorf("/api/nope: %d %s", rec.Code, rec.Body)
	}
}

func TestMountedUnderPrefix(t *testing.T) {
	h := newTestHandler(t, newFake(), Config{Prefix: "/dashboard"})
	mux := http.NewServeMux()
	mux.Handle("/dashboard/", http.StripPrefix("/dashboard", h))
	mux.Handle("/dashboard", http.StripPrefix("/dashboard", h))

	rec := get(t, mux, "/dashboard")
	if rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "/dashboard/" {
		t.Errorf("/dashboard: %d to %q", rec.Code, rec.Header().Get("Location"))
	}
	doc, body := page(t, mux, "/dashboard/", http.StatusOK)
	if href := doc.one(t, "nav#nav a[data-nav=schemas]").attrs["href"]; href != "/dashboard/schemas" {
		t.Errorf("nav link %q", href)
	}
	if doc.one(t, "body").attrs["data-prefix"] != "/dashboard" {
		t.Error("body[data-prefix] not set")
	}
	if !strings.Contains(body, `href="/dashboard/static/dashboard.css?v=`) {
		t.Error("stylesheet link lacks the prefix")
	}
	if rec := get(t, mux, "/dashboard/static/tail.js"); rec.Code != http.StatusOK {
		t.Errorf("static under prefix: %d", rec.Code)
	}
}

func TestPagesAreFast(t *testing.T) {
	f := manySchemas(100)
	h := newTestHandler(t, f, Config{})
	for _, p := range []string{"/schemas", "/"} {
		get(t, h, p) // warm up
		start := time.Now()
		rec := get(t, h, p)
		if took := time.Since(start); took > 500*time.Millisecond || rec.Code != http.StatusOK {
			t.Errorf("%s: %d in %s, want 200 in < 500ms", p, rec.Code, took)
		}
	}
	doc, _ := page(t, h, "/schemas", http.StatusOK)
	if n := len(doc.all("tr.schema")); n != 100 {
		t.Errorf("%d schema rows, want 100", n)
	}
}

// manySchemas is a backend with n schemas and a busy overview.
func manySchemas(n int) *fakeBackend {
	f := newFake()
	f.schemas = nil
	for i := range n {
		f.schemas = append(f.schemas, inspect.SchemaSummary{
			Name: fmt.Sprintf("Schema%03d", i), Type: "JSON", Versions: []int{1, 2, 3, 4}, Latest: 4, Compatibility: "BACKWARD",
		})
	}
	f.overview.Streams = nil
	for i := range 60 {
		recent := make([]float64, 60)
		for j := range recent {
			recent[j] = float64((i*j)%17) * 1.5
		}
		f.overview.Streams = append(f.overview.Streams, inspect.StreamStats{
			Topic: fmt.Sprintf("eventlogging_Schema%03d", i), Kind: "schema", Total: int64(i) * 1000, Rate: float64(i), Recent: recent,
		})
	}
	return f
}

func BenchmarkSchemasPage(b *testing.B) {
	benchmarkPage(b, "/schemas")
}

func BenchmarkOverviewPage(b *testing.B) {
	benchmarkPage(b, "/")
}

func benchmarkPage(b *testing.B, target string) {
	h := newTestHandler(b, manySchemas(100), Config{})
	req := httptest.NewRequestWithContext(b.Context(), http.MethodGet, target, nil)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d", rec.Code)
		}
	}
}
