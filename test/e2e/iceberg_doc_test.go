package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// TestIcebergDocAsWritten walks through docs/iceberg.md as a reader would,
// in a folder holding the repository's examples: the standalone of "Try
// it" started by its command as written (the test's build is the
// ./eventlogging scripts/release.sh makes; a free port for 8080 and for
// the embedded broker), examples/events.sh three times, the log lines the
// doc quotes, query.py run by the tests' virtualenv and its output
// compared with the doc's (the datetime and the uuid of the row aside);
// the pinned reader versions; the YAML example through `eventlogging
// check-config`; every flag, environment variable and default of the
// settings table; the missing catalog folder's error; `eventlogging purge
// --policy FILE` on the same catalog; `go doc`; and PyIceberg through a
// REST catalog (the tests' REST catalog for catalog.example.org, a
// namespace of the test's own). The steps it cannot run here are listed
// with the reason; a step the doc gains fails the test until it is run or
// listed.
func TestIcebergDocAsWritten(t *testing.T) {
	py := testsupport.Python(t)
	rest := testsupport.IcebergREST(t)
	w := newDocWalk(t, "../../docs/iceberg.md", []string{
		"go doc ./internal/sink/icebergsink",
		"scripts/release.sh",
		"examples/events.sh http://127.0.0.1:8080",
		".venv/bin/python query.py",
		"from datetime import datetime",
		"[('eventlogging', 'NavigationTiming')",
		"sink:",
		"eventlogging check-config --config FILE",
		"from pyiceberg.catalog import load_catalog",
		"eventlogging purge --policy FILE",
	}, map[string]string{
		"python3 -m venv .venv":                 "installs from the Python package index, which this machine cannot reach; the tests' virtualenv (EVENTLOGGING_PYTHON) stands for .venv, its versions checked against the doc's pins",
		"INSTALL iceberg; LOAD iceberg;":        "DuckDB downloads its iceberg extension on first use, which this machine cannot (the doc says so)",
		"spark-sql":                             "Spark is not installed here, and --packages downloads the Iceberg runtime, which this machine cannot",
		`pip install "pyiceberg[sql-postgres]"`: "installs from the Python package index; the tests' virtualenv has the extra (scripts/python-requirements.txt)",
	})
	bin := binary(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}

	// "Try it": the first block builds ./eventlogging and starts the
	// standalone. The REST section's standalone is the same command on
	// the REST catalog, started alongside.
	start := shellCommands(w.step("scripts/release.sh").Text)
	if len(start) != 2 || !strings.HasPrefix(start[0], "scripts/release.sh") || !strings.Contains(start[1], "./eventlogging standalone") {
		t.Fatalf("the first block of \"Try it\" is %q, want scripts/release.sh then ./eventlogging standalone", start)
	}
	if st, err := os.Stat(filepath.Join(root, "scripts/release.sh")); err != nil || st.Mode()&0o111 == 0 {
		t.Fatalf("scripts/release.sh: %v (not executable?)", err)
	}
	work := docWorkDir(t, bin)
	addr := freeAddr(t)
	base := "http://" + addr
	saCmd := strings.ReplaceAll(start[1], "127.0.0.1:8080", addr)
	sa := startShell(t, "standalone", work, saCmd)

	restBlock := w.step("from pyiceberg.catalog import load_catalog").Text
	restURI := regexp.MustCompile(`uri="([^"]+)"`).FindStringSubmatch(restBlock)
	if restURI == nil {
		t.Fatalf("the REST block names no uri=…:\n%s", restBlock)
	}
	ns := rest.Namespace("walkthrough")
	restWork := docWorkDir(t, bin)
	restAddr := freeAddr(t)
	restCmd := regexp.MustCompile(`--iceberg-catalog \S+ --iceberg-warehouse \S+`).ReplaceAllString(
		strings.ReplaceAll(start[1], "127.0.0.1:8080", restAddr),
		"--iceberg-catalog "+rest.URL+" --iceberg-warehouse "+rest.Warehouse+" --iceberg-namespace "+ns)
	restSA := startShell(t, "standalone (REST catalog)", restWork, restCmd)
	waitServing(t, base, sa)
	waitServing(t, "http://"+restAddr, restSA)
	running := w.span("iceberg sink running")
	waitFor(t, 30*time.Second, "the log line `"+running+"`", func() bool { return logHas(sa.logs(), running) })

	// Rows this hour: the events and the query must fall in one hour.
	if left := time.Until(time.Now().Truncate(time.Hour).Add(time.Hour)); left < 90*time.Second {
		t.Logf("%v to the hour: waiting for the next one, so that query.py's hour holds every event", left.Round(time.Second))
		waitFor(t, 3*time.Minute, "the next hour", func() bool { return time.Until(time.Now().Truncate(time.Hour).Add(time.Hour)) > 90*time.Second })
	}
	events := w.step("examples/events.sh http://127.0.0.1:8080").Text
	sent := time.Now()
	for range 3 { // "after examples/events.sh ran three times"
		bash(t, work, nil, strings.ReplaceAll(events, "127.0.0.1:8080", addr))
	}
	bash(t, restWork, nil, strings.ReplaceAll(events, "127.0.0.1:8080", restAddr))
	created := w.span("created iceberg table")
	waitFor(t, 60*time.Second, "the log line `"+created+"`", func() bool { return logHas(sa.logs(), created) })
	tables := time.Since(sent)
	// 3 × (2 NavigationTiming, 1 SearchQuery, 1 analytics.edit_funnel).
	waitPublished(t, base, "iceberg", 12, 90*time.Second)
	t.Logf("tables created %.1fs after the first events, rows readable after %.1fs (the doc: about 10 s and by 20 s)", tables.Seconds(), time.Since(sent).Seconds())

	// query.py, run as the doc says, prints what the doc shows.
	if err := os.WriteFile(filepath.Join(work, "query.py"), []byte(w.step("from datetime import datetime").Text), 0o644); err != nil {
		t.Fatal(err)
	}
	pyLine := w.step(".venv/bin/python query.py").Text
	got := bash(t, work, nil, strings.Replace(pyLine, ".venv/bin/python", py, 1))
	want := w.step("[('eventlogging', 'NavigationTiming')").Text
	if pyReprNormalised(strings.TrimSpace(got)) != pyReprNormalised(want) {
		t.Errorf("%s printed\n%s\nthe doc shows (datetime and uuid aside)\n%s", pyLine, got, want)
	}
	checkReaderPins(t, py, w.peek("python3 -m venv .venv").Text, filepath.Join(root, "scripts/python-requirements.txt"))

	// The configuration example, through check-config.
	checkIcebergConfigExample(t, w, bin)
	checkIcebergSettings(t, w, bin)
	missing := w.span("icebergsink: open catalog:")
	out, err := exec.CommandContext(t.Context(), bin, "sink", "--iceberg-catalog", "sqlite:///"+filepath.Join(t.TempDir(), "no-such-dir", "iceberg.db"),
		"--iceberg-warehouse", t.TempDir(), "--kafka-brokers", "127.0.0.1:1", "--metrics-listen", "off").CombinedOutput()
	if err == nil || !strings.Contains(string(out), missing) {
		t.Errorf("a catalog in a missing folder: %v, printed\n%s\nwant %q", err, out, missing)
	}

	// Retention on the same catalog: no hour has ended an hour ago, so
	// the purge reports on the tables and keeps every row.
	purgeLine := w.step("eventlogging purge --policy FILE").Text
	ice := regexp.MustCompile(`--iceberg-catalog \S+ --iceberg-warehouse \S+`).FindString(saCmd)
	policy := filepath.Join(work, "policy.yaml")
	if err := os.WriteFile(policy, []byte("retention: 1h\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	purged := bash(t, work, nil, strings.NewReplacer("eventlogging ", bin+" ", "FILE", policy).Replace(purgeLine)+" "+ice)
	if !strings.HasPrefix(purged, "iceberg: 0 tables with old hours deleted, 0 sanitised") {
		t.Errorf("%s %s with a retention of 1h printed\n%s\nwant a report on the Iceberg tables, none changed", purgeLine, ice, purged)
	}
	if again := bash(t, work, nil, strings.Replace(pyLine, ".venv/bin/python", py, 1)); pyReprNormalised(strings.TrimSpace(again)) != pyReprNormalised(want) {
		t.Errorf("after the purge, query.py printed\n%s", again)
	}

	// The package documentation the doc points to.
	if doc := bash(t, root, nil, w.step("go doc ./internal/sink/icebergsink").Text); !strings.HasPrefix(doc, "package icebergsink") || !strings.Contains(doc, "Exactly once") {
		t.Errorf("go doc ./internal/sink/icebergsink printed no package documentation with \"Exactly once\":\n%.500s", doc)
	}

	// PyIceberg through the REST catalog, as the doc's block, on the
	// tests' catalog and the test's namespace, reads the rows of one
	// events.sh run.
	waitPublished(t, "http://"+restAddr, "iceberg", 4, 90*time.Second)
	script := strings.NewReplacer(restURI[1], rest.URL, `"eventlogging.NavigationTiming"`, strconv.Quote(ns+".NavigationTiming")).Replace(restBlock) +
		"\nprint(t.scan().to_arrow().num_rows)\n"
	if out := strings.TrimSpace(bash(t, restWork, nil, py+" -c "+shellQuote(script))); out != "2" {
		t.Errorf("PyIceberg through the REST catalog read %q rows of NavigationTiming, want 2", out)
	}
	sa.stop(t)
	restSA.stop(t)
}

// docWorkDir is a folder for a doc's commands: examples/ is the
// repository's, and ./eventlogging the test's build.
func docWorkDir(t *testing.T, bin string) string {
	t.Helper()
	work := t.TempDir()
	examples, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"examples": examples, "eventlogging": bin} {
		if err := os.Symlink(target, filepath.Join(work, link)); err != nil {
			t.Fatal(err)
		}
	}
	return work
}

// startShell starts the command line (a long-running process, with its
// environment assignments) in dir, on a free port for the standalone's
// embedded broker, and kills it when the test ends.
func startShell(t *testing.T, name, dir, line string) *service {
	t.Helper()
	sa := newService(t, "bash", name, []string{"EVENTLOGGING_STANDALONE_KAFKA_LISTEN=" + freeAddr(t)}, "-c", "exec env "+line)
	sa.cmd.Dir = dir
	if err := sa.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sa.killAtCleanup(t, 4000, func() bool { return true })
	return sa
}

// shellQuote quotes s for bash.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

var (
	reprDatetime = regexp.MustCompile(`datetime\.datetime\((\d+, )+`)
	reprUUID     = regexp.MustCompile(`'[0-9a-f]{32}'`)
)

// pyReprNormalised blanks what differs from run to run in Python's
// printout: a datetime's numbers and a uuid.
func pyReprNormalised(s string) string {
	return reprUUID.ReplaceAllString(reprDatetime.ReplaceAllString(s, "datetime.datetime(…, "), "'…'")
}

// checkReaderPins checks that the readers the doc installs are pinned as
// in scripts/python-requirements.txt, and that the tests' virtualenv,
// which stands for the doc's, has those versions.
func checkReaderPins(t *testing.T, py, venvBlock, requirements string) {
	t.Helper()
	req, err := os.ReadFile(requirements)
	if err != nil {
		t.Fatal(err)
	}
	pinned := map[string]string{}
	for l := range strings.Lines(string(req)) {
		if name, ver, ok := strings.Cut(strings.TrimSpace(l), "=="); ok && !strings.HasPrefix(name, "#") {
			pinned[regexp.MustCompile(`\[.*\]`).ReplaceAllString(name, "")] = ver
		}
	}
	pins := regexp.MustCompile(`"?([a-z-]+)(\[[^\]]*\])?==([0-9.]+)"?`).FindAllStringSubmatch(venvBlock, -1)
	if len(pins) == 0 {
		t.Fatalf("the doc's install line pins no version:\n%s", venvBlock)
	}
	for _, p := range pins {
		name, ver := p[1], p[3]
		if pinned[name] != ver {
			t.Errorf("the doc installs %s==%s, scripts/python-requirements.txt pins %q", name, ver, pinned[name])
		}
		out, err := exec.CommandContext(t.Context(), py, "-c", fmt.Sprintf("import importlib.metadata as m; print(m.version(%q))", name)).Output()
		if err != nil || strings.TrimSpace(string(out)) != ver {
			t.Errorf("the tests' virtualenv has %s %q (%v), the doc installs %s", name, strings.TrimSpace(string(out)), err, ver)
		}
	}
}

// checkConfig runs `eventlogging check-config --config path` with env and
// returns the effective configuration it prints.
func checkConfig(t *testing.T, bin, path string, env ...string) map[string]any {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, "check-config", "--config", path)
	cmd.Env = append(os.Environ(), env...)
	out := output(t, cmd, "eventlogging check-config --config "+path)
	var c map[string]any
	if err := yaml.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("check-config printed %q: %v", out, err)
	}
	return c
}

