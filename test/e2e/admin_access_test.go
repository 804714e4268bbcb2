package e2e

import (
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// clientFrom is an HTTP client whose connections leave from ip (any
// address of 127.0.0.0/8 is on the loopback interface).
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}, Timeout: 30 * time.Second}
}

// adminCall is one request of the admin-route tests.
type adminCall struct {
	method, path, body string
	token              string // sent as a bearer token when set
}

// do sends call to base with c and returns the status and body.
func (call adminCall) do(t *testing.T, c *http.Client, base string) (int, string) {
	t.Helper()
	status, body, err := call.send(t, c, base)
	if err != nil {
		t.Fatalf("%s %s: %v", call.method, call.path, err)
	}
	return status, body
}

// send is do that returns the error (for polling).
func (call adminCall) send(t *testing.T, c *http.Client, base string) (int, string, error) {
	req, err := http.NewRequestWithContext(t.Context(), call.method, base+call.path, strings.NewReader(call.body))
	if err != nil {
		return 0, "", err
	}
	if call.body != "" {
		req.Header.Set("Content-Type", "application/json") // the intake, the registry and the replay all take it
	}
	if call.token != "" {
		req.Header.Set("Authorization", "Bearer "+call.token)
	}
	return doHTTP(c, req)
}

// refused checks that call is answered 403 with a JSON body that says how
// to get access: the networks' key and the token's.
func refused(t *testing.T, c *http.Client, base string, call adminCall, tokenKey string) {
	t.Helper()
	status, body := call.do(t, c, base)
	var e map[string]any
	if status != http.StatusForbidden || json.Unmarshal([]byte(body), &e) != nil {
		t.Errorf("%s %s (token %q): %d %s, want 403 JSON", call.method, call.path, call.token, status, body)
		return
	}
	// {"status", "error"}, or the registry's {"error_code", "message"}.
	msg, _ := e["error"].(string)
	if code, _ := e["error_code"].(float64); code != 0 {
		msg, _ = e["message"].(string)
		if code != 40301 {
			t.Errorf("%s %s: error_code %v, want 40301", call.method, call.path, code)
		}
	}
	for _, want := range []string{"security.admin_networks", tokenKey, "Authorization: Bearer <token>", "127.0.0.2"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%s %s: refusal %s does not mention %q", call.method, call.path, body, want)
		}
	}
}

// allowed checks that call is answered with status.
func allowed(t *testing.T, c *http.Client, base string, call adminCall, status int) string {
	t.Helper()
	got, body := call.do(t, c, base)
	if got != status {
		t.Errorf("%s %s (token %q): %d %s, want %d", call.method, call.path, call.token, got, body, status)
	}
	return body
}

func schemaPayload(props ...string) string {
	p := map[string]any{}
	for _, name := range props {
		p[name] = map[string]string{"type": "string"}
	}
	text, _ := json.Marshal(map[string]any{"type": "object", "properties": p, "additionalProperties": false})
	b, _ := json.Marshal(map[string]string{"schemaType": "JSON", "schema": string(text)})
	return string(b)
}

