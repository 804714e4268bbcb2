package e2e

import (
	"database/sql"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// moveFile moves rel from one folder to the same place in another.
func moveFile(t *testing.T, from, to, rel string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(to, rel)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(from, rel), filepath.Join(to, rel)); err != nil {
		t.Fatal(err)
	}
}

// copyExampleSchemas copies examples/schemas into a temporary folder.
func copyExampleSchemas(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "schemas")
	if err := os.CopyFS(dir, os.DirFS("../../examples/schemas")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// schemasWithoutEditFunnel11 copies examples/schemas without
// analytics/edit_funnel 1.1.0, which it puts alone in the folder fixed:
// events of that version fail until fixed is pushed.
func schemasWithoutEditFunnel11(t *testing.T) (schemas, fixed string) {
	t.Helper()
	schemas = copyExampleSchemas(t)
	fixed = filepath.Join(t.TempDir(), "fixed")
	missing := filepath.Join("jsonschema", "analytics", "edit_funnel", "1.1.0.yaml")
	if err := os.MkdirAll(filepath.Dir(filepath.Join(fixed, missing)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(schemas, missing), filepath.Join(fixed, missing)); err != nil {
		t.Fatal(err)
	}
	return schemas, fixed
}

// runCLIStatus runs the binary and returns its stdout and exit status.
func runCLIStatus(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), binary(t), args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out) + stderr.String(), ee.ExitCode()
	default:
		t.Fatalf("eventlogging %v: %v", args, err)
		return "", -1
	}
}

// postSync POSTs events to the synchronous path and returns the status
// and the answer.
func postSync(t *testing.T, base, body string) (int, string) {
	t.Helper()
	return request(t, http.MethodPost, base+"/v1/events", body, map[string]string{"Content-Type": "application/json"})
}

// countRows waits until query returns want, failing after timeout.
func countRows(t *testing.T, db *sql.DB, want int, query string, args ...any) {
	t.Helper()
	var n int
	deadline := time.Now().Add(90 * time.Second)
	for {
		err := db.QueryRowContext(t.Context(), query, args...).Scan(&n)
		if err == nil && n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d rows (err %v), want %d", query, n, err, want)
		}
		time.Sleep(200 * time.Millisecond) // polling SQL
	}
}

