package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestOfflineGolden runs `eventlogging process --from` on the sample raw
// events and compares every output record with the golden file.
func TestOfflineGolden(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"process", "--from", "../../examples/raw-events.log", "--schemas", "../../examples/schemas",
		"--ip-hash-key-hex", "000102030405060708090a0b0c0d0e0f", "--processor-id", "golden"}
	if code := run(args, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	// The one line without a receive time gets the processing time: blank it.
	var norm bytes.Buffer
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var rec struct {
			Topic string         `json:"topic"`
			Key   any            `json:"key"`
			Value map[string]any `json:"value"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("output line is not JSON: %v: %s", err, line)
		}
		if rec.Key != nil {
			t.Errorf("key %v, want null", rec.Key)
		}
		if ev, _ := rec.Value["event"].(map[string]any); ev != nil && ev["rawEvent"] == "not a raw event line at all" {
			rec.Value["timestamp"], rec.Value["dt"] = "(processing time)", "(processing time)"
		}
		out, _ := json.Marshal(rec)
		norm.Write(out)
		norm.WriteByte('\n')
	}
	golden := filepath.Join("testdata", "offline.golden.jsonl")
	if *update {
		if err := os.WriteFile(golden, norm.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(norm.Bytes(), want) {
		t.Errorf("offline output differs from %s (rerun with -update after checking):\n%s", golden, norm.String())
	}
}

func TestOfflineUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"process", "--from", "-", "--ip", "encrypt"}, 1, `process.ip: "encrypt"`},
		{[]string{"process", "--from", "-", "--ip-hash-key-hex", "xyz"}, 2, "--ip-hash-key-hex: not a hex string"},
		{[]string{"process", "--from", "-", "--schemas", "/nonexistent"}, 1, "not a readable directory"},
		{[]string{"process", "--from", "-", "--format", "%q %x"}, 1, "format"},
		{[]string{"process", "--ip-hash-key-hex", "00"}, 2, "offline mode"},
		{[]string{"process", "--bogus"}, 2, "flag provided but not defined"},
		{[]string{"nonsense"}, 2, "unknown command"},
		{[]string{"process", "--from", "/nonexistent/file", "--schemas", "../../examples/schemas"}, 1, "no such file"},
	}
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		code := run(c.args, strings.NewReader(""), &stdout, &stderr)
		if code != c.code || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d containing %q", c.args, code, stderr.String(), c.code, c.want)
		}
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"process", "--help"}, {"check-config", "--help"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, nil, &stdout, &stderr); code != 0 {
			t.Errorf("%v: exit %d", args, code)
		}
		if out := stdout.String() + stderr.String(); !strings.Contains(out, "Usage") {
			t.Errorf("%v: no usage text: %q", args, out)
		}
	}
}
