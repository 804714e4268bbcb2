package dashboard

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/eventlogging/eventlogging/internal/inspect"
)

// decodeJSON checks an API answer's status and type and decodes it.
func decodeJSON(t *testing.T, rec *httptest.ResponseRecorder, status int, v any) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status %d, want %d: %s", rec.Code, status, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
		t.Fatalf("decode %s: %v", rec.Body, err)
	}
}

func TestJSONAPI(t *testing.T) {
	f := newFake()
	h := newTestHandler(t, f, Config{})

	var o inspect.Overview
	decodeJSON(t, get(t, h, "/api/overview"), http.StatusOK, &o)
	if len(o.Streams) != 4 || o.ValidRate != 40 {
		t.Errorf("overview %+v", o)
	}

	var list []inspect.SchemaSummary
	decodeJSON(t, get(t, h, "/api/schemas"), http.StatusOK, &list)
	if len(list) != 2 {
		t.Errorf("%d schemas", len(list))
	}

	var d inspect.SchemaDetail
	decodeJSON(t, get(t, h, "/api/schemas/NavigationTiming"), http.StatusOK, &d)
	if len(d.Versions) != 3 || d.Compatibility != "BACKWARD" {
		t.Errorf("schema %+v", d)
	}
	var apiErr apiError
	decodeJSON(t, get(t, h, "/api/schemas/Nope"), http.StatusNotFound, &apiErr)
	if !strings.Contains(apiErr.Error, "not found") {
		t.Errorf("error %q", apiErr.Error)
	}

	var recs []inspect.ErrorRecord
	decodeJSON(t, get(t, h, "/api/errors?schema=NavigationTiming&limit=1&since=2026-03-01T00:00:00Z"), http.StatusOK, &recs)
	if len(recs) != 1 || recs[0].UUID != "u-1" {
		t.Errorf("errors %+v", recs)
	}
	flt := f.filters[len(f.filters)-1]
	if flt.Schema != "NavigationTiming" || flt.Limit != 1 || flt.Since.IsZero() || !flt.Until.IsZero() {
		t.Errorf("filter %+v", flt)
	}
	for _, q := range []string{"limit=0", "limit=5000", "limit=x", "since=yesterday"} {
		decodeJSON(t, get(t, h, "/api/errors?"+q), http.StatusBadRequest, &apiErr)
	}

	// Empty lists are [] rather than null.
	decodeJSON(t, get(t, h, "/api/errors?schema=None"), http.StatusOK, &recs)
	if rec := get(t, h, "/api/errors?schema=None"); strings.TrimSpace(rec.Body.String()) != "[]" {
		t.Errorf("empty list answered %q", rec.Body)
	}

	var topics []string
	decodeJSON(t, get(t, h, "/api/topics"), http.StatusOK, &topics)
	if !slices.Equal(topics, f.topics) {
		t.Errorf("topics %q", topics)
	}
}

// post serves one POST through the handler.
func post(t *testing.T, h http.Handler, ctype, body string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/api/replay", strings.NewReader(body))
	req.Header.Set("Content-Type", ctype)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestReplay(t *testing.T) {
	const (
		jsonType = "application/json"
		formType = "application/x-www-form-urlencoded"
	)
	body := `{"uuids":["u-1","u-2","u-1"]}`
	form := url.Values{"uuid": {"u-1", "u-3"}}
	tests := []struct {
		name   string
		ctype  string
		body   string
		hdr    map[string]string
		status int
		want   []string // uuids the backend got
	}{
		{"JSON", jsonType, body, nil, http.StatusOK, []string{"u-1", "u-2"}},
		{"form", formType, form.Encode(), nil, http.StatusOK, []string{"u-1", "u-3"}},
		{"form with uuids", formType, url.Values{"uuids": {"u-4"}, "uuid": {"u-4", "u-5"}}.Encode(), nil, http.StatusOK, []string{"u-4", "u-5"}},
		{"bad body", jsonType, `{`, nil, http.StatusBadRequest, nil},
		{"no uuids", jsonType, `{"uuids":[]}`, nil, http.StatusBadRequest, nil},
		{"other media type", "text/plain", "u-1", nil, http.StatusBadRequest, nil},
		{"cross-site form", formType, form.Encode(), map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden, nil},
		{"same-origin fetch", jsonType, body, map[string]string{"Sec-Fetch-Site": "same-origin"}, http.StatusOK, []string{"u-1", "u-2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			h := newTestHandler(t, f, Config{})
			rec := post(t, h, tt.ctype, tt.body, tt.hdr)
			if tt.status != http.StatusOK {
				var e apiError
				decodeJSON(t, rec, tt.status, &e)
				if e.Error == "" {
					t.Error("no error message")
				}
				if len(f.replays) != 0 {
					t.Errorf("backend replayed %v", f.replays)
				}
				return
			}
			var res inspect.ReplayResult
			decodeJSON(t, rec, http.StatusOK, &res)
			if len(f.replays) != 1 || !slices.Equal(f.replays[0], tt.want) {
				t.Fatalf("backend got %v, want %v", f.replays, tt.want)
			}
			if res.Replayed+res.Skipped != len(tt.want) {
				t.Errorf("result %+v", res)
			}
		})
	}
}

func TestReplayMethod(t *testing.T) {
	h := newTestHandler(t, newFake(), Config{})
	if rec := get(t, h, "/api/replay"); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET /api/replay: %d", rec.Code)
	}
}
