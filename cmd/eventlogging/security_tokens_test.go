package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// securityRequest sends one HTTP request with the given headers and returns
// the status and body.
func securityRequest(t *testing.T, method, u, body string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestSecurityTokens: a standalone that admits no network to its admin
// routes (security.admin_networks empty), with the registry's write token
// and the dashboard's token set through the environment under their former
// names (registry.token, dashboard.replay_token), refuses writes and the
// dashboard without them (403) — from loopback too —, accepts them with
// them (200), and never prints either token: not in its log, not in
// /metrics, not in check-config's output.
func TestSecurityTokens(t *testing.T) {
	const (
		regToken    = "reg-token-5b0c1e9f7d"
		replayToken = "replay-token-a8e2c47d31"
	)
	dataDir := filepath.Join(t.TempDir(), "data")
	addr := freeAddr(t)
	base := "http://" + addr
	sa := startService(t, "standalone", []string{
		"EVENTLOGGING_SECURITY_ADMIN_NETWORKS=",
		"EVENTLOGGING_REGISTRY_TOKEN=" + regToken,
		"EVENTLOGGING_DASHBOARD_REPLAY_TOKEN=" + replayToken,
		"EVENTLOGGING_LOG_LEVEL=debug",
	}, "standalone", "--data-dir", dataDir, "--listen", addr, "--kafka-listen", freeAddr(t),
		"--schemas", "../../examples/schemas", "--streams", "../../examples/streams.yaml")
	waitReady(t, base)

	// Registry writes.
	schemaBody, _ := json.Marshal(map[string]string{"schemaType": "JSON", "schema": `{"type":"object","properties":{"a":{"type":"string"}}}`})
	register := base + "/registry/subjects/SecurityX/versions"
	ctype := map[string]string{"Content-Type": "application/vnd.schemaregistry.v1+json"}
	with := func(h map[string]string, k, v string) map[string]string {
		out := map[string]string{k: v}
		for hk, hv := range h {
			out[hk] = hv
		}
		return out
	}
	for name, h := range map[string]map[string]string{
		"no token":        ctype,
		"wrong token":     with(ctype, "Authorization", "Bearer not-"+regToken),
		"the replay one":  with(ctype, "Authorization", "Bearer "+replayToken),
		"not as a bearer": with(ctype, "Authorization", "Basic "+regToken),
	} {
		if status, body := securityRequest(t, http.MethodPost, register, string(schemaBody), h); status != http.StatusForbidden || !strings.Contains(body, "40301") || !strings.Contains(body, "registry.write_token") {
			t.Errorf("register with %s: %d %s, want 403 (error_code 40301) naming registry.write_token", name, status, body)
		}
	}
	var id struct{ ID int }
	var status int
	var body string
	// A fresh standalone's registry may still be electing its writer: retry.
	waitFor(t, 30*time.Second, "the registry to accept an authorised write", func() bool {
		status, body = securityRequest(t, http.MethodPost, register, string(schemaBody), with(ctype, "Authorization", "Bearer "+regToken))
		return status == http.StatusOK
	})
	if err := json.Unmarshal([]byte(body), &id); err != nil || id.ID < 1 {
		t.Errorf("register with the token: %d %s", status, body)
	}
	// Reads stay open.
	if status, body := securityRequest(t, http.MethodGet, base+"/registry/subjects/SecurityX/versions/latest", "", nil); status != http.StatusOK || !strings.Contains(body, `"subject":"SecurityX"`) {
		t.Errorf("read without a token: %d %s", status, body)
	}

	// Dashboard replay: an EventError to replay first.
	postHasty(t, base, `[{"schema":"Generic","revision":13,"event":{"articleId":"not a number"}}]`)
	ee := runCLI(t, "tail", "--data-dir", dataDir, "--from-beginning", "--count", "1", "--timeout", "60s", "eventlogging_EventError")
	var ec struct {
		UUID string `json:"uuid"`
	}
	if err := json.Unmarshal([]byte(ee), &ec); err != nil || ec.UUID == "" {
		t.Fatalf("EventError %q: %v", ee, err)
	}
	// The dashboard lists errors from its own sample of the topic: wait
	// until it knows this one, so that the replay below has it.
	if status, body := securityRequest(t, http.MethodGet, base+"/dashboard/api/errors", "", nil); status != http.StatusForbidden || !strings.Contains(body, "dashboard.token") {
		t.Errorf("dashboard without the token: %d %s, want 403 naming dashboard.token", status, body)
	}
	waitFor(t, 60*time.Second, "the dashboard to list the EventError", func() bool {
		_, body := securityRequest(t, http.MethodGet, base+"/dashboard/api/errors", "", map[string]string{"Authorization": "Bearer " + replayToken})
		return strings.Contains(body, ec.UUID)
	})
	replay := base + "/dashboard/api/replay"
	replayBody := `{"uuids":["` + ec.UUID + `"]}`
	jsonType := map[string]string{"Content-Type": "application/json"}
	for name, h := range map[string]map[string]string{
		"no token":       jsonType,
		"wrong token":    with(jsonType, "Authorization", "Bearer not-"+replayToken),
		"the registry's": with(jsonType, "Authorization", "Bearer "+regToken),
	} {
		if status, body := securityRequest(t, http.MethodPost, replay, replayBody, h); status != http.StatusForbidden {
			t.Errorf("replay with %s: %d %s, want 403", name, status, body)
		}
	}
	status, body = securityRequest(t, http.MethodPost, replay, replayBody, with(jsonType, "Authorization", "Bearer "+replayToken))
	var res map[string]any
	if status != http.StatusOK || json.Unmarshal([]byte(body), &res) != nil {
		t.Fatalf("replay with the token: %d %s, want 200 JSON", status, body)
	}
	if res["replayed"] != float64(1) {
		t.Errorf("replay result %s, want one replayed", body)
	}

	// The tokens are never printed.
	_, metrics := securityRequest(t, http.MethodGet, base+"/metrics", "", nil)
	if !strings.Contains(metrics, "eventlogging_") {
		t.Fatalf("/metrics: %.200s", metrics)
	}
	cfgFile := filepath.Join(t.TempDir(), "el.yaml")
	if err := os.WriteFile(cfgFile, []byte("kafka:\n  sasl_mechanism: SCRAM-SHA-256\n  sasl_username: eventlogging\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	check := runCLIEnv(t, []string{
		"EVENTLOGGING_REGISTRY_TOKEN=" + regToken,
		"EVENTLOGGING_DASHBOARD_REPLAY_TOKEN=" + replayToken,
		"EVENTLOGGING_KAFKA_SASL_PASSWORD=kafka-password-e3f1",
	}, "check-config", "--config", cfgFile)
	if !strings.Contains(check, "token: '***'") || !strings.Contains(check, "sasl_password: '***'") {
		t.Errorf("check-config does not show the secrets as ***:\n%s", check)
	}
	sa.stop(t)
	for what, text := range map[string]string{"standalone log": sa.logs(), "/metrics": metrics, "check-config": check} {
		for _, secret := range []string{regToken, replayToken, "kafka-password-e3f1"} {
			if strings.Contains(text, secret) {
				t.Errorf("%s prints the secret %q", what, secret)
			}
		}
	}
}

// runCLIEnv is runCLI with extra environment variables.
func runCLIEnv(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok { //nolint:errorlint // direct type from exec
			stderr = ee.Stderr
		}
		t.Fatalf("eventlogging %v: %v\n%s", args, err, stderr)
	}
	return string(out)
}
