package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files")

// goldenArgs run `eventlogging process --from` on the sample raw events.
var goldenArgs = []string{"process", "--from", "../../examples/raw-events.log", "--schemas", "../../examples/schemas",
	"--ip-hash-key-hex", "000102030405060708090a0b0c0d0e0f", "--processor-id", "golden"}

// TestOfflineGolden runs `eventlogging process --from` on the sample raw
// events and compares every output record with the golden file, with one
// worker and with several.
func TestOfflineGolden(t *testing.T) {
	for _, workers := range []string{"1", "2", "4"} {
		var stdout, stderr bytes.Buffer
		if code := Run(append(slices.Clone(goldenArgs), "--workers", workers), nil, &stdout, &stderr); code != 0 {
			t.Fatalf("--workers %s: exit %d: %s", workers, code, stderr.String())
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
		if *update && workers == "1" {
			if err := os.WriteFile(golden, norm.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if !bytes.Equal(norm.Bytes(), want) {
			t.Errorf("--workers %s: offline output differs from %s (rerun with -update after checking):\n%s", workers, golden, norm.String())
		}
	}
}

// processingTime matches the receive time of a record, to blank those
// that are the processing time (lines whose own time could not be read).
var processingTime = regexp.MustCompile(`"timestamp":(-?[0-9]+),"dt":"[^"]*"`)

// runOffline runs `eventlogging process` with args and returns its output,
// with the receive times that fell during the run (the processing time of
// lines that could not be parsed) blanked, and how many were.
func runOffline(t *testing.T, args []string) ([]byte, int) {
	t.Helper()
	from := time.Now().Unix()
	var stdout, stderr bytes.Buffer
	if code := Run(args, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
	}
	to := time.Now().Unix()
	blanked := 0
	out := processingTime.ReplaceAllFunc(stdout.Bytes(), func(m []byte) []byte {
		ts, err := strconv.ParseInt(string(processingTime.FindSubmatch(m)[1]), 10, 64)
		if err != nil || ts < from || ts > to {
			return m
		}
		blanked++
		return []byte(`"timestamp":0,"dt":"(processing time)"`)
	})
	return out, blanked
}

// TestOfflineWorkersSameOutput: the bytes written by `process --from` do
// not depend on --workers, on the sample events and on the standard
// workload lines (3,000 lines, several chunks).
func TestOfflineWorkersSameOutput(t *testing.T) {
	workload := []string{"process", "--from", "../../testdata/workload/raw.tsv", "--to", "-",
		"--format", "%q %{recvFrom}s %{seqId}d %t %o %{userAgent}i", "--schemas", "../../testdata/workload/schemas",
		"--ip", "hash", "--ip-hash-key-hex", "000102030405060708090a0b0c0d0e0f", "--processor-id", "workers-test"}
	for name, args := range map[string][]string{"sample": goldenArgs, "workload": workload} {
		t.Run(name, func(t *testing.T) {
			want, wantBlanked := runOffline(t, append(slices.Clone(args), "--workers", "1"))
			if len(want) == 0 {
				t.Fatal("no output")
			}
			for _, workers := range []string{"2", "3", "8"} {
				got, blanked := runOffline(t, append(slices.Clone(args), "--workers", workers))
				if blanked != wantBlanked {
					t.Errorf("--workers %s: %d records with the processing time, --workers 1 had %d", workers, blanked, wantBlanked)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("--workers %s: output (%d bytes) differs from --workers 1 (%d bytes)", workers, len(got), len(want))
				}
			}
		})
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
		{[]string{"process", "--from", "-", "--workers", "0"}, 2, "--workers 0: want at least 1"},
		{[]string{"process", "--workers", "2"}, 2, "--workers is for offline mode"},
		{[]string{"process", "--bogus"}, 2, "unknown flag --bogus"},
		{[]string{"nonsense"}, 2, "unknown command"},
		{[]string{"process", "--from", "/nonexistent/file", "--schemas", "../../examples/schemas"}, 1, "no such file"},
	}
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		code := Run(c.args, strings.NewReader(""), &stdout, &stderr)
		if code != c.code || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d containing %q", c.args, code, stderr.String(), c.code, c.want)
		}
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"process", "--help"}, {"check-config", "--help"}} {
		var stdout, stderr bytes.Buffer
		if code := Run(args, nil, &stdout, &stderr); code != 0 {
			t.Errorf("%v: exit %d", args, code)
		}
		if out := stdout.String() + stderr.String(); !strings.Contains(out, "Usage") {
			t.Errorf("%v: no usage text: %q", args, out)
		}
	}
}