// checkRegistryWrites: from outside the admin networks, writes are
// refused without the write token and done with it; reads, lookups and
// compatibility checks are open; from inside, writes need no token.
func checkRegistryWrites(t *testing.T, reg string, outsider, admin *http.Client, writeToken, otherToken string) {
	t.Helper()
	// The registry may still be electing its writer: retry the first write.
	waitFor(t, 60*time.Second, "the registry to accept a write from an admin network", func() bool {
		status, _, _ := adminCall{method: "POST", path: "/subjects/AdminA/versions", body: schemaPayload("a")}.send(t, admin, reg)
		return status == http.StatusOK
	})
	const key = "registry.write_token"
	for _, tok := range []string{"", "not-" + writeToken, otherToken} {
		for _, call := range []adminCall{
			{method: "POST", path: "/subjects/AdminB/versions", body: schemaPayload("b")},
			{method: "PUT", path: "/config", body: `{"compatibility":"NONE"}`},
			{method: "PUT", path: "/config/AdminA", body: `{"compatibility":"NONE"}`},
			{method: "DELETE", path: "/config/AdminA"},
			{method: "PUT", path: "/mode", body: `{"mode":"READONLY"}`},
			{method: "DELETE", path: "/subjects/AdminA/versions/1"},
			{method: "DELETE", path: "/subjects/AdminA"},
			{method: "DELETE", path: "/subjects/AdminA?permanent=true"},
		} {
			call.token = tok
			refused(t, outsider, reg, call, key)
		}
	}
	// Refused writes did nothing; what processors and clients read stays
	// open.
	if body := allowed(t, outsider, reg, adminCall{method: "GET", path: "/subjects"}, http.StatusOK); !strings.Contains(body, `"AdminA"`) || strings.Contains(body, "AdminB") {
		t.Errorf("subjects after refused writes: %s", body)
	}
	if body := allowed(t, outsider, reg, adminCall{method: "GET", path: "/subjects/AdminA/versions"}, http.StatusOK); strings.TrimSpace(body) != "[1]" {
		t.Errorf("versions of AdminA after refused deletes: %s", body)
	}
	if body := allowed(t, outsider, reg, adminCall{method: "GET", path: "/mode"}, http.StatusOK); !strings.Contains(body, "READWRITE") {
		t.Errorf("mode after a refused PUT /mode: %s", body)
	}
	var latest struct{ ID int }
	if err := json.Unmarshal([]byte(allowed(t, outsider, reg, adminCall{method: "GET", path: "/subjects/AdminA/versions/latest"}, http.StatusOK)), &latest); err != nil || latest.ID < 1 {
		t.Fatalf("latest AdminA: id %d, %v", latest.ID, err)
	}
	allowed(t, outsider, reg, adminCall{method: "GET", path: "/schemas/ids/" + strconv.Itoa(latest.ID)}, http.StatusOK)
	allowed(t, outsider, reg, adminCall{method: "GET", path: "/config"}, http.StatusOK)
	allowed(t, outsider, reg, adminCall{method: "POST", path: "/subjects/AdminA", body: schemaPayload("a")}, http.StatusOK)
	allowed(t, outsider, reg, adminCall{method: "POST", path: "/compatibility/subjects/AdminA/versions/latest", body: schemaPayload("a", "b")}, http.StatusOK)

	// With the token from outside, and from the admin network without one.
	for _, c := range []struct {
		client  *http.Client
		token   string
		subject string
	}{{outsider, writeToken, "AdminB"}, {admin, "", "AdminC"}} {
		for _, call := range []adminCall{
			{method: "POST", path: "/subjects/" + c.subject + "/versions", body: schemaPayload("b")},
			{method: "PUT", path: "/config/" + c.subject, body: `{"compatibility":"NONE"}`},
			{method: "DELETE", path: "/config/" + c.subject},
			{method: "DELETE", path: "/subjects/" + c.subject + "/versions/1"},
			{method: "POST", path: "/subjects/" + c.subject + "2/versions", body: schemaPayload("b")},
			{method: "DELETE", path: "/subjects/" + c.subject + "2"},
			{method: "DELETE", path: "/subjects/" + c.subject + "2?permanent=true"},
		} {
			call.token = c.token
			allowed(t, c.client, reg, call, http.StatusOK)
		}
	}
}

// checkDashboard: from outside the admin networks, the dashboard (pages,
// API, assets, replay) is refused without its token and open with it; from
// inside it is open.
func checkDashboard(t *testing.T, dash string, outsider, admin *http.Client, dashToken, otherToken string) {
	t.Helper()
	const key = "dashboard.token"
	// An unknown uuid: the replay is answered (skipped), which is enough
	// to show it was admitted.
	replay := adminCall{method: "POST", path: "/api/replay", body: `{"uuids":["00000000000000000000000000000000"]}`}
	calls := []adminCall{
		{method: "GET", path: "/"},
		{method: "GET", path: "/errors"},
		{method: "GET", path: "/api/overview"},
		{method: "GET", path: "/api/errors"},
		{method: "GET", path: "/static/dashboard.css"},
		replay,
	}
	for _, tok := range []string{"", "not-" + dashToken, otherToken} {
		for _, call := range calls {
			call.token = tok
			refused(t, outsider, dash, call, key)
		}
	}
	for _, c := range []struct {
		client *http.Client
		token  string
	}{{outsider, dashToken}, {admin, ""}} {
		for _, call := range calls[:len(calls)-1] {
			call.token = c.token
			allowed(t, c.client, dash, call, http.StatusOK)
		}
		call := replay
		call.token = c.token
		if body := allowed(t, c.client, dash, call, http.StatusOK); !strings.Contains(body, `"skipped":1`) {
			t.Errorf("replay of an unknown uuid: %s", body)
		}
	}
}

