package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/kafkatest"
	"github.com/eventlogging/eventlogging/internal/testsupport"
)

const editFunnelAvsc = testsupport.EditFunnelAvroClient

// python returns the interpreter with Confluent's client (scripts/test.sh
// installs it and sets EVENTLOGGING_PYTHON).
func python(t *testing.T) string {
	t.Helper()
	py := os.Getenv("EVENTLOGGING_PYTHON")
	if py == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("EVENTLOGGING_PYTHON is not set: scripts/test.sh installs Confluent's Python client and sets it")
		}
		t.Skip("EVENTLOGGING_PYTHON not set (scripts/test.sh sets it); skipping the Confluent Python interop test")
	}
	return py
}

// TestConfluentPythonInterop: Confluent's Python client registers an Avro
// schema through our registry and produces a record our tail decodes; and
// it deserialises an Avro record our intake/processor wrote.
func TestConfluentPythonInterop(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	py := python(t)
	prefix := kafkatest.Topic(t, "interop")
	dir := t.TempDir()
	regAddr, inAddr := freeAddr(t), freeAddr(t)
	regURL := "http://" + regAddr
	avroTopic := prefix + "-edits"
	streams := filepath.Join(dir, "streams.yaml")
	if err := os.WriteFile(streams, []byte("streams:\n  - name: analytics.edit_funnel\n    schema_title: analytics/edit_funnel\n    topic: "+avroTopic+"\n    format: avro\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	avsc := filepath.Join(dir, "edit_funnel.avsc")
	if err := os.WriteFile(avsc, []byte(editFunnelAvsc), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"EVENTLOGGING_KAFKA_BROKERS=" + strings.Join(brokers, ","),
		"EVENTLOGGING_REGISTRY_TOPIC=" + prefix + "-schemas",
		"EVENTLOGGING_REGISTRY_URL=" + regURL,
		"EVENTLOGGING_INTAKE_LISTEN=" + inAddr,
		"EVENTLOGGING_INTAKE_SPOOL_DIR=" + filepath.Join(dir, "spool"),
		"EVENTLOGGING_INTAKE_RAW_TOPIC=" + prefix + "-raw",
		"EVENTLOGGING_PROCESS_ERROR_TOPIC=" + prefix + "-errors",
		"EVENTLOGGING_PROCESS_MIXED_TOPIC=-",
		"EVENTLOGGING_PROCESS_STREAMS_FILE=" + streams,
	}
	reg := startService(t, "registry", env, "registry", "--listen", regAddr, "--import", "../../examples/schemas")
	waitLog(t, reg, "schemas imported", 60*time.Second)
	pyRun := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), py, append([]string{"../../scripts/interop/confluent_avro.py"}, args...)...)
		return output(t, cmd, fmt.Sprintf("python %v", args))
	}

	// 1. Python serialises through our registry; our tail decodes it.
	pyTopic := prefix + "-py"
	createTopic(t, brokers, pyTopic)
	out := pyRun("produce", "--registry", regURL, "--brokers", brokers[0], "--topic", pyTopic, "--schema-file", avsc,
		"--record", `{"meta":{"stream":"analytics.edit_funnel","id":"py-1","dt":"2026-11-30T10:00:00Z"},"action":"init","editor":"wikitext","session_token":"from-python-1234","page_id":42}`)
	if !strings.Contains(out, `"id"`) {
		t.Fatalf("python produce printed %q", out)
	}
	tailed := runCLI(t, "tail", "--brokers", brokers[0], "--registry", regURL, "--from-beginning", "--count", "1", "--timeout", "60s", pyTopic)
	if !strings.Contains(tailed, `"session_token":"from-python-1234"`) {
		t.Fatalf("tail did not decode the Python client's Avro record: %q", tailed)
	}

	// 2. Our processor writes Avro (the stream's format); Python reads it.
	subject := avroTopic + "-value"
	body, _ := json.Marshal(map[string]string{"schema": editFunnelAvsc, "schemaType": "AVRO"})
	if status, b := httpPost(t, regURL+"/subjects/"+subject+"/versions", string(body)); status != 200 {
		t.Fatalf("register %s: %d %s", subject, status, b)
	}
	startService(t, "intake", env, "intake")
	waitReady(t, "http://"+inAddr)
	status, b := httpPost(t, "http://"+inAddr+"/v1/events", `{"$schema":"/analytics/edit_funnel/1.0.0","meta":{"stream":"analytics.edit_funnel"},"action":"save_success","editor":"visualeditor","session_token":"from-go-intake-5678","page_id":7}`)
	if status != 201 {
		t.Fatalf("POST: %d %s", status, b)
	}
	got := pyRun("consume", "--registry", regURL, "--brokers", brokers[0], "--topic", avroTopic, "--count", "1", "--timeout", "60")
	var rec map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(got)), &rec); err != nil {
		t.Fatalf("python consume printed %q: %v", got, err)
	}
	if rec["session_token"] != "from-go-intake-5678" || rec["action"] != "save_success" || rec["meta"].(map[string]any)["id"] == "" {
		t.Fatalf("python read %v", rec)
	}
	t.Logf("Confluent's Python client ↔ our registry: produced and tailed; read our Avro record %v", rec["meta"])
}

func createTopic(t *testing.T, brokers []string, topic string) {
	t.Helper()
	cl := mustAdmin(t, brokers)
	if _, err := cl.CreateTopic(t.Context(), 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
}
