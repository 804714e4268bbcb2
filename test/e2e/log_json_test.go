package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// checkJSONLog checks that every line of log is a JSON object with time,
// level and msg and no key twice, and returns the lines decoded.
func checkJSONLog(t *testing.T, log string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for i, line := range strings.Split(strings.TrimSuffix(log, "\n"), "\n") {
		dups, err := testsupport.DuplicateKeys([]byte(line))
		if err != nil || len(dups) > 0 {
			t.Errorf("line %d is not a JSON object with each key once (%v, duplicates %v): %s", i+1, err, dups, line)
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Errorf("line %d: %v: %s", i+1, err, line)
			continue
		}
		ts, _ := m["time"].(string)
		if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
			t.Errorf("line %d: time %v: %s", i+1, m["time"], line)
		}
		if lvl, _ := m["level"].(string); lvl == "" {
			t.Errorf("line %d: no level: %s", i+1, line)
		}
		if msg, _ := m["msg"].(string); msg == "" {
			t.Errorf("line %d: no msg: %s", i+1, line)
		}
		lines = append(lines, m)
	}
	return lines
}

// findLine returns the first line with msg whose attributes include attrs.
func findLine(lines []map[string]any, msg string, attrs map[string]any) map[string]any {
	for _, l := range lines {
		if l["msg"] != msg {
			continue
		}
		ok := true
		for k, v := range attrs {
			if fmt.Sprint(l[k]) != fmt.Sprint(v) {
				ok = false
			}
		}
		if ok {
			return l
		}
	}
	return nil
}

// TestJSONLogs: with EVENTLOGGING_LOG_FORMAT=json every line a standalone
// writes — start-up, serving (request logs, a refused admin request, a
// registry write, an invalid event, a SIGHUP reload), shutdown — is a JSON
// object with time, level and msg, and no line holds a key twice (the
// registry's and the SQL sink's loggers used to name their component
// twice). Then the same with log.format from a --config file, whose
// log.level a SIGHUP changes.
func TestJSONLogs(t *testing.T) {
	start := func(t *testing.T, env []string, extra ...string) (*service, string) {
		t.Helper()
		return startStandalone(t, env, filepath.Join(t.TempDir(), "data"),
			append([]string{"--schemas", "../../examples/schemas", "--streams", "../../examples/streams.yaml"}, extra...)...)
	}
	hup := func(t *testing.T, sa *service, level string) {
		t.Helper()
		if err := sa.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, "the reload", func() bool {
			return strings.Contains(sa.logs(), `"log_level":"`+level+`"`)
		})
	}

	t.Run("environment", func(t *testing.T) {
		sa, base := start(t, []string{"EVENTLOGGING_LOG_FORMAT=json", "EVENTLOGGING_LOG_LEVEL=debug", "EVENTLOGGING_LOG_REQUEST_SAMPLE=1",
			"EVENTLOGGING_SECURITY_ADMIN_NETWORKS=127.0.0.1/32"})
		beacon := `{"event":{"responseStart":120,"loadEventEnd":950,"isHttps":true,"mobileMode":"stable"},"revision":7,"schema":"NavigationTiming","webHost":"en.wikipedia.org","wiki":"enwiki"}`
		local, outsider := clientFrom("127.0.0.1"), clientFrom("127.0.0.2")
		(adminCall{method: "GET", path: "/beacon/event?" + url.PathEscape(beacon) + ";"}).do(t, local, base)
		(adminCall{method: "POST", path: "/v1/events", body: `[{"schema":"Generic","revision":13,"event":{"articleId":"not a number"}}]`}).do(t, local, base)
		waitFor(t, 60*time.Second, "a registry write", func() bool {
			status, _, _ := adminCall{method: "POST", path: "/registry/subjects/LogJSON/versions", body: schemaPayload("a")}.send(t, local, base)
			return status == http.StatusOK
		})
		(adminCall{method: "GET", path: "/dashboard/api/overview"}).do(t, local, base)
		if status, _ := (adminCall{method: "GET", path: "/dashboard/"}).do(t, outsider, base); status != http.StatusForbidden {
			t.Errorf("dashboard from 127.0.0.2: %d, want 403", status)
		}
		// The SQL sink writes the beacon: its logger used to name its
		// component twice.
		waitFor(t, 60*time.Second, "the SQL sink's table", func() bool {
			return strings.Contains(sa.logs(), `"msg":"table created"`)
		})
		hup(t, sa, "DEBUG")
		sa.stop(t)
		lines := checkJSONLog(t, sa.logs())
		for _, want := range []struct {
			msg   string
			attrs map[string]any
		}{
			{"standalone running", nil},
			{"schema registered", map[string]any{"component": "registry", "subject": "LogJSON"}},
			{"http request", map[string]any{"component": "http", "method": "POST", "path": "/v1/events", "status": 400}},
			{"http request", map[string]any{"component": "http", "path": "/dashboard/", "status": 403}},
			{"http request", map[string]any{"component": "http", "path": "/beacon/event", "status": 204}},
			{"reloaded", map[string]any{"component": "reload"}},
			{"table created", map[string]any{"component": "sqlsink", "dialect": "sqlite"}},
		} {
			if findLine(lines, want.msg, want.attrs) == nil {
				t.Errorf("no line %q with %v", want.msg, want.attrs)
			}
		}
		var debug bool
		for _, l := range lines {
			debug = debug || l["level"] == "DEBUG"
		}
		if !debug {
			t.Error("no DEBUG line at log.level debug")
		}
		if strings.Contains(sa.logs(), "not a number") || strings.Contains(sa.logs(), "mobileMode") {
			t.Error("a request log line holds the event (query string or body)")
		}
	})

	t.Run("config file", func(t *testing.T) {
		cfg := filepath.Join(t.TempDir(), "eventlogging.yaml")
		write := func(level string) {
			if err := os.WriteFile(cfg, []byte("log:\n  format: json\n  level: "+level+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		write("info")
		sa, _ := start(t, nil, "--config", cfg)
		write("debug")
		hup(t, sa, "DEBUG")
		sa.stop(t)
		lines := checkJSONLog(t, sa.logs())
		if findLine(lines, "standalone running", nil) == nil {
			t.Error("no start-up line")
		}
	})
}
