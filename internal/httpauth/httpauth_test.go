package httpauth

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

func prefixes(s ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(s))
	for i, p := range s {
		out[i] = netip.MustParsePrefix(p)
	}
	return out
}

func TestGuard(t *testing.T) {
	loopback := prefixes("127.0.0.0/8", "::1/128")
	tests := []struct {
		name   string
		cfg    Config
		remote string
		header map[string]string
		admit  bool
	}{
		{"loopback", Config{Networks: loopback}, "127.0.0.1:5000", nil, true},
		{"another loopback address", Config{Networks: loopback}, "127.0.0.2:5000", nil, true},
		{"IPv6 loopback", Config{Networks: loopback}, "[::1]:5000", nil, true},
		{"IPv4-mapped loopback", Config{Networks: loopback}, "[::ffff:127.0.0.1]:5000", nil, true},
		{"outside", Config{Networks: loopback}, "192.0.2.7:5000", nil, false},
		{"outside a /32", Config{Networks: prefixes("127.0.0.1/32")}, "127.0.0.2:5000", nil, false},
		{"no networks", Config{Token: "t0k"}, "127.0.0.1:5000", nil, false},
		{"zero config", Config{}, "127.0.0.1:5000", map[string]string{"Authorization": "Bearer "}, false},
		{"token", Config{Token: "t0k"}, "192.0.2.7:5000", map[string]string{"Authorization": "Bearer t0k"}, true},
		{"token, scheme in lower case", Config{Token: "t0k"}, "192.0.2.7:5000", map[string]string{"Authorization": "bearer t0k"}, true},
		{"wrong token", Config{Token: "t0k"}, "192.0.2.7:5000", map[string]string{"Authorization": "Bearer t0"}, false},
		{"token as basic auth", Config{Token: "t0k"}, "192.0.2.7:5000", map[string]string{"Authorization": "Basic t0k"}, false},
		{"empty token configured admits no empty bearer", Config{}, "192.0.2.7:5000", map[string]string{"Authorization": "Bearer "}, false},
		{"X-Forwarded-For from an untrusted peer is ignored", Config{Networks: loopback}, "192.0.2.7:5000", map[string]string{"X-Forwarded-For": "127.0.0.1"}, false},
		{"X-Forwarded-For cannot make a loopback peer an outsider either", Config{Networks: loopback}, "127.0.0.1:5000", map[string]string{"X-Forwarded-For": "192.0.2.7"}, true},
		{"trusted proxy: the client it names", Config{Networks: prefixes("10.1.0.0/16"), TrustedProxies: prefixes("127.0.0.1/32")}, "127.0.0.1:5000", map[string]string{"X-Forwarded-For": "10.1.2.3"}, true},
		{"trusted proxy: an outside client", Config{Networks: loopback, TrustedProxies: prefixes("127.0.0.1/32")}, "127.0.0.1:5000", map[string]string{"X-Forwarded-For": "192.0.2.7"}, false},
		{"trusted proxy: a forged left-most hop", Config{Networks: prefixes("10.1.0.0/16"), TrustedProxies: prefixes("127.0.0.1/32")}, "127.0.0.1:5000", map[string]string{"X-Forwarded-For": "10.1.2.3, 192.0.2.7"}, false},
		{"trusted proxy: a broken header is the peer", Config{Networks: prefixes("10.1.0.0/16"), TrustedProxies: prefixes("127.0.0.1/32")}, "127.0.0.1:5000", map[string]string{"X-Forwarded-For": "10.1.2.3, junk"}, false},
		{"unparsable peer", Config{Networks: loopback}, "pipe", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := New(tt.cfg)
			r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/x", nil)
			r.RemoteAddr = tt.remote
			for k, v := range tt.header {
				r.Header.Set(k, v)
			}
			if err := g.Check(r); (err == nil) != tt.admit {
				t.Errorf("Check = %v, want admitted %v", err, tt.admit)
			}
		})
	}
}

