package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runCLI runs the eventlogging binary and returns its stdout.
func runCLI(t *testing.T, args ...string) string {
	t.Helper()
	return output(t, exec.CommandContext(t.Context(), binary(t), args...), fmt.Sprintf("eventlogging %v", args))
}

// output runs cmd and returns its stdout; when it fails, the test fails
// with what, the error and its stderr.
func output(t *testing.T, cmd *exec.Cmd, what string) string {
	t.Helper()
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok { //nolint:errorlint // direct type from exec
			stderr = ee.Stderr
		}
		t.Fatalf("%s: %v\n%s", what, err, stderr)
	}
	return string(out)
}

// TestQuickstart runs the README quickstart as a newcomer would: standalone
// with the example schemas, examples/events.sh, then tail to see a valid
// event and an EventError; then a restart keeps the data and the consumer
// offsets (nothing is processed twice).
func TestQuickstart(t *testing.T) {
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed by examples/events.sh (scripts/test.sh installs it)", tool)
		}
	}
	dataDir := filepath.Join(t.TempDir(), "data")
	addr := freeAddr(t)
	base := "http://" + addr
	args := []string{"standalone", "--data-dir", dataDir, "--listen", addr, "--kafka-listen", freeAddr(t),
		"--schemas", "../../examples/schemas", "--streams", "../../examples/streams.yaml"}
	sa := startService(t, "standalone", nil, args...)
	waitReady(t, base)

	// The address opened in a browser leads to the dashboard.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/", nil)
	resp, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/dashboard/" {
		t.Errorf("GET / = %d, Location %q; want 302 to /dashboard/", resp.StatusCode, resp.Header.Get("Location"))
	}

	out, err := exec.CommandContext(t.Context(), "bash", "../../examples/events.sh", base).CombinedOutput()
	if err != nil {
		t.Fatalf("examples/events.sh: %v\n%s", err, out)
	}
	for _, want := range []string{"beacon: HTTP 204", "batch: HTTP 207", "hasty: HTTP 202", `"accepted":2,"invalid":1`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("events.sh output lacks %q:\n%s", want, out)
		}
	}

	// A valid event, read back with tail (the beacon and the hasty event).
	nav := runCLI(t, "tail", "--data-dir", dataDir, "--from-beginning", "--count", "2", "--timeout", "60s", "eventlogging_NavigationTiming")
	lines := strings.Split(strings.TrimSpace(nav), "\n")
	if len(lines) != 2 {
		t.Fatalf("tail NavigationTiming: %d lines:\n%s", len(lines), nav)
	}
	var c struct {
		Schema string         `json:"schema"`
		UUID   string         `json:"uuid"`
		Event  map[string]any `json:"event"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &c); err != nil || c.Schema != "NavigationTiming" || c.UUID == "" || c.Event["loadEventEnd"] == nil {
		t.Fatalf("tail printed %q (%v)", lines[0], err)
	}
	// The EventError of the invalid batch event, with its reason.
	ee := runCLI(t, "tail", "--data-dir", dataDir, "--from-beginning", "--count", "1", "--timeout", "60s", "eventlogging_EventError")
	if !strings.Contains(ee, `"code":"validation"`) || !strings.Contains(ee, `"pointer":"/action"`) {
		t.Fatalf("tail EventError printed %q", ee)
	}

	// The valid Event Platform event of the batch is in SQLite, in the
	// table named after its $schema, its meta.id as the uuid.
	db := openSQLite(t, filepath.Join(dataDir, "events.db"))
	var uuid, action string
	var pageID int64
	waitFor(t, 60*time.Second, "the edit_funnel event in SQLite", func() bool {
		return db.QueryRowContext(t.Context(), `SELECT uuid, event_action, event_page_id FROM "analytics_edit_funnel_1_0_0"`).Scan(&uuid, &action, &pageID) == nil
	})
	if uuid == "" || action != "init" || pageID != 15580374 {
		t.Errorf("edit_funnel row: uuid %q, action %q, page_id %d", uuid, action, pageID)
	}

	// The schema CLI against the standalone's registry: the folder is
	// already registered (push is idempotent), get and diff read it back.
	reg := base + "/registry"
	if out := runCLI(t, "schema", "push", "../../examples/schemas", "--registry", reg); !strings.Contains(out, "0 registered") {
		t.Errorf("schema push of an imported folder: %q", out)
	}
	if out := runCLI(t, "schema", "get", "Generic", "--registry", reg); !strings.Contains(out, `"articleTitle"`) {
		t.Errorf("schema get Generic: %q", out)
	}
	if out := runCLI(t, "schema", "diff", "analytics/edit_funnel", "1", "2", "--registry", reg); !strings.Contains(out, `+    "edit_duration_ms": {`) {
		t.Errorf("schema diff: %q", out)
	}

	// Restart: data and consumer offsets survive.
	sa.stop(t)
	startService(t, "standalone (restarted)", nil, args...)
	waitReady(t, base)
	again := runCLI(t, "tail", "--data-dir", dataDir, "--from-beginning", "--timeout", "15s", "eventlogging_NavigationTiming")
	if got := strings.Count(strings.TrimSpace(again), "\n") + 1; got != 2 {
		t.Fatalf("after a restart the topic holds %d events, want the same 2 (lost data, or reprocessed without offsets):\n%s", got, again)
	}
}
