package e2e

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStatusAndReplayCLI: against a standalone, `status --json` reports
// the roles, streams and latest EventErrors; `replay` re-submits an event
// whose schema version was missing once the version is registered, and
// never twice.
func TestStatusAndReplayCLI(t *testing.T) {
	schemas, fixed := schemasWithoutEditFunnel11(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	_, base := startStandalone(t, []string{"EVENTLOGGING_PROCESS_NEGATIVE_CACHE_TTL=1s"}, dataDir, "--schemas", schemas, "--streams", "../../examples/streams.yaml")

	nav := `{"schema":"NavigationTiming","revision":7,"event":{"responseStart":80,"loadEventEnd":700}}`
	postHasty(t, base, "["+nav+","+nav+"]")
	postHasty(t, base, `[{"$schema":"/analytics/edit_funnel/1.1.0","meta":{"stream":"analytics.edit_funnel"},"action":"save_success","editor":"wikitext","session_token":"a1b2c3d4e5f6a7b8","page_id":42,"edit_duration_ms":1234}]`)
	runCLI(t, "tail", "--data-dir", dataDir, "--from-beginning", "--count", "1", "--timeout", "60s", "eventlogging_EventError")

	// status: the JSON a script reads.
	var st struct {
		Healthy bool `json:"healthy"`
		Roles   []struct {
			Role    string `json:"role"`
			Healthy bool   `json:"healthy"`
		} `json:"roles"`
		Streams []struct {
			Topic string `json:"topic"`
			Kind  string `json:"kind"`
			Total int64  `json:"total"`
		} `json:"streams"`
		Errors []struct {
			Schema  string `json:"schema"`
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	waitFor(t, 60*time.Second, "status to show intake, registry, processor and both sinks healthy", func() bool {
		out, err := exec.CommandContext(t.Context(), binary(t), "status", "--data-dir", dataDir, "--json", "--interval", "500ms").Output()
		if err != nil || json.Unmarshal(out, &st) != nil {
			return false
		}
		roles := map[string]bool{}
		for _, r := range st.Roles {
			roles[r.Role] = r.Healthy
		}
		return st.Healthy && roles["processor"] && roles["sink-sql"] && roles["sink-files"] && roles["intake"] && roles["registry"]
	})
	totals := map[string]int64{}
	for _, s := range st.Streams {
		totals[s.Topic] = s.Total
	}
	if totals["eventlogging_NavigationTiming"] != 2 || totals["eventlogging_EventError"] != 1 {
		t.Errorf("status streams: %v", totals)
	}
	if len(st.Errors) != 1 || st.Errors[0].Code != "processor" || !strings.Contains(st.Errors[0].Message, "unknown schema") {
		t.Errorf("status errors: %+v", st.Errors)
	}
	human := runCLI(t, "status", "--data-dir", dataDir, "--interval", "200ms")
	for _, want := range []string{"ROLE", "processor", "eventlogging_NavigationTiming", "latest EventErrors:", "unknown schema"} {
		if !strings.Contains(human, want) {
			t.Errorf("status output lacks %q:\n%s", want, human)
		}
	}

	// replay: a dry run counts, the real run re-submits after the fix, a
	// second run skips what was replayed.
	schemaURI := "/analytics/edit_funnel/1.1.0"
	if out := runCLI(t, "replay", "--data-dir", dataDir, "--schema", schemaURI, "--dry-run"); !strings.Contains(out, "would replay 1 EventErrors, skipped 0") {
		t.Fatalf("replay --dry-run: %q", out)
	}
	if out := runCLI(t, "schema", "push", fixed, "--registry", base+"/registry"); !strings.Contains(out, "1 registered") {
		t.Fatalf("schema push: %q", out)
	}
	if out := runCLI(t, "replay", "--data-dir", dataDir, "--schema", schemaURI, "--since", "1h"); !strings.Contains(out, "replayed 1 EventErrors, skipped 0") {
		t.Fatalf("replay: %q", out)
	}
	got := runCLI(t, "tail", "--data-dir", dataDir, "--from-beginning", "--count", "1", "--timeout", "60s", "eventlogging_analytics.edit_funnel")
	if !strings.Contains(got, `"edit_duration_ms":1234`) {
		t.Fatalf("the replayed event did not arrive valid: %q", got)
	}
	if out := runCLI(t, "replay", "--data-dir", dataDir, "--schema", schemaURI); !strings.Contains(out, "replayed 0 EventErrors, skipped 1") || !strings.Contains(out, "already replayed") {
		t.Fatalf("second replay: %q", out)
	}
}
