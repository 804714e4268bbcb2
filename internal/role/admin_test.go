package role

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/dashboard"
	"github.com/eventlogging/eventlogging/internal/httpauth"
	"github.com/eventlogging/eventlogging/internal/inspect"
)

// countingBackend counts the dashboard's calls that read EventErrors,
// replay them or tail a topic; the others are not used here.
type countingBackend struct {
	dashboard.Backend
	errors, replays, tails atomic.Int64
}

func (b *countingBackend) Errors(context.Context, inspect.ErrorFilter) ([]inspect.ErrorRecord, error) {
	b.errors.Add(1)
	return nil, nil
}

func (b *countingBackend) Replay(_ context.Context, uuids []string, _ inspect.ReplayOptions) (inspect.ReplayResult, error) {
	b.replays.Add(1)
	return inspect.ReplayResult{Replayed: len(uuids)}, nil
}

func (b *countingBackend) Topics(context.Context) ([]string, error) {
	return []string{"eventlogging_Foo"}, nil
}

func (b *countingBackend) Tail(context.Context, string, func(inspect.TailEvent) error) error {
	b.tails.Add(1)
	return nil
}

// TestAdminRoutesHosts (issue 30, finding 5): with the default
// configuration, a page whose name was re-pointed at 127.0.0.1 (DNS
// rebinding: Host and Origin rebind.evil.example, from loopback) gets 421
// naming security.allowed_hosts from the replay, the errors API and the
// live tail, and the registry's guard refuses its DELETE; a host listed in
// security.allowed_hosts, the host of the listen address and an address
// pass; a cross-site fetch of the live tail is refused (403).
func TestAdminRoutesHosts(t *testing.T) {
	type call struct{ method, path, body string }
	replay := call{"POST", "/dashboard/api/replay", `{"uuids":["u-1"]}`}
	errorsAPI := call{"GET", "/dashboard/api/errors", ""}
	tail := call{"GET", "/dashboard/api/tail?topic=eventlogging_Foo", ""}
	serve := func(t *testing.T, c config.Config, listen string) (*countingBackend, func(call, string, map[string]string) *httptest.ResponseRecorder) {
		t.Helper()
		b := &countingBackend{}
		stop := make(chan struct{})
		t.Cleanup(func() { close(stop) })
		h, err := dashboardHandler(b, c, "/dashboard", listen, stop, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		h = http.StripPrefix("/dashboard", h)
		return b, func(cl call, host string, header map[string]string) *httptest.ResponseRecorder {
			var body *strings.Reader
			if cl.body != "" {
				body = strings.NewReader(cl.body)
			}
			var r *http.Request
			if body != nil {
				r = httptest.NewRequestWithContext(t.Context(), cl.method, "http://"+host+cl.path, body)
				r.Header.Set("Content-Type", "application/json")
			} else {
				r = httptest.NewRequestWithContext(t.Context(), cl.method, "http://"+host+cl.path, nil)
			}
			r.RemoteAddr = "127.0.0.1:40000"
			for k, v := range header {
				r.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			return rec
		}
	}
	rebound := map[string]string{"Origin": "http://rebind.evil.example:8090", "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"}

	t.Run("default", func(t *testing.T) {
		c := config.Default()
		b, do := serve(t, c, c.Dashboard.Listen)
		for _, cl := range []call{replay, errorsAPI, tail} {
			rec := do(cl, "rebind.evil.example:8090", rebound)
			if rec.Code != http.StatusMisdirectedRequest || !strings.Contains(rec.Body.String(), "security.allowed_hosts") || !strings.Contains(rec.Body.String(), `\"rebind.evil.example:8090\"`) {
				t.Errorf("d: %s %s for rebind.evil.example: %d %s, want 421 naming security.allowed_hosts and the host", cl.method, cl.path, rec.Code, rec.Body)
			}
		}
		if n := b.errors.Load() + b.replays.Load() + b.tails.Load(); n != 0 {
			t.Errorf("d: the rebound page reached the backend %d times", n)
		}
		// The registry's writes: a DELETE of a subject.
		g, err := registryGuard(c, c.Registry.Listen, "http://127.0.0.1:8081")
		if err != nil {
			t.Fatal(err)
		}
		del := httptest.NewRequestWithContext(t.Context(), "DELETE", "http://rebind.evil.example:8081/subjects/Foo", nil)
		del.RemoteAddr = "127.0.0.1:40000"
		del.Header.Set("Origin", "http://rebind.evil.example:8081")
		var re *httpauth.RefusedError
		if err := g.Check(del); !errors.As(err, &re) || re.Status != http.StatusMisdirectedRequest || !strings.Contains(err.Error(), "security.allowed_hosts") {
			t.Errorf("d: registry DELETE for rebind.evil.example: %v, want a 421 refusal", err)
		}
		// Loopback names and addresses pass.
		for _, host := range []string{"localhost:8090", "127.0.0.1:8090", "[::1]:8090"} {
			if rec := do(errorsAPI, host, map[string]string{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"}); rec.Code != http.StatusOK {
				t.Errorf("%s: %d %s", host, rec.Code, rec.Body)
			}
		}
		// A cross-site page cannot start a live tail (nor read errors).
		for _, cl := range []call{tail, errorsAPI} {
			if rec := do(cl, "localhost:8090", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors", "Origin": "https://evil.example"}); rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "cross-origin") {
				t.Errorf("cross-site %s: %d %s, want 403", cl.path, rec.Code, rec.Body)
			}
		}
		if n := b.tails.Load(); n != 0 {
			t.Errorf("a cross-site page started %d live tails", n)
		}
	})

	t.Run("allowed hosts", func(t *testing.T) {
		c := config.Default()
		c.Security.AllowedHosts = []string{"dashboard.example.org"}
		b, do := serve(t, c, "ops-dash.internal:8090")
		same := map[string]string{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"}
		for _, host := range []string{"dashboard.example.org", "ops-dash.internal:8090"} {
			same["Origin"] = "http://" + host
			if rec := do(replay, host, same); rec.Code != http.StatusOK {
				t.Errorf("e: replay for %s: %d %s", host, rec.Code, rec.Body)
			}
		}
		if b.replays.Load() != 2 {
			t.Errorf("e: %d replays, want 2", b.replays.Load())
		}
		// The list replaces the default: localhost is now refused.
		if rec := do(errorsAPI, "localhost:8090", nil); rec.Code != http.StatusMisdirectedRequest {
			t.Errorf("localhost, not listed: %d %s", rec.Code, rec.Body)
		}
		g, err := registryGuard(c, ":8081", "http://registry-1.internal:8081")
		if err != nil {
			t.Fatal(err)
		}
		for _, host := range []string{"dashboard.example.org", "registry-1.internal:8081"} {
			r := httptest.NewRequestWithContext(t.Context(), "DELETE", "http://"+host+"/subjects/Foo", nil)
			r.RemoteAddr = "127.0.0.1:40000"
			if err := g.Check(r); err != nil {
				t.Errorf("e: registry DELETE for %s: %v", host, err)
			}
		}
	})

	t.Run("off", func(t *testing.T) {
		c := config.Default()
		c.Security.AllowedHosts = []string{"*"}
		_, do := serve(t, c, c.Dashboard.Listen)
		if rec := do(errorsAPI, "rebind.evil.example:8090", rebound); rec.Code != http.StatusOK {
			t.Errorf(`allowed_hosts ["*"]: %d %s`, rec.Code, rec.Body)
		}
	})
}