// TestAdminNetworks: with security.admin_networks 127.0.0.1/32, a client at
// 127.0.0.2 gets 403 (and how to get access) from registry writes, the
// dashboard and its replay, unless it sends the route's token; from
// 127.0.0.1 they need no token; everything else stays open to 127.0.0.2.
// Standalone, and the registry and dashboard roles as separate processes
// (on standalone's embedded broker).
func TestAdminNetworks(t *testing.T) {
	const (
		writeToken = "write-token-6f1d93"
		dashToken  = "dash-token-c27a08"
	)
	env := []string{
		"EVENTLOGGING_SECURITY_ADMIN_NETWORKS=127.0.0.1/32",
		"EVENTLOGGING_REGISTRY_WRITE_TOKEN=" + writeToken,
		"EVENTLOGGING_DASHBOARD_TOKEN=" + dashToken,
	}
	dataDir := filepath.Join(t.TempDir(), "data")
	addr, kafkaAddr := freeAddr(t), freeAddr(t)
	base := "http://" + addr
	startService(t, "standalone", env, "standalone", "--data-dir", dataDir, "--listen", addr, "--kafka-listen", kafkaAddr,
		"--schemas", "../../examples/schemas", "--streams", "../../examples/streams.yaml")
	waitReady(t, base)
	outsider, admin := clientFrom("127.0.0.2"), clientFrom("127.0.0.1")

	t.Run("standalone", func(t *testing.T) {
		checkRegistryWrites(t, base+"/registry", outsider, admin, writeToken, dashToken)
		checkDashboard(t, base+"/dashboard", outsider, admin, dashToken, writeToken)
		// The redirects to the dashboard are not the dashboard.
		noFollow := clientFrom("127.0.0.2")
		noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		allowed(t, noFollow, base, adminCall{method: "GET", path: "/"}, http.StatusFound)
		allowed(t, noFollow, base, adminCall{method: "GET", path: "/dashboard"}, http.StatusFound)
	})

	t.Run("public routes", func(t *testing.T) {
		beacon := `{"event":{"responseStart":120,"loadEventEnd":950,"isHttps":true,"mobileMode":"stable"},"revision":7,"schema":"NavigationTiming","webHost":"en.wikipedia.org","wiki":"enwiki"}`
		allowed(t, outsider, base, adminCall{method: "GET", path: "/beacon/event?" + url.PathEscape(beacon) + ";"}, http.StatusNoContent)
		event := `{"schema":"SearchQuery","revision":5,"event":{"query":"event logging","results":42,"source":"fulltext"},"wiki":"enwiki","webHost":"en.wikipedia.org"}`
		allowed(t, outsider, base, adminCall{method: "POST", path: "/v1/events", body: event}, http.StatusCreated)
		allowed(t, outsider, base, adminCall{method: "POST", path: "/v1/events?hasty=true", body: event}, http.StatusAccepted)
		for _, path := range []string{"/v1/streams", "/static/eventlogging.js", "/healthz", "/readyz", "/metrics", "/registry/subjects", "/registry/schemas/types"} {
			allowed(t, outsider, base, adminCall{method: "GET", path: path}, http.StatusOK)
		}
	})

	t.Run("registry role", func(t *testing.T) {
		regAddr := freeAddr(t)
		// Its own topic, so that it is its own leader.
		startService(t, "registry", append(env, "EVENTLOGGING_REGISTRY_TOPIC=_eventlogging_schemas_admin_test"),
			"registry", "--kafka-brokers", kafkaAddr, "--listen", regAddr)
		checkRegistryWrites(t, "http://"+regAddr, outsider, admin, writeToken, dashToken)
	})

	t.Run("dashboard role", func(t *testing.T) {
		dashAddr := freeAddr(t)
		startService(t, "dashboard", env, "dashboard", "--kafka-brokers", kafkaAddr, "--registry", base+"/registry", "--listen", dashAddr)
		dash := "http://" + dashAddr
		waitFor(t, 60*time.Second, "the dashboard to listen", func() bool {
			status, _, _ := adminCall{method: "GET", path: "/metrics"}.send(t, admin, dash)
			return status == http.StatusOK
		})
		checkDashboard(t, dash, outsider, admin, dashToken, writeToken)
		// /metrics stays open.
		allowed(t, outsider, dash, adminCall{method: "GET", path: "/metrics"}, http.StatusOK)
	})
}
