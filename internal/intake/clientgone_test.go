package intake

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestClientGoneIsNoRefusal: a client that disconnects while its
// synchronous POST is being written is neither answered 503 nor logged as
// a refusal (a sign of overload an operator would chase); it is counted as
// client_gone. A real refusal still is one.
func TestClientGoneIsNoRefusal(t *testing.T) {
	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	ti := newTestIntake(t, Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	ti.srv.cfg.Metrics = NewMetrics(reg, ti.writer)

	for _, route := range []struct{ name, method, target, body string }{
		{"sync", http.MethodPost, "/v1/events", genericCapsule},
		{"hasty", http.MethodPost, "/v1/events?hasty=true", genericCapsule},
	} {
		ctx, cancel := context.WithCancel(t.Context())
		cancel() // the client is gone before the events are written
		req := httptest.NewRequestWithContext(ctx, route.method, route.target, strings.NewReader(route.body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		ti.srv.ServeHTTP(rec, req)
		if rec.Code == http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "" {
			t.Errorf("%s: a disconnected client was answered %d (Retry-After %q)", route.name, rec.Code, rec.Header().Get("Retry-After"))
		}
	}
	if strings.Contains(logs.String(), "refusing events") {
		t.Errorf("a disconnected client was logged as a refusal:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "client disconnected before its events were acknowledged") {
		t.Errorf("no debug line for the disconnected client:\n%s", logs.String())
	}
	if got := counterValue(t, ti.srv.cfg.Metrics.rejected.WithLabelValues("post", reasonClientGone)); got != 1 {
		t.Errorf("client_gone count for post = %v, want 1", got)
	}
	if got := counterValue(t, ti.srv.cfg.Metrics.rejected.WithLabelValues("post", reasonOverload)); got != 0 {
		t.Errorf("overload count = %v, want 0", got)
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
