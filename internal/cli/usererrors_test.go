package cli

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Issue 31: errors that say what to do, seen as a user sees them — the
// command run as main runs it, its stderr and exit status.

// runCLI runs args as main does and returns the exit status and stderr.
func runCLI(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Run(args, nil, &stdout, &stderr)
	return code, stderr.String()
}

// TestFlagMistakeOneLine: a mistyped flag is one line, with the flag it
// probably was and how to get the help, not the whole help scrolling the
// mistake away.
func TestFlagMistakeOneLine(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"standalone", "--schema", "x"}, "eventlogging standalone: unknown flag --schema (did you mean --schemas?); run 'eventlogging standalone --help' for the flags"},
		{[]string{"standalone", "-listne=:1"}, "eventlogging standalone: unknown flag --listne (did you mean --listen?); run 'eventlogging standalone --help' for the flags"},
		{[]string{"standalone", "--kafka", "x"}, "eventlogging standalone: unknown flag --kafka (did you mean --kafka-brokers or --kafka-listen?); run 'eventlogging standalone --help' for the flags"},
		{[]string{"tail", "--bogus", "t"}, "eventlogging tail: unknown flag --bogus; run 'eventlogging tail --help' for the flags"},
		{[]string{"tail", "t", "--count"}, "eventlogging tail: flag --count needs a value; run 'eventlogging tail --help' for the flags"},
		{[]string{"tail", "--count", "x", "t"}, `eventlogging tail: invalid value "x" for flag --count: parse error; run 'eventlogging tail --help' for the flags`},
		{[]string{"schema", "lint", "--registr", "u", "dir"}, "eventlogging schema lint: unknown flag --registr (did you mean --registry?); run 'eventlogging schema lint --help' for the flags"},
		{[]string{"status", "extra"}, `eventlogging status: unexpected arguments ["extra"]; run 'eventlogging status --help' for the flags`},
	} {
		code, stderr := runCLI(t, c.args...)
		if code != 2 || stderr != c.want+"\n" {
			t.Errorf("%q: exit %d, stderr\n%s\nwant exit 2 and the one line\n%s", c.args, code, stderr, c.want)
		}
	}
}

// TestHelpSpellsFlagsAsUsage: --help still prints the help, and its flag
// list spells the flags as the usage lines do: --name.
func TestHelpSpellsFlagsAsUsage(t *testing.T) {
	for _, cmd := range []string{"standalone", "tail", "status", "process", "bench"} {
		code, stderr := runCLI(t, cmd, "--help")
		if code != 0 || !strings.Contains(stderr, "Usage:") || !strings.Contains(stderr, "\nFlags:\n") {
			t.Errorf("%s --help: exit %d, want 0 and the help:\n%s", cmd, code, stderr)
			continue
		}
		flags := stderr[strings.Index(stderr, "\nFlags:\n"):]
		if m := regexp.MustCompile(`(?m)^  -[a-z]`).FindString(flags); m != "" {
			t.Errorf("%s --help spells a flag -name:\n%s", cmd, flags)
		}
		if !strings.Contains(flags, "\n  --config") && cmd != "bench" {
			t.Errorf("%s --help lists no --config:\n%s", cmd, flags)
		}
	}
	_, stderr := runCLI(t, "tail", "--help")
	if !strings.Contains(stderr, "  --data-dir DIR\n") || !strings.Contains(stderr, `(default "data")`) {
		t.Errorf("tail --help: want --data-dir DIR with its default:\n%s", stderr)
	}
}

// emptySchemas is an empty schema folder.
func emptySchemas(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "schemas")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestStandalonePortInUse: a taken port names its flag and what to do,
// and the HTTP port is checked before the embedded broker starts.
func TestStandalonePortInUse(t *testing.T) {
	taken, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	schemas := emptySchemas(t)

	data := t.TempDir()
	code, stderr := runCLI(t, "standalone", "--data-dir", data, "--schemas", schemas, "--listen", addr, "--kafka-listen", "127.0.0.1:0")
	want := "eventlogging: standalone: --listen " + addr + ": address already in use (another eventlogging standalone?): choose another with --listen\n"
	if code != 1 || !strings.HasSuffix(stderr, want) {
		t.Errorf("--listen taken: exit %d, stderr\n%s\nwant exit 1 ending in\n%s", code, stderr, want)
	}
	if _, err := os.Stat(filepath.Join(data, "kafka")); !os.IsNotExist(err) {
		t.Errorf("--listen taken: the embedded broker started (%s/kafka: %v)", data, err)
	}

	code, stderr = runCLI(t, "standalone", "--data-dir", t.TempDir(), "--schemas", schemas, "--listen", "127.0.0.1:0", "--kafka-listen", addr)
	want = "eventlogging: standalone: --kafka-listen " + addr + ": address already in use (another eventlogging standalone, or a Kafka broker?): choose another with --kafka-listen\n"
	if code != 1 || !strings.HasSuffix(stderr, want) {
		t.Errorf("--kafka-listen taken: exit %d, stderr\n%s\nwant exit 1 ending in\n%s", code, stderr, want)
	}
}

// TestNamePortInUse: the flag is found from the address the listener
// tried, however the user spelled it, for the roles that listen after
// reaching Kafka (intake, registry, dashboard, process, sink).
func TestNamePortInUse(t *testing.T) {
	taken, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	for _, addr := range []string{taken.Addr().String(), fmt.Sprintf(":%d", port), fmt.Sprintf("localhost:%d", port)} {
		_, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", addr)
		if err == nil {
			t.Fatalf("%s: listening on a taken port", addr)
		}
		got := namePortInUse("intake", fmt.Errorf("intake: %w", err),
			listenFlag{name: "listen", addr: addr}, listenFlag{name: "metrics-listen", addr: "127.0.0.1:1"})
		want := "intake: --listen " + addr + ": address already in use (another eventlogging intake?): choose another with --listen"
		if got.Error() != want {
			t.Errorf("%s taken: %q, want %q", addr, got, want)
		}
	}
	other := fmt.Errorf("intake: %w", os.ErrPermission)
	if got := namePortInUse("intake", other, listenFlag{name: "listen", addr: ":8080"}); got.Error() != other.Error() {
		t.Errorf("another error: %v, want it unchanged", got)
	}
}