// configValue is the value of key (sink.iceberg_catalog) in c, as text.
func configValue(c map[string]any, key string) string {
	section, name, _ := strings.Cut(key, ".")
	m, _ := c[section].(map[string]any)
	if v, ok := m[name]; ok && v != nil {
		return fmt.Sprint(v)
	}
	return ""
}

// sameSetting reports whether two values of a setting are the same, a
// duration however written.
func sameSetting(a, b string) bool {
	if a == b {
		return true
	}
	da, errA := time.ParseDuration(a)
	db, errB := time.ParseDuration(b)
	return errA == nil && errB == nil && da == db
}

// checkIcebergConfigExample runs `eventlogging check-config --config FILE`
// on the doc's YAML example: it resolves to the file's values; with the
// catalog DSN in the environment, with a password, the environment wins
// and the password is hidden.
func checkIcebergConfigExample(t *testing.T, w *docWalk, bin string) {
	t.Helper()
	example := w.step("sink:").Text
	file := filepath.Join(t.TempDir(), "eventlogging.yaml")
	if err := os.WriteFile(file, []byte(example), 0o644); err != nil {
		t.Fatal(err)
	}
	line := w.step("eventlogging check-config --config FILE").Text
	if line != "eventlogging check-config --config FILE" {
		t.Fatalf("the doc's check-config is %q", line)
	}
	var want struct {
		Sink map[string]string `yaml:"sink"`
	}
	if err := yaml.Unmarshal([]byte(example), &want); err != nil || len(want.Sink) == 0 {
		t.Fatalf("the doc's YAML example: %v\n%s", err, example)
	}
	got := checkConfig(t, bin, file)
	for k, v := range want.Sink {
		if g := configValue(got, "sink."+k); !sameSetting(g, v) {
			t.Errorf("check-config --config FILE (the doc's example): sink.%s is %q, the file says %q", k, g, v)
		}
	}
	dsn := want.Sink["iceberg_catalog"]
	withPassword := strings.Replace(dsn, "@", ":not-printed@", 1)
	got = checkConfig(t, bin, file, "EVENTLOGGING_SINK_ICEBERG_CATALOG="+withPassword)
	if g := configValue(got, "sink.iceberg_catalog"); g != strings.Replace(dsn, "@", ":***@", 1) {
		t.Errorf("check-config with EVENTLOGGING_SINK_ICEBERG_CATALOG=%s prints sink.iceberg_catalog %q, want it with the password hidden", withPassword, g)
	}
}