func TestHandlerRefusal(t *testing.T) {
	g := New(Config{Networks: prefixes("127.0.0.1/32"), Token: "s3cret-token", What: "registry writes",
		NetworksKey: "security.admin_networks", TokenKey: "registry.write_token"})
	called := 0
	h := g.Handler(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		called++
		rw.WriteHeader(http.StatusNoContent)
	}))
	r := httptest.NewRequestWithContext(t.Context(), http.MethodDelete, "/subjects/x", nil)
	r.RemoteAddr = "198.51.100.4:4000"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != http.StatusForbidden || called != 0 || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("refused request: %d, %s, handler called %d times", rec.Code, rec.Header().Get("Content-Type"), called)
	}
	var body struct {
		Status int    `json:"status"`
		Error  string `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"registry writes", "198.51.100.4", "security.admin_networks", "registry.write_token", "Authorization: Bearer <token>"} {
		if !strings.Contains(body.Error, want) {
			t.Errorf("refusal %q does not mention %q", body.Error, want)
		}
	}
	if body.Status != 403 || strings.Contains(rec.Body.String(), "s3cret") || strings.Contains(rec.Body.String(), "127.0.0.1") {
		t.Errorf("refusal %s: wrong status, or tells the token or the networks", rec.Body)
	}
	r.Header.Set("Authorization", "Bearer s3cret-token")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != http.StatusNoContent || called != 1 {
		t.Errorf("with the token: %d, handler called %d times", rec.Code, called)
	}
}

func BenchmarkCheck(b *testing.B) {
	g := New(Config{Networks: prefixes("10.0.0.0/8", "127.0.0.0/8", "::1/128"), Token: "t"})
	r := httptest.NewRequestWithContext(b.Context(), http.MethodPost, "/x", nil)
	r.RemoteAddr = "127.0.0.1:5000"
	b.ReportAllocs()
	for b.Loop() {
		if g.Check(r) != nil {
			b.Fatal("refused")
		}
	}
}

// TestHosts: security.allowed_hosts entries, and the Host headers they let
// through; an address always passes, "*" lets everything through.
func TestHosts(t *testing.T) {
	for _, bad := range []string{"http://x.example", "x.example/", "x.example:", "x.example:http", "x.example:0", "x.example:65536", "a..b", "with space", "a:b:c", ""} {
		if _, err := ParseHosts([]string{bad}); err == nil || !strings.Contains(err.Error(), `"`+bad+`"`) {
			t.Errorf("ParseHosts(%q) = %v, want an error quoting it", bad, err)
		}
	}
	tests := []struct {
		list  []string
		host  string
		allow bool
	}{
		{[]string{"localhost"}, "localhost", true},
		{[]string{"localhost"}, "localhost:8090", true},
		{[]string{"localhost"}, "LocalHost.:8090", true},
		{[]string{"LOCALHOST"}, "localhost", true},
		{[]string{"localhost"}, "rebind.evil.example", false},
		{[]string{"localhost"}, "rebind.evil.example:8090", false},
		{[]string{"localhost"}, "localhost.evil.example", false},
		{[]string{"localhost"}, "127.0.0.1:8090", true},
		{[]string{"localhost"}, "[::1]:8090", true},
		{[]string{"localhost"}, "10.0.0.5", true},
		{[]string{"localhost"}, "", true},
		{nil, "localhost", false},
		{[]string{"dash.example.org:443"}, "dash.example.org:443", true},
		{[]string{"dash.example.org:443"}, "dash.example.org:8443", false},
		{[]string{"dash.example.org:443"}, "dash.example.org", false},
		{[]string{"[::1]", "::1", "127.0.0.1:80"}, "rebind.evil.example", false},
		{[]string{"localhost", "*"}, "rebind.evil.example", true},
	}
	for _, tt := range tests {
		h, err := ParseHosts(tt.list)
		if err != nil {
			t.Fatalf("ParseHosts(%q): %v", tt.list, err)
		}
		if got := h.Allows(tt.host); got != tt.allow {
			t.Errorf("%q allows %q: %v, want %v", tt.list, tt.host, got, tt.allow)
		}
	}
}

// TestGuardBrowsers: a guard refuses a Host it does not answer (421) and
// cross-origin browser requests (403) from an admitted network: writes
// always, reads unless they are navigations; requests without Origin and
// Sec-Fetch-Site (every client that is not a browser) pass.
func TestGuardBrowsers(t *testing.T) {
	hosts, err := ParseHosts([]string{"localhost", "dash.example.org"})
	if err != nil {
		t.Fatal(err)
	}
	g := New(Config{Networks: prefixes("127.0.0.0/8"), Hosts: hosts, What: "the dashboard", HostsKey: "security.allowed_hosts"})
	tests := []struct {
		name, method, host string
		header             map[string]string
		status             int // 0: admitted
	}{
		{"not a browser", "POST", "localhost:8090", nil, 0},
		{"same-origin fetch", "POST", "localhost:8090", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://localhost:8090"}, 0},
		{"an allowed name", "POST", "dash.example.org", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://dash.example.org"}, 0},
		{"an address", "DELETE", "127.0.0.1:8090", map[string]string{"Origin": "http://127.0.0.1:8090"}, 0},
		{"DNS rebinding", "POST", "rebind.evil.example:8090", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://rebind.evil.example:8090"}, 421},
		{"DNS rebinding, a read", "GET", "rebind.evil.example:8090", map[string]string{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"}, 421},
		{"no-cors POST from another site", "POST", "localhost:8090", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, 403},
		{"same-site is another origin", "POST", "localhost:8090", map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "http://other.localhost"}, 403},
		{"Origin only, another host", "PUT", "localhost:8090", map[string]string{"Origin": "https://evil.example"}, 403},
		{"cross-site fetch of a read", "GET", "localhost:8090", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors", "Origin": "https://evil.example"}, 403},
		{"cross-site image", "GET", "localhost:8090", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}, 403},
		{"cross-site link followed", "GET", "localhost:8090", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}, 0},
		{"a read, not a browser", "GET", "localhost:8090", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequestWithContext(t.Context(), tt.method, "http://"+tt.host+"/x", nil)
			r.RemoteAddr = "127.0.0.1:5000"
			for k, v := range tt.header {
				r.Header.Set(k, v)
			}
			err := g.Check(r)
			if tt.status == 0 {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			var re *RefusedError
			if !errors.As(err, &re) || re.Status != tt.status {
				t.Fatalf("Check = %v, want a %d refusal", err, tt.status)
			}
			want := []string{"the dashboard", "cross-origin"}
			if tt.status == 421 {
				want = []string{"the dashboard", "security.allowed_hosts", strings.Split(tt.host, ":")[0]}
			}
			for _, w := range want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("refusal %q does not mention %q", err, w)
				}
			}
		})
	}
	// The handler answers with the refusal's status.
	r := httptest.NewRequestWithContext(t.Context(), "POST", "http://rebind.evil.example/api/replay", nil)
	r.RemoteAddr = "127.0.0.1:5000"
	rec := httptest.NewRecorder()
	g.Handler(http.NotFoundHandler()).ServeHTTP(rec, r)
	if rec.Code != http.StatusMisdirectedRequest || !strings.Contains(rec.Body.String(), `"status":421`) || !strings.Contains(rec.Body.String(), `\"rebind.evil.example\"`) {
		t.Errorf("handler: %d %s", rec.Code, rec.Body)
	}
}