// TestReplayRightAfterPush is the operator's impatient path, with the
// default 30 s negative cache: two events of missing schemas become
// EventErrors; the operator pushes the first schema and replays everything
// at once. The first event is valid (before the fix it met the processor's
// cached "unknown schema", failed again and was recorded as replayed, so
// it was lost for good); the second fails again, is reported with its
// reason and stays replayable; after the second push it is replayed valid.
// Each is stored once in SQL.
func TestReplayRightAfterPush(t *testing.T) {
	schemas := copyExampleSchemas(t)
	fixA, fixB := filepath.Join(t.TempDir(), "fixA"), filepath.Join(t.TempDir(), "fixB")
	moveFile(t, schemas, fixA, filepath.Join("jsonschema", "analytics", "edit_funnel", "1.1.0.yaml"))
	moveFile(t, schemas, fixB, filepath.Join("ButtonClick", "1.json"))
	dataDir := filepath.Join(t.TempDir(), "data")
	_, base := startStandalone(t, nil, dataDir, "--schemas", schemas, "--streams", "../../examples/streams.yaml")

	postHasty(t, base, `[{"$schema":"/analytics/edit_funnel/1.1.0","meta":{"stream":"analytics.edit_funnel"},"action":"save_success","editor":"wikitext","session_token":"impatient-a-0001","page_id":42,"edit_duration_ms":1234},`+
		`{"schema":"ButtonClick","revision":1,"wiki":"testwiki","webHost":"test.example","event":{"button":"save","page":"Impatient_B"}}]`)
	runCLI(t, "tail", "--data-dir", dataDir, "--from-beginning", "--count", "2", "--timeout", "60s", "eventlogging_EventError")

	// The first fix, and the replay in the same second.
	if out := runCLI(t, "schema", "push", fixA, "--registry", base+"/registry"); !strings.Contains(out, "1 registered") {
		t.Fatalf("schema push: %q", out)
	}
	out, code := runCLIStatus(t, "replay", "--data-dir", dataDir)
	if code != 1 || !strings.Contains(out, "replayed 2 EventErrors, skipped 0: 1 valid, 1 failed again") || !strings.Contains(out, "failed again") {
		t.Fatalf("replay right after the first push: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "ButtonClick") && !strings.Contains(out, "unknown schema") {
		t.Errorf("the replay that failed again does not say why:\n%s", out)
	}

	// The second fix: only the one that failed again is replayed.
	if out := runCLI(t, "schema", "push", fixB, "--registry", base+"/registry"); !strings.Contains(out, "1 registered") {
		t.Fatalf("schema push: %q", out)
	}
	if out, code := runCLIStatus(t, "replay", "--data-dir", dataDir); code != 0 || !strings.Contains(out, "replayed 1 EventErrors, skipped 1: 1 valid, 0 failed again") {
		t.Fatalf("replay after the second push: exit %d\n%s", code, out)
	}
	if out, code := runCLIStatus(t, "replay", "--data-dir", dataDir); code != 0 || !strings.Contains(out, "replayed 0 EventErrors, skipped 2") {
		t.Fatalf("third replay: exit %d\n%s", code, out)
	}

	db := openSQLite(t, filepath.Join(dataDir, "events.db"))
	countRows(t, db, 1, `SELECT count(*) FROM "analytics_edit_funnel_1_1_0" WHERE event_session_token = ?`, "impatient-a-0001")
	countRows(t, db, 1, `SELECT count(*) FROM "ButtonClick_1" WHERE event_page = ?`, "Impatient_B")
}

// TestReloadOnSIGHUP: standalone under a steady 2,000 beacons/s; a schema
// revision and a stream are added and SIGHUP sent: events of both are
// valid at once, without a restart; a broken schema file refuses the next
// reload with a log line, and the configuration before it stays in force
// (a revision added beside the broken file is not loaded). No beacon is
// lost or stored twice, and standalone stops cleanly afterwards.
func TestReloadOnSIGHUP(t *testing.T) {
	schemas := copyExampleSchemas(t)
	streams := filepath.Join(t.TempDir(), "streams.yaml")
	orig, err := os.ReadFile("../../examples/streams.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(streams, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(t.TempDir(), "data")
	sa, base := startStandalone(t, nil, dataDir, "--schemas", schemas, "--streams", streams)
	hup := func() {
		t.Helper()
		if err := sa.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	reloads := func(what string) int { return strings.Count(sa.logs(), what) }

	const rate = 2000
	s := newSender(base, "reload-sighup", 4, rate, rate*60)
	loadDone := s.offerInBackground(t, 20*time.Second)
	waitFor(t, 30*time.Second, "beacons flowing", func() bool { return s.acked.Load() > rate })

	newRev := `{"schema":"ButtonClick","revision":20000001,"wiki":"testwiki","webHost":"test.example","event":{"button":"save","page":"P","color":"red"}}`
	newStream := `{"$schema":"/analytics/edit_funnel/1.0.0","meta":{"stream":"analytics.reload_test"},"action":"init","editor":"wikitext","session_token":"reload-test-0001"}`
	// Before: both refused (and the unknown revision is now in the
	// processor's negative cache).
	for _, ev := range []string{newRev, newStream} {
		if code, body := postSync(t, base, ev); code != http.StatusBadRequest {
			t.Fatalf("before the reload: %d %s", code, body)
		}
	}
	doc := `{"type":"object","properties":{"button":{"type":"string"},"page":{"type":"string"},"color":{"type":"string"}},"required":["button","page"]}`
	if err := os.WriteFile(filepath.Join(schemas, "ButtonClick", "20000001.json"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(streams, append(orig, "  - name: analytics.reload_test\n    schema_title: analytics/edit_funnel\n    topic: eventlogging_analytics.reload_test\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	hup()
	waitFor(t, 30*time.Second, "the reload", func() bool { return reloads("msg=reloaded") == 1 })
	for _, ev := range []string{newRev, newStream} {
		if code, body := postSync(t, base, ev); code != http.StatusCreated {
			t.Fatalf("after the reload: %d %s", code, body)
		}
	}

	// A broken file: the whole reload is refused, nothing of it applied.
	if err := os.MkdirAll(filepath.Join(schemas, "Broken"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(schemas, "Broken", "5.json"), []byte(`{"type": "object", `), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(schemas, "ButtonClick", "20000002.json"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	hup()
	waitFor(t, 30*time.Second, "the refused reload", func() bool { return reloads("reload refused") == 1 })
	if logs := sa.logs(); !strings.Contains(logs, filepath.Join("Broken", "5.json")) {
		t.Errorf("the refusal does not name the broken file:\n%s", tail(logs, 2000))
	}
	if code, body := postSync(t, base, newRev); code != http.StatusCreated {
		t.Errorf("after the refused reload, the revision loaded before: %d %s", code, body)
	}
	if code, body := postSync(t, base, strings.Replace(newRev, "20000001", "20000002", 1)); code != http.StatusBadRequest {
		t.Errorf("a revision beside the broken file was loaded: %d %s", code, body)
	}

	<-loadDone
	if !alive(sa) {
		t.Fatal("standalone died")
	}
	db := openSQLite(t, filepath.Join(dataDir, "events.db"))
	// Never "drained": wait until every acknowledged beacon is stored, or
	// a minute without a new row.
	d := waitStored(t, db, s, 3*time.Minute, func() bool { return false })
	t.Logf("under SIGHUP reloads: %v", d)
	if d.acked < rate*10 {
		t.Errorf("only %d beacons acknowledged: the load did not flow", d.acked)
	}
	d.check(t)
	countRows(t, db, 1, `SELECT count(*) FROM "analytics_edit_funnel_1_0_0" WHERE event_session_token = ?`, "reload-test-0001")
	sa.stop(t)
}

// TestPushNewRevisionOfLegacySchema is the everyday schema change, as a
// user makes it (issue 31): a new revision file beside the existing one,
// `schema push` of the folder, and a replay in the same second. The push
// registers the revision (on 1481bd2 it failed: "set import mode: Cannot
// import since found existing subjects"), a second push registers nothing,
// and the replayed event is valid.
func TestPushNewRevisionOfLegacySchema(t *testing.T) {
	schemas := copyExampleSchemas(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	_, base := startStandalone(t, nil, dataDir, "--schemas", schemas, "--streams", "../../examples/streams.yaml")
	ev := `{"schema":"ButtonClick","revision":20,"wiki":"testwiki","webHost":"test.example","event":{"button":"save","page":"Rev20","color":"red"}}`
	postHasty(t, base, "["+ev+"]")
	runCLI(t, "tail", "--data-dir", dataDir, "--from-beginning", "--count", "1", "--timeout", "60s", "eventlogging_EventError")

	doc := `{"type":"object","properties":{"button":{"type":"string"},"page":{"type":"string"},"color":{"type":"string"}},"required":["button","page"]}`
	if err := os.WriteFile(filepath.Join(schemas, "ButtonClick", "20.json"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := runCLI(t, "schema", "push", schemas, "--registry", base+"/registry"); !strings.Contains(out, "registered ButtonClick/20") || !strings.Contains(out, "1 registered") {
		t.Fatalf("schema push of a new revision: %q", out)
	}
	if out, code := runCLIStatus(t, "replay", "--data-dir", dataDir); code != 0 || !strings.Contains(out, "1 valid") {
		t.Fatalf("replay right after the push: exit %d\n%s", code, out)
	}
	if out := runCLI(t, "schema", "push", schemas, "--registry", base+"/registry"); !strings.Contains(out, "0 registered") {
		t.Fatalf("second push: %q, want nothing registered", out)
	}
	if code, body := postSync(t, base, ev); code != http.StatusCreated {
		t.Fatalf("an event of the new revision: %d %s", code, body)
	}
	db := openSQLite(t, filepath.Join(dataDir, "events.db"))
	waitFor(t, 60*time.Second, "both events of revision 20 in SQL", func() bool {
		var n int
		err := db.QueryRowContext(t.Context(), `SELECT count(*) FROM "ButtonClick_20" WHERE event_page = 'Rev20'`).Scan(&n)
		return err == nil && n == 2
	})
}

// TestPushIncompatibleShowsWhatDiffers: a user pushes a version its
// predecessor's events would break (a new required property): push exits
// 1 with the reasons and a diff of what differs, not the whole earlier
// schema the registry's answer quotes.
func TestPushIncompatibleShowsWhatDiffers(t *testing.T) {
	schemas := copyExampleSchemas(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	_, base := startStandalone(t, nil, dataDir, "--schemas", schemas, "--streams", "../../examples/streams.yaml")
	dir := filepath.Join(schemas, "jsonschema", "analytics", "edit_funnel")
	prev, err := os.ReadFile(filepath.Join(dir, "1.1.0.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	next := strings.Replace(string(prev), "required: [$schema, meta, action, editor, session_token]", "required: [$schema, meta, action, editor, session_token, page_id]", 1)
	if next == string(prev) {
		t.Fatal("the example's required list changed: update this test")
	}
	if err := os.WriteFile(filepath.Join(dir, "1.2.0.yaml"), []byte(next), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := runCLIStatus(t, "schema", "push", schemas, "--registry", base+"/registry")
	if code != 1 || !strings.Contains(out, "incompatible with the registered versions") || !strings.Contains(out, `+    "page_id"`) {
		t.Fatalf("push of an incompatible version: exit %d\n%s", code, out)
	}
	if strings.Contains(out, "{oldSchema: '") || strings.Contains(out, "edit_duration_ms") || !strings.Contains(out, "lines unchanged") {
		t.Errorf("push quotes the whole earlier schema:\n%s", out)
	}
}
