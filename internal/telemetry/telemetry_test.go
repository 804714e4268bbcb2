package telemetry

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestWrapLabelsByRoutePattern(t *testing.T) {
	reg := NewRegistry()
	m := NewHTTPMetrics(reg)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(rw http.ResponseWriter, _ *http.Request) { rw.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("GET /stream", func(rw http.ResponseWriter, _ *http.Request) {
		if _, ok := rw.(http.Flusher); !ok {
			t.Error("the wrapped writer lost http.Flusher (server-sent events need it)")
		}
		_, _ = io.WriteString(rw, "x")
	})
	srv := httptest.NewServer(m.Wrap("test", mux))
	defer srv.Close()
	for _, p := range []string{"/items/1", "/items/2", "/items/3?secret=1", "/stream", "/nope"} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+p, nil)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	rec := httptest.NewRecorder()
	Handler(reg).ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`eventlogging_http_requests_total{code="204",handler="test",route="GET /items/{id}"} 3`,
		`eventlogging_http_requests_total{code="200",handler="test",route="GET /stream"} 1`,
		`eventlogging_http_requests_total{code="404",handler="test",route="unmatched"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics page lacks %s", want)
		}
	}
	// Raw URLs never become labels.
	if strings.Contains(body, "/items/1") || strings.Contains(body, "secret") {
		t.Errorf("a raw URL became a label:\n%s", body)
	}
	if !strings.Contains(body, "go_goroutines") || !strings.Contains(body, `eventlogging_http_request_duration_seconds_count{handler="test",route="GET /items/{id}"} 3`) {
		t.Errorf("metrics page lacks the runtime or HTTP metrics:\n%s", body)
	}
}
