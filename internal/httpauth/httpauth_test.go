package httpauth

import (
	"encoding/json"
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
