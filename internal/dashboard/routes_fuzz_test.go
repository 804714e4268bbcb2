package dashboard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// FuzzRoutes sends arbitrary methods, paths and queries to the dashboard
// (pages, API, static files) over the fake backend: never a panic, never a
// 5xx (the fake backend does not fail), never a file from outside the
// embedded assets. The live tail streams until the client leaves, so it
// runs with a short deadline.
func FuzzRoutes(f *testing.F) {
	for _, p := range []string{
		"/", "/schemas", "/schemas/NavigationTiming", "/schemas/..%2F..%2Fgo.mod", "/errors?schema=x%27%3B%20DROP%20TABLE%20y%3B%20--",
		"/errors/%2e%2e", "/static/..%2F..%2Fgo.mod", "/static/dashboard.css?v=1", "/api/overview", "/api/schemas/%00",
		"/api/errors?limit=99999999999999999999&since=2026-13-01T00:00:00Z", "/api/errors?until=9999-12-31T23:59:59Z",
		"/api/tail?topic=eventlogging_EventError", "/api/replay", "/api/nope", "/tail?topic=..", "//", "/static/",
	} {
		f.Add(http.MethodGet, p)
	}
	f.Add(http.MethodDelete, "/")
	f.Add("PATCH", "/api/overview")
	f.Add(http.MethodPost, "/api/replay")
	f.Add("BREW", "/nope")
	h := newTestHandler(f, newFake(), Config{})
	f.Fuzz(func(t *testing.T, method, target string) {
		if !strings.HasPrefix(target, "/") || len(target) > 4000 {
			return
		}
		if _, err := url.ParseRequestURI(target); err != nil || strings.ContainsAny(target, " \t\r\n#") {
			return // no server passes it on
		}
		if method == "" || strings.ContainsFunc(method, func(r rune) bool { return r <= ' ' || r >= 0x7f || strings.ContainsRune(`()<>@,;:\"/[]?={}`, r) }) {
			return // not a token: net/http answers 400 itself
		}
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, method, target, strings.NewReader("uuid=a")))
		if rec.Code < 200 || rec.Code >= 500 {
			t.Fatalf("%s %s: status %d: %.300s", method, target, rec.Code, rec.Body)
		}
		if strings.Contains(rec.Body.String(), "module github.com/eventlogging") {
			t.Fatalf("%s %s: served go.mod", method, target)
		}
	})
}

// TestMethodNotAllowed: another method than GET on a page or API endpoint
// is a 405 with an Allow header; on a path with nothing it stays a 404.
func TestMethodNotAllowed(t *testing.T) {
	h := newTestHandler(t, newFake(), Config{})
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{http.MethodDelete, "/", 405},
		{"PATCH", "/schemas/NavigationTiming", 405},
		{http.MethodPost, "/api/overview", 405},
		{http.MethodPut, "/static/dashboard.css", 405},
		{http.MethodDelete, "/nope", 404},
		{http.MethodPost, "/api/nope", 404},
		{http.MethodGet, "/static/..%2F..%2Fgo.mod", 404},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), c.method, c.path, nil))
		if rec.Code != c.status {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, rec.Code, c.status)
		}
		if c.status == 405 && rec.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("%s %s: Allow %q", c.method, c.path, rec.Header().Get("Allow"))
		}
	}
}
