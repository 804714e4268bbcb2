package registry

import (
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/eventlogging/eventlogging/internal/httpauth"
)

// loopbackGuard is the guard the registry role builds by default: loopback
// admitted, localhost and addresses answered.
func loopbackGuard(t *testing.T, hosts ...string) func(*http.Request) error {
	t.Helper()
	h, err := httpauth.ParseHosts(append([]string{"localhost"}, hosts...))
	if err != nil {
		t.Fatal(err)
	}
	return httpauth.New(httpauth.Config{
		Networks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")},
		What:     "registry writes", NetworksKey: "security.admin_networks", TokenKey: "registry.write_token",
		Hosts: h, HostsKey: "security.allowed_hosts",
	}).Check
}

// send sends one request to in as given: no header but those of h, Host
// host when set.
func (in *instance) send(t *testing.T, method, path, host, body string, h map[string]string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, in.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := in.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestBrowserWrites (issue 30, findings 4 and 5): from loopback, which is
// admitted, a page on another site cannot register a schema through the
// operator's browser — a no-cors fetch with a Blob body (no Content-Type)
// is refused by its Origin and Sec-Fetch-Site, and a body without a JSON
// Content-Type is refused with 415 whatever the headers; nor can a page
// whose name was re-pointed at this server (DNS rebinding) delete a
// subject. A Confluent client (no Origin, a JSON Content-Type) still
// registers, and so does a request for a host of security.allowed_hosts.
func TestBrowserWrites(t *testing.T) {
	in := newInstance(t, nil, func(c *Config) { c.Authorize = loopbackGuard(t, "registry.example.org") })
	body := schemaBody("JSON", jsonSchema("a"))
	exists := func(subject string) bool {
		st, _ := in.send(t, "GET", "/subjects/"+url.PathEscape(subject)+"/versions", "", "", nil)
		return st == http.StatusOK
	}
	type refusal struct {
		status, code int
		contains     []string
	}
	for _, tt := range []struct {
		name, subject, host string
		header              map[string]string
		want                refusal
	}{
		{"a: no-cors POST from another site, no Content-Type", "CrossSite", "",
			map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors", "Origin": "https://evil.example"},
			refusal{403, 40301, []string{"cross-origin", "cross-site"}}},
		{"a: an older browser, Origin only", "CrossOrigin", "",
			map[string]string{"Origin": "https://evil.example"},
			refusal{403, 40301, []string{"cross-origin", "https://evil.example"}}},
		{"b: text/plain, no Origin", "TextPlain", "",
			map[string]string{"Content-Type": "text/plain;charset=UTF-8"},
			refusal{415, 415, []string{"text/plain;charset=UTF-8", "application/vnd.schemaregistry.v1+json", "application/vnd.schemaregistry+json", "application/json"}}},
		{"b: no Content-Type, no Origin", "NoType", "", nil,
			refusal{415, 415, []string{"no Content-Type", "application/vnd.schemaregistry.v1+json", "application/vnd.schemaregistry+json", "application/json"}}},
		{"d: DNS rebinding", "Rebound", "rebind.evil.example",
			map[string]string{"Content-Type": "application/json", "Origin": "http://rebind.evil.example", "Sec-Fetch-Site": "same-origin"},
			refusal{421, 42101, []string{"security.allowed_hosts", `\"rebind.evil.example\"`}}},
	} {
		status, b := in.send(t, "POST", "/subjects/"+tt.subject+"/versions", tt.host, body, tt.header)
		var e apiError
		if status != tt.want.status || json.Unmarshal([]byte(b), &e) != nil || e.Code != tt.want.code {
			t.Errorf("%s: %d %s, want %d with error_code %d", tt.name, status, b, tt.want.status, tt.want.code)
		}
		for _, w := range tt.want.contains {
			if !strings.Contains(b, w) {
				t.Errorf("%s: %s does not mention %s", tt.name, b, w)
			}
		}
		if exists(tt.subject) {
			t.Errorf("%s: subject %s registered", tt.name, tt.subject)
		}
	}

	// c: Confluent clients send no Origin and a JSON Content-Type.
	for i, ct := range []string{"application/vnd.schemaregistry.v1+json", "application/vnd.schemaregistry+json", "application/json; charset=utf-8"} {
		subject := "Confluent" + string(rune('A'+i))
		if status, b := in.send(t, "POST", "/subjects/"+subject+"/versions", "", body, map[string]string{"Content-Type": ct}); status != http.StatusOK || !exists(subject) {
			t.Errorf("c: Confluent client, %s: %d %s", ct, status, b)
		}
	}
	// d: a rebound page deletes nothing, in either form; e: a host of
	// security.allowed_hosts, from the same browser, may.
	for _, path := range []string{"/subjects/ConfluentA", "/subjects/ConfluentA/versions/1"} {
		if status, b := in.send(t, "DELETE", path, "rebind.evil.example:8081", "", map[string]string{"Origin": "http://rebind.evil.example:8081", "Sec-Fetch-Site": "same-origin"}); status != http.StatusMisdirectedRequest || !strings.Contains(b, "42101") {
			t.Errorf("d: DELETE %s for rebind.evil.example: %d %s, want 421", path, status, b)
		}
	}
	if !exists("ConfluentA") {
		t.Error("d: the rebound page deleted ConfluentA")
	}
	browser := map[string]string{"Origin": "http://registry.example.org:8081", "Sec-Fetch-Site": "same-origin"}
	if status, b := in.send(t, "DELETE", "/subjects/ConfluentA", "registry.example.org:8081", "", browser); status != http.StatusOK || exists("ConfluentA") {
		t.Errorf("e: DELETE for an allowed host: %d %s", status, b)
	}
	browser["Content-Type"] = "application/json"
	if status, b := in.send(t, "POST", "/subjects/Allowed/versions", "registry.example.org:8081", body, browser); status != http.StatusOK || !exists("Allowed") {
		t.Errorf("e: POST for an allowed host: %d %s", status, b)
	}
}