// markdownTable returns the cells of the first table after heading.
func markdownTable(t *testing.T, text, heading string) [][]string {
	t.Helper()
	i := strings.Index(text, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("no section %q", heading)
	}
	var rows [][]string
	for l := range strings.Lines(text[i+len(heading)+2:]) {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "|") {
			if len(rows) > 0 {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		if !strings.HasPrefix(cells[0], "---") {
			rows = append(rows, cells)
		}
	}
	if len(rows) < 2 {
		t.Fatalf("section %q has no table", heading)
	}
	return rows[1:] // without the header
}

func spansOf(cell string) []string {
	var out []string
	for _, m := range codeSpan.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

var configKey = regexp.MustCompile(`^[a-z]+\.[a-z_]+$`)

// checkIcebergSettings checks the settings table: each flag is one of each
// command it lists; each key's default is check-config's on an empty
// file; each environment variable sets its key.
func checkIcebergSettings(t *testing.T, w *docWalk, bin string) {
	t.Helper()
	help := map[string]string{}
	helpOf := func(cmd string) string {
		if h, ok := help[cmd]; ok {
			return h
		}
		out, _ := exec.CommandContext(t.Context(), bin, cmd, "-h").CombinedOutput() // -h exits 2
		if !strings.Contains(string(out), "Usage: eventlogging "+cmd) {
			t.Fatalf("eventlogging %s -h printed no usage:\n%s", cmd, out)
		}
		help[cmd] = string(out)
		return help[cmd]
	}
	empty := filepath.Join(t.TempDir(), "empty.yaml")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	defaults := checkConfig(t, bin, empty)
	envs, set := []string{}, map[string]string{} // key → value set through its variable
	var cmds []string
	prevEnv := ""
	for _, r := range markdownTable(t, w.text, "## Settings") {
		if len(r) != 5 {
			t.Fatalf("settings row %q: want 5 cells", r)
		}
		var keys, flags, envNames []string
		for _, s := range spansOf(r[1]) {
			if configKey.MatchString(s) {
				keys = append(keys, s)
			}
		}
		if strings.Contains(r[2], "(same commands)") {
			flags = spansOf(r[2])
		} else if sp := spansOf(r[2]); len(sp) > 0 {
			flags, cmds = sp[:1], sp[1:]
		}
		for _, f := range flags {
			for _, c := range cmds {
				if !regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(f) + `\s`).MatchString(helpOf(c)) {
					t.Errorf("settings table: eventlogging %s has no %s", c, f)
				}
			}
		}
		for _, e := range spansOf(r[3]) {
			if rest, ok := strings.CutPrefix(e, "…"); ok { // …_BATCH_TIME after EVENTLOGGING_SINK_BATCH_SIZE
				parts := strings.Split(prevEnv, "_")
				e = strings.Join(parts[:len(parts)-strings.Count(rest, "_")], "_") + rest
			}
			envNames, prevEnv = append(envNames, e), e
		}
		if len(keys) == 0 {
			continue // the REST catalog's credentials: environment only, never printed
		}
		defs := spansOf(r[4])
		if len(defs) == 0 && strings.HasPrefix(r[4], "none") {
			defs = []string{""}
		}
		if len(envNames) != len(keys) || len(defs) < len(keys) {
			t.Errorf("settings row %q: %d keys, %d variables, %d defaults", r[0], len(keys), len(envNames), len(defs))
			continue
		}
		for i, k := range keys {
			def := configValue(defaults, k)
			if !sameSetting(def, defs[i]) {
				t.Errorf("settings table: %s defaults to %q, check-config on an empty file says %q", k, defs[i], def)
			}
			v := "walk_" + k[strings.Index(k, ".")+1:]
			switch {
			case k == "sink.iceberg_catalog":
				v = "sqlite:///walk.db"
			case isDuration(def):
				v = "7m0s"
			case isInteger(def):
				v = "7"
			}
			envs, set[k] = append(envs, envNames[i]+"="+v), v
		}
	}
	got := checkConfig(t, bin, empty, envs...)
	for k, v := range set {
		if g := configValue(got, k); g != v {
			t.Errorf("settings table: with %v, check-config says %s is %q, want %q", envs, k, g, v)
		}
	}
}

// isDuration reports whether s is a duration with its unit, as
// check-config prints one.
func isDuration(s string) bool {
	_, err := time.ParseDuration(s)
	return err == nil && strings.ContainsAny(s, "hms")
}

func isInteger(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}