// TestStandaloneSchemaFolderMissing: a missing schema folder names
// --schemas and the default, before anything starts.
func TestStandaloneSchemaFolderMissing(t *testing.T) {
	data := t.TempDir()
	missing := filepath.Join(t.TempDir(), "examples", "schemas")
	code, stderr := runCLI(t, "standalone", "--data-dir", data, "--schemas", missing, "--listen", "127.0.0.1:0", "--kafka-listen", "127.0.0.1:0")
	want := "eventlogging: standalone: --schemas " + missing + ": no such folder; give the folder of your schemas with --schemas DIR, or process.schemas_dir in --config (default is ./schemas)\n"
	if code != 1 || stderr != want {
		t.Errorf("--schemas missing: exit %d, stderr\n%s\nwant exit 1 and\n%s", code, stderr, want)
	}
	if _, err := os.Stat(filepath.Join(data, "kafka")); !os.IsNotExist(err) {
		t.Errorf("--schemas missing: the embedded broker started (%s/kafka: %v)", data, err)
	}

	// Without --schemas: the default it tried, in the folder it tried it.
	wd := t.TempDir()
	t.Chdir(wd)
	code, stderr = runCLI(t, "standalone", "--data-dir", data, "--listen", "127.0.0.1:0", "--kafka-listen", "127.0.0.1:0")
	for _, want := range []string{"standalone: --schemas schemas: no such folder in " + wd, "the default, as --schemas was not given", "default is ./schemas"} {
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("no --schemas: exit %d, stderr\n%s\nwant exit 1 and %q", code, stderr, want)
		}
	}
}

// syncBuffer is a bytes.Buffer for a command's stderr read while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startLineRE is standalone's start line, with the address it bound.
var startLineRE = regexp.MustCompile(`msg="standalone running" listen=(\S+)`)

// runStandaloneUntilStarted runs standalone as main does until its start
// line, and returns the address it says it bound; or, when it exits first,
// its stderr. It stops at the end of the test.
func runStandaloneUntilStarted(t *testing.T, args ...string) (listen, failed string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"standalone", "--data-dir", t.TempDir(), "--kafka-listen", "127.0.0.1:0"}, args...), nil, &bytes.Buffer{}, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := startLineRE.FindStringSubmatch(stderr.String()); m != nil {
			return m[1], ""
		}
		select {
		case code := <-done:
			done <- code
			return "", stderr.String()
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("standalone %q: no start line in 30s:\n%s", args, stderr.String())
	return "", ""
}

// TestStandaloneListenDefault: standalone listens on loopback unless
// --listen says otherwise. Port 8080 may be taken on this machine: then
// the error names the address it tried.
func TestStandaloneListenDefault(t *testing.T) {
	listen, failed := runStandaloneUntilStarted(t, "--schemas", emptySchemas(t))
	switch {
	case failed != "" && !strings.Contains(failed, "--listen 127.0.0.1:8080: address already in use"):
		t.Errorf("standalone without --listen failed, not on 127.0.0.1:8080 taken:\n%s", failed)
	case failed == "" && listen != "127.0.0.1:8080":
		t.Errorf("standalone without --listen bound %s, want 127.0.0.1:8080", listen)
	}
}

// TestStandaloneStartLine: the start line prints the address bound, with
// --listen 127.0.0.1:0 the port chosen, which answers.
func TestStandaloneStartLine(t *testing.T) {
	schemas := emptySchemas(t)
	listen, failed := runStandaloneUntilStarted(t, "--schemas", schemas, "--listen", "127.0.0.1:0")
	if failed != "" {
		t.Fatalf("standalone --listen 127.0.0.1:0:\n%s", failed)
	}
	if host, port, err := net.SplitHostPort(listen); err != nil || host != "127.0.0.1" || port == "0" {
		t.Fatalf("start line listen=%s, want 127.0.0.1 and the port bound", listen)
	}
	// It is the command's listener: it answers while the command runs.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+listen+"/healthz", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("start line listen=%s: %v", listen, err)
	}
	resp.Body.Close()
}

// TestStatusWithoutBroker: status without a broker, a configuration or a
// local standalone says what tail says, naming --kafka-brokers and
// --data-dir, instead of connection warnings to a default broker.
func TestStatusWithoutBroker(t *testing.T) {
	t.Setenv("EVENTLOGGING_KAFKA_BROKERS", "")
	if err := os.Unsetenv("EVENTLOGGING_KAFKA_BROKERS"); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(t.TempDir(), "data")
	code, tail := runCLI(t, "tail", "--data-dir", data, "some_topic")
	if code != 1 || strings.Count(tail, "\n") != 1 {
		t.Fatalf("tail without a broker: exit %d, stderr\n%s\nwant exit 1 and one line", code, tail)
	}
	for _, want := range []string{"--kafka-brokers", "--data-dir", filepath.Join(data, "broker.json")} {
		if !strings.Contains(tail, want) {
			t.Errorf("tail without a broker: %q lacks %q", tail, want)
		}
	}
	code, status := runCLI(t, "status", "--data-dir", data, "--interval", "10ms")
	if code != 1 || status != tail {
		t.Errorf("status without a broker: exit %d, stderr\n%s\nwant exit 1 and what tail says:\n%s", code, status, tail)
	}
}
