package e2e

// Walking through a doc as written: its steps (fenced blocks, the lines of
// its indented blocks, the commands of its inline code) are each either run
// by the doc's test or listed by it as not runnable here, with the reason.
// A step the doc gains that the test neither runs nor lists fails the test,
// and so does a listed step the doc no longer has.

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// docStep is one step of a doc.
type docStep struct {
	// Lang is the fenced block's language ("sh", "python", … or "" for a
	// block of output), "indented" for a line of an indented block, or
	// "inline" for a command in inline code.
	Lang string
	Text string // the block's text, the line, or the code (spaces collapsed)
	Line int    // where it starts in the doc
}

// kind says what the step is, for messages.
func (s docStep) kind() string {
	switch s.Lang {
	case "inline", "indented":
		return s.Lang
	case "":
		return "a fenced block"
	}
	return "a fenced " + s.Lang + " block"
}

// key names the step in a test: its first line, spaces collapsed.
func (s docStep) key() string {
	first, _, _ := strings.Cut(s.Text, "\n")
	return collapseSpaces(first)
}

func collapseSpaces(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// inlineCommand matches inline code that is a command to run (with at
// least an argument), not the mere name of one: `eventlogging purge
// --policy FILE` is a step, `eventlogging sink` is not.
var inlineCommand = regexp.MustCompile(`^(eventlogging [a-z-]+ \S|(go|hdfs|pip|spark-sql) \S|\S*python3? \S|(scripts|examples)/\S+ \S|spark\.|(SELECT|CREATE|CALL|INSTALL|MSCK) )`)

var (
	codeSpan    = regexp.MustCompile("`([^`]+)`")
	fencedBlock = regexp.MustCompile("(?ms)^```.*?^```")
)

// parseDocSteps returns the steps of the markdown text, in order.
func parseDocSteps(text string) []docStep {
	lines := strings.Split(text, "\n")
	var steps []docStep
	var para []string
	paraLine := 0
	endPara := func() {
		for _, m := range codeSpan.FindAllStringSubmatch(strings.Join(para, " "), -1) {
			if code := collapseSpaces(m[1]); inlineCommand.MatchString(code) {
				steps = append(steps, docStep{Lang: "inline", Text: code, Line: paraLine})
			}
		}
		para = nil
	}
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "```"):
			endPara()
			start, body := i+1, []string{}
			for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
				body = append(body, lines[i])
			}
			steps = append(steps, docStep{Lang: strings.TrimSpace(l[3:]), Text: strings.Join(body, "\n"), Line: start})
		case strings.HasPrefix(l, "    ") && (i == 0 || strings.TrimSpace(lines[i-1]) == "" || strings.HasPrefix(lines[i-1], "    ")) && len(para) == 0:
			steps = append(steps, docStep{Lang: "indented", Text: strings.TrimSpace(l), Line: i + 1})
		case strings.TrimSpace(l) == "":
			endPara()
		default:
			if len(para) == 0 {
				paraLine = i + 1
			}
			para = append(para, l)
		}
	}
	endPara()
	return steps
}

// docWalk is a test's walk through the steps of one doc.
type docWalk struct {
	t     *testing.T
	doc   string // its path, for messages
	text  string
	steps []docStep

	mu    sync.Mutex
	taken map[string]bool // prefixes of the steps the test ran
}

// newDocWalk reads the doc at path and checks that each of its steps is
// one the test runs (a key prefix in run) or one it cannot run here (a key
// prefix in unrunnable, with the reason); a step that is neither, or a
// prefix that names no step or several, fails the test, which goes on to
// run the others. When the test ends, each prefix of run must have been
// taken (step) by the test.
func newDocWalk(t *testing.T, path string, run []string, unrunnable map[string]string) *docWalk {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	w := &docWalk{t: t, doc: path, text: string(b), steps: parseDocSteps(string(b)), taken: map[string]bool{}}
	known := map[string]int{} // how many steps each prefix names
	for _, s := range w.steps {
		var names []string
		for _, p := range run {
			if strings.HasPrefix(s.key(), p) {
				names = append(names, p)
			}
		}
		for p := range unrunnable {
			if strings.HasPrefix(s.key(), p) {
				names = append(names, p)
			}
		}
		switch len(names) {
		case 0:
			t.Errorf("%s:%d: a step (%s) this test neither runs nor lists as not runnable here (with the reason): %q", path, s.Line, s.kind(), s.key())
		case 1:
			known[names[0]]++
		default:
			t.Errorf("%s:%d: step %q is named by several prefixes %q", path, s.Line, s.key(), names)
		}
	}
	for _, p := range run {
		if known[p] != 1 {
			t.Errorf("%s: %d steps start with %q, want 1 (the test runs it: did the doc change?)", path, known[p], p)
		}
	}
	for p, why := range unrunnable {
		if known[p] != 1 {
			t.Errorf("%s: %d steps start with %q, want 1 (listed as not runnable: %s)", path, known[p], p, why)
		}
		t.Logf("%s: not run here: %q: %s", path, p, why)
	}
	t.Cleanup(func() {
		if t.Failed() {
			return // a step failed or the walk stopped early: that is the news
		}
		for _, p := range run {
			if !w.taken[p] {
				t.Errorf("%s: the test says it runs %q but never took it", path, p)
			}
		}
	})
	return w
}

