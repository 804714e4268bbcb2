package purge

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/capsule"

	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// hourDir is the filesink partition of topic holding instant at.
func hourDir(root, topic string, at time.Time) string {
	at = at.UTC()
	return filepath.Join(root, topic, at.Format("year=2006"), at.Format("month=01"), at.Format("day=02"), at.Format("hour=15"))
}

// writeJSONL writes records as a gzip JSON-lines file, as filesink does.
func writeJSONL(t *testing.T, path string, recs []map[string]any) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	for _, r := range recs {
		if _, err := zw.Write(append(capsule.AppendValue(nil, r), '\n')); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readJSONLFile returns the lines of a gzip JSON-lines file.
func readJSONLFile(t *testing.T, path string) []string {
	t.Helper()
	return strings.Split(strings.TrimSuffix(testsupport.Gunzip(t, path), "\n"), "\n")
}

// treeSnapshot maps every file under root to its content.
func treeSnapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		out[strings.TrimPrefix(path, root)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sanitisedEdit is what an old Edit capsule must become.
func sanitisedEdit(c map[string]any) string {
	ev := c["event"].(map[string]any)
	want := map[string]any{
		"uuid": c["uuid"], "dt": c["dt"], "timestamp": c["timestamp"],
		"schema": c["schema"], "revision": c["revision"], "wiki": c["wiki"],
		"clientIp": wantHash(c["clientIp"].(string)),
		"event": map[string]any{
			"action": ev["action"],
			"token":  wantHash(ev["token"].(string)),
		},
	}
	return string(capsule.AppendValue(nil, want))
}

// capsuleHour is the partition of capsule c under topic.
func capsuleHour(t *testing.T, root, topic string, c map[string]any) string {
	t.Helper()
	at, err := time.Parse(time.RFC3339, c["dt"].(string))
	if err != nil {
		t.Fatal(err)
	}
	return hourDir(root, topic, at)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestPurgeFiles(t *testing.T) {
	root := t.TempDir()
	ctx := t.Context()
	// Every capsule below falls in hour 11 of its day: purgeTree's old and
	// recent Edit and old Click hours, and a recent Click hour, an old hour
	// of the mixed topic and an unreadable Parquet file in the old Click hour.
	editOld, _, clickOld := purgeTree(t, root)
	oldEdit := makeCapsules(t, "Edit", true, 1, 2, 3) // as purgeTree wrote them
	recentClick := makeCapsules(t, "Click", false, 103)
	oldMixed := append(makeCapsules(t, "Edit", true, 4), makeCapsules(t, "Click", true, 104)...)
	clickRecent := capsuleHour(t, root, "eventlogging_Click", recentClick[0])
	mixedOld := capsuleHour(t, root, "eventlogging-valid-mixed", oldMixed[0])
	writeFile(t, filepath.Join(clickOld, "part-0-0-1.Click_1.parquet"), "PAR1 not read PAR1")
	writeJSONL(t, filepath.Join(clickRecent, "part-0-2-2.jsonl.gz"), recentClick)
	writeJSONL(t, filepath.Join(mixedOld, "part-0-0-1.jsonl.gz"), oldMixed)
	for _, d := range []string{clickRecent, mixedOld} {
		writeFile(t, filepath.Join(d, "_SUCCESS"), "")
	}
	before := treeSnapshot(t, root)

	p := testPolicy(t)
	p.DryRun = true
	rep, err := PurgeFiles(ctx, root, p)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Partitions != 3 || rep.PartitionsDeleted != 1 || rep.PartitionsSanitised != 2 || len(rep.Actions) != 3 {
		t.Errorf("dry run report %+v, want 3 partitions: 1 deleted, 2 sanitised, 3 actions", rep)
	}
	for _, a := range rep.Actions {
		t.Logf("dry run: %s", a)
	}
	if got := treeSnapshot(t, root); !maps.Equal(got, before) {
		t.Errorf("dry run changed files:\n got %v\nwant %v", got, before)
	}

	p.DryRun = false
	rep, err = PurgeFiles(ctx, root, p)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Partitions != 3 || rep.PartitionsDeleted != 1 || rep.PartitionsSanitised != 2 || len(rep.Actions) != 0 {
		t.Errorf("purge report %+v, want 3 partitions: 1 deleted, 2 sanitised", rep)
	}
	after := treeSnapshot(t, root)
	// Old Click: gone, with its now empty day and month directories (the
	// year holds the recent hour).
	if _, err := os.Stat(filepath.Dir(filepath.Dir(clickOld))); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("old Click partition's month directory still there: %v", err)
	}
	// Recent partitions and the sink's state: untouched.
	for path, content := range before {
		full := filepath.Join(root, path)
		if strings.HasPrefix(full, editOld) || strings.HasPrefix(full, clickOld) || strings.HasPrefix(full, mixedOld) {
			continue
		}
		if after[path] != content {
			t.Errorf("%s changed", path)
		}
	}
	// Old Edit: rewritten, originals gone, _SUCCESS kept, marker written.
	wantFiles := func(dir string, names ...string) {
		t.Helper()
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range entries {
			got = append(got, e.Name())
		}
		if strings.Join(got, " ") != strings.Join(names, " ") {
			t.Errorf("%s holds %v, want %v", dir, got, names)
		}
	}
	wantFiles(editOld, "_SANITISED", "_SUCCESS", "part-0-0-1.sanitised.jsonl.gz", "part-1-0-0.sanitised.jsonl.gz")
	wantLines := func(path string, caps ...map[string]any) {
		t.Helper()
		got := readJSONLFile(t, path)
		var want []string
		for _, c := range caps {
			want = append(want, sanitisedEdit(c))
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s:\n got %s\nwant %s", path, got, want)
		}
	}
	wantLines(filepath.Join(editOld, "part-0-0-1.sanitised.jsonl.gz"), oldEdit[:2]...)
	wantLines(filepath.Join(editOld, "part-1-0-0.sanitised.jsonl.gz"), oldEdit[2])
	// Old mixed: the Edit record sanitised, the Click record dropped.
	wantFiles(mixedOld, "_SANITISED", "_SUCCESS", "part-0-0-1.sanitised.jsonl.gz")
	wantLines(filepath.Join(mixedOld, "part-0-0-1.sanitised.jsonl.gz"), oldMixed[0])

	// Idempotent: nothing more to do, nothing changes.
	for _, dry := range []bool{true, false} {
		p.DryRun = dry
		rep, err = PurgeFiles(ctx, root, p)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Partitions != 2 || rep.PartitionsDeleted != 0 || rep.PartitionsSanitised != 0 || len(rep.Actions) != 0 {
			t.Errorf("second run (dry run %v): %+v, want 2 partitions, nothing done", dry, rep)
		}
		if got := treeSnapshot(t, root); !maps.Equal(got, after) {
			t.Errorf("second run (dry run %v) changed files", dry)
		}
	}
}

// TestPurgeFilesResume runs the purge over a partition left by a run
// killed between renaming a rewritten file and removing its original,
// and over an interrupted delete.
func TestPurgeFilesResume(t *testing.T) {
	root := t.TempDir()
	c := makeCapsule(t, testEvent{"Edit", 1, true})
	dir := capsuleHour(t, root, "eventlogging_Edit", c)
	writeJSONL(t, filepath.Join(dir, "part-0-0-0.jsonl.gz"), []map[string]any{c})
	// The rewrite already done: must not be hashed again.
	done := map[string]any{}
	if err := jsonUnmarshal(sanitisedEdit(c), &done); err != nil {
		t.Fatal(err)
	}
	writeJSONL(t, filepath.Join(dir, "part-0-0-0.sanitised.jsonl.gz"), []map[string]any{done})
	writeFile(t, filepath.Join(dir, ".part-0-1-1.purge.tmp"), "half written")
	hidden := filepath.Join(filepath.Dir(dir), ".hour=10.purge-deleting") // as filesink.RemoveHour names it
	writeFile(t, filepath.Join(hidden, "part-0-0-0.jsonl.gz"), "x")

	rep, err := PurgeFiles(t.Context(), root, testPolicy(t))
	if err != nil {
		t.Fatal(err)
	}
	if rep.PartitionsSanitised != 1 {
		t.Errorf("report %+v, want 1 partition sanitised", rep)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); got != "_SANITISED part-0-0-0.sanitised.jsonl.gz" {
		t.Errorf("partition holds %s", got)
	}
	if got := readJSONLFile(t, filepath.Join(dir, "part-0-0-0.sanitised.jsonl.gz")); len(got) != 1 || got[0] != sanitisedEdit(c) {
		t.Errorf("rewritten file changed: %s", got)
	}
	if _, err := os.Stat(hidden); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("interrupted delete not finished: %v", err)
	}
}

func jsonUnmarshal(s string, v *map[string]any) error {
	d, err := capsule.Decode([]byte(s))
	if err != nil {
		return err
	}
	*v = d.(map[string]any)
	return nil
}
