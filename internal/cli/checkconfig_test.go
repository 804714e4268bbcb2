package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckConfigFiles is a user checking a configuration in /etc-like
// folder from elsewhere: relative paths are relative to the file's folder
// (on 1481bd2, to the current directory), a missing file is named by its
// key, and the stream configuration's mistakes are told with its file,
// line and column and the key as written.
func TestCheckConfigFiles(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "eventlogging.yaml")
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check := func() (int, string) {
		var stdout, stderr bytes.Buffer
		code := Run([]string{"check-config", "--config", cfg}, nil, &stdout, &stderr)
		return code, stderr.String()
	}
	t.Chdir(t.TempDir()) // elsewhere

	write("eventlogging.yaml", "process:\n  streams_file: streams.yaml\n")
	if code, out := check(); code != 1 || !strings.Contains(out, "process.streams_file: "+filepath.Join(dir, "streams.yaml")+" does not exist") {
		t.Errorf("missing streams file: exit %d, %q", code, out)
	}
	write("streams.yaml", "streams:\n  - name: a.b\n    schema_titel: x\n")
	if code, out := check(); code != 1 || !strings.Contains(out, filepath.Join(dir, "streams.yaml")+`:3:5: streams[0].schema_titel: unknown key "schema_titel" (did you mean "schema_title"?)`) {
		t.Errorf("mistyped stream key: exit %d, %q", code, out)
	}
	write("streams.yaml", "streams:\n  - name: a.b\n    schema_title: x\n")
	if code, out := check(); code != 0 {
		t.Errorf("a good configuration: exit %d, %q", code, out)
	}
	write("eventlogging.yaml", "process:\n  streams_file: streams.yaml\nsink:\n  file_max_age: 5\n")
	if code, out := check(); code != 1 || !strings.Contains(out, cfg+":4:17: sink.file_max_age: 5 is not a duration: write it with a unit, e.g. 5m") {
		t.Errorf("a duration without a unit: exit %d, %q", code, out)
	}
}

// TestFindingsReadAsSentences: lint's and compat's summaries count in
// words ("1 problem", "2 problems"), without a trailing ": findings".
func TestFindingsReadAsSentences(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "Bad"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Bad", "1.json"), []byte(`{"properties":{"v":{"type":["string","integer"]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := Run([]string{"schema", "lint", dir}, nil, &stdout, &stderr)
	if want := "eventlogging: schema lint: 1 problem in " + dir + "\n"; code != 1 || stderr.String() != want {
		t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr.String(), want)
	}
}

// TestIcebergFlags: the Iceberg settings docs/iceberg.md lists have flags;
// a duration without a unit says what to write.
func TestIcebergFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := Run([]string{"sink", "--kafka-brokers", "127.0.0.1:1", "--iceberg-commit-interval", "5"}, nil, &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), `--iceberg-commit-interval: sink.iceberg_commit_interval: "5" is not a duration: write it with a unit, e.g. 5m`) {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
	fs := newFlagSet("t", "", &stderr)
	o := newOverlay(fs, "", flagIcebergCommitInterval, flagIcebergNamespace)
	c, err := o.parse([]string{"--iceberg-commit-interval", "20s", "--iceberg-namespace", "analytics"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Sink.IcebergCommitInterval.String() != "20s" || c.Sink.IcebergNamespace != "analytics" {
		t.Errorf("flags set %v and %q", c.Sink.IcebergCommitInterval, c.Sink.IcebergNamespace)
	}
	if _, err := o.parse([]string{"--iceberg-namespace", "bad name"}); err == nil || !strings.Contains(err.Error(), "sink.iceberg_namespace") {
		t.Errorf("a namespace with a space: %v", err)
	}
}