// step returns the step whose key starts with prefix, one of the test's
// run list, and counts it as run: the caller runs it.
func (w *docWalk) step(prefix string) docStep {
	w.t.Helper()
	w.mu.Lock()
	w.taken[prefix] = true
	w.mu.Unlock()
	return w.peek(prefix)
}

// peek returns the step whose key starts with prefix without counting it
// as run.
func (w *docWalk) peek(prefix string) docStep {
	w.t.Helper()
	i := slices.IndexFunc(w.steps, func(s docStep) bool { return strings.HasPrefix(s.key(), prefix) })
	if i < 0 {
		w.t.Fatalf("%s has no step starting with %q", w.doc, prefix)
	}
	return w.steps[i]
}

// span returns the doc's inline code starting with prefix (spaces
// collapsed): output or a name the doc quotes in its prose.
func (w *docWalk) span(prefix string) string {
	w.t.Helper()
	prose := fencedBlock.ReplaceAllString(w.text, "")
	for _, m := range codeSpan.FindAllStringSubmatch(prose, -1) {
		if code := collapseSpaces(m[1]); strings.HasPrefix(code, prefix) {
			return code
		}
	}
	w.t.Fatalf("%s quotes no `%s…`", w.doc, prefix)
	return ""
}

// shellCommands returns the commands of a sh block: comments dropped,
// continued lines joined.
func shellCommands(block string) []string {
	var cmds []string
	var cur strings.Builder
	for l := range strings.SplitSeq(block, "\n") {
		if i := strings.Index(l, " #"); i >= 0 && !strings.ContainsAny(l[:i], `'"`) {
			l = l[:i]
		}
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "#") {
			l = ""
		}
		if rest, ok := strings.CutSuffix(l, `\`); ok {
			cur.WriteString(rest)
			continue
		}
		cur.WriteString(l)
		if c := collapseSpaces(cur.String()); c != "" {
			cmds = append(cmds, c)
		}
		cur.Reset()
	}
	return cmds
}

// bash runs the command line in dir with env over the test's environment
// and returns its standard output; it fails the test when the command
// fails, with what it printed.
func bash(t *testing.T, dir string, env []string, line string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "bash", "-c", line)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s%s", line, err, out, stderr.String())
	}
	return string(out)
}

// logHas reports whether a line of logs says what the doc quotes of it, a
// message then key=value attributes (`iceberg sink running
// warehouse=data/iceberg commit_interval=10s`).
func logHas(logs, quoted string) bool {
	var msg, attrs []string
	for f := range strings.FieldsSeq(quoted) {
		if strings.Contains(f, "=") {
			attrs = append(attrs, f)
		} else if len(attrs) == 0 {
			msg = append(msg, f)
		}
	}
	for l := range strings.Lines(logs) {
		if !strings.Contains(l, `msg="`+strings.Join(msg, " ")+`"`) {
			continue
		}
		if fields := strings.Fields(l); !slices.ContainsFunc(attrs, func(a string) bool { return !slices.Contains(fields, a) }) {
			return true
		}
	}
	return false
}

// waitServing waits until base/readyz answers 200, failing the test at
// once, with the log, when s exits first (a command the doc got wrong).
func waitServing(t *testing.T, base string, s *service) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !isReady(t.Context(), base) {
		if exited(s.cmd.Process.Pid) {
			t.Fatalf("%s exited before it served %s:\n%s", s.name, base, tail(s.logs(), 2000))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/readyz never answered 200", base)
		}
		time.Sleep(100 * time.Millisecond) // polling interval
	}
}

// exited reports whether the child process pid has exited (a zombie until
// it is waited for); false where /proc does not say.
func exited(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state …: the state follows the last ')'.
	_, rest, ok := strings.Cut(string(b[strings.LastIndexByte(string(b), ')')+1:]), " ")
	return ok && strings.HasPrefix(rest, "Z")
}
