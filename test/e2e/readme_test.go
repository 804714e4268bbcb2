package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// readmeSection returns the shell blocks (```sh … ```) of the README's
// section titled heading, each as its lines.
func readmeSection(t *testing.T, heading string) [][]string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "\n## "+heading)
	if i < 0 {
		t.Fatalf("README has no section %q", heading)
	}
	text = text[i+1:]
	if j := strings.Index(text[3:], "\n## "); j >= 0 {
		text = text[:j+3]
	}
	var blocks [][]string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(text, -1) {
		blocks = append(blocks, strings.Split(strings.TrimSpace(m[1]), "\n"))
	}
	return blocks
}

// TestReadmeQuickstartAsWritten runs the README's Quickstart exactly as its
// blocks say, in a folder holding the repository's examples: the commands
// as written (`go run ./cmd/eventlogging` is the built binary), the
// standalone on its default address and data folder, events.sh's output
// compared with the lines the README shows, then the dashboard link the
// README gives. A step the README changes is run as changed.
func TestReadmeQuickstartAsWritten(t *testing.T) {
	blocks := readmeSection(t, "Quickstart (two minutes)")
	if len(blocks) < 3 {
		t.Fatalf("the Quickstart has %d shell blocks, want 3 (start, send, tail)", len(blocks))
	}
	work := t.TempDir()
	examples, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(examples, filepath.Join(work, "examples")); err != nil {
		t.Fatal(err)
	}
	bin := binary(t)
	command := func(line string) []string {
		line = strings.Replace(line, "go run ./cmd/eventlogging", bin, 1)
		return strings.Fields(line)
	}
	// Block 1: the standalone, as written (127.0.0.1:8080, ./data).
	start := command(blocks[0][0])
	sa := newService(t, start[0], "standalone", nil, start[1:]...)
	sa.cmd.Dir = work
	if err := sa.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sa.killAtCleanup(t, 4000, func() bool { return true })
	const base = "http://localhost:8080"
	deadline := time.Now().Add(60 * time.Second)
	for !isReady(t.Context(), base) {
		if time.Now().After(deadline) || sa.cmd.ProcessState != nil {
			t.Fatalf("the Quickstart's standalone is not ready at %s (is the port taken?)\n%s", base, tail(sa.logs(), 2000))
		}
		time.Sleep(100 * time.Millisecond) // polling readiness
	}
	// Block 2: events.sh; its output as the README shows it (the "# "
	// lines, "…" standing for what the README leaves out).
	run := func(line string) string {
		t.Helper()
		args := command(line)
		cmd := exec.CommandContext(t.Context(), args[0], args[1:]...)
		cmd.Dir = work
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		return string(out)
	}
	out := run(blocks[1][0])
	for _, l := range blocks[1][1:] {
		want := strings.TrimSpace(strings.TrimPrefix(l, "#"))
		for part := range strings.SplitSeq(want, "…") {
			if p := strings.Trim(part, ",]} "); p != "" && !strings.Contains(out, p) {
				t.Errorf("examples/events.sh printed no %q (README: %q):\n%s", p, l, out)
			}
		}
	}
	// Block 3: each tail prints an event.
	for _, l := range blocks[2] {
		if strings.HasPrefix(l, "#") || strings.TrimSpace(l) == "" {
			continue
		}
		if out := run(l); !strings.Contains(out, `"uuid"`) {
			t.Errorf("%s printed no event:\n%s", l, out)
		}
	}
	// The dashboard and registry addresses the README gives answer.
	for _, u := range []string{base + "/dashboard/", base + "/registry/subjects", base + "/metrics"} {
		if code, _, err := get(t.Context(), u); err != nil || code != 200 {
			t.Errorf("GET %s: %d %v", u, code, err)
		}
	}
	sa.stop(t)
}
