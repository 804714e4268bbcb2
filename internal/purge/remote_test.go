package purge

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventlogging/eventlogging/internal/objstore"
)

// purgeTree writes old and recent partitions of JSON lines (with and
// without an allow-listed schema) and a manifest, under root, and returns
// the hour directories it wrote: old Edit, recent Edit, old Click.
func purgeTree(t *testing.T, root string) (editOld, editRecent, clickOld string) {
	t.Helper()
	oldEdit := makeCapsules(t, "Edit", true, 1, 2, 3)
	recentEdit := makeCapsules(t, "Edit", false, 5, 6)
	oldClick := makeCapsules(t, "Click", true, 101, 102)
	editOld = capsuleHour(t, root, "eventlogging_Edit", oldEdit[0])
	editRecent = capsuleHour(t, root, "eventlogging_Edit", recentEdit[0])
	clickOld = capsuleHour(t, root, "eventlogging_Click", oldClick[0])
	writeJSONL(t, filepath.Join(editOld, "part-0-0-1.jsonl.gz"), oldEdit[:2])
	writeJSONL(t, filepath.Join(editOld, "part-1-0-0.jsonl.gz"), oldEdit[2:])
	writeJSONL(t, filepath.Join(editRecent, "part-0-5-6.jsonl.gz"), recentEdit)
	writeJSONL(t, filepath.Join(clickOld, "part-0-0-1.jsonl.gz"), oldClick)
	for _, d := range []string{editOld, editRecent, clickOld} {
		writeFile(t, filepath.Join(d, "_SUCCESS"), "")
	}
	writeFile(t, filepath.Join(root, "_filesink", "manifests", "eventlogging_Edit", "0.json"), "{}")
	return editOld, editRecent, clickOld
}

// On a distributed store (objstore.Dir: the same calls as S3 and HDFS),
// a purge leaves exactly the files a local purge of the same tree leaves,
// a dry run changes nothing, and a second run changes nothing either.
func TestPurgeStoreMatchesLocal(t *testing.T) {
	local, remote := t.TempDir(), t.TempDir()
	purgeTree(t, local)
	if err := os.CopyFS(remote, os.DirFS(local)); err != nil {
		t.Fatal(err)
	}
	store, err := objstore.NewDir(remote)
	if err != nil {
		t.Fatal(err)
	}
	run := func(dry bool) Report {
		t.Helper()
		p := testPolicy(t)
		p.DryRun = dry
		pp, err := p.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		var rep Report
		fp := &filePurge{p: &pp, rep: &rep, cutoff: pp.cutoff(), log: pp.Logger}
		if err := purgeStore(t.Context(), store, fp); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	before := treeSnapshot(t, remote)
	rep := run(true)
	if rep.Partitions != 2 || rep.PartitionsDeleted != 1 || rep.PartitionsSanitised != 1 || len(rep.Actions) != 2 {
		t.Errorf("dry run report %+v, want 2 partitions: 1 deleted, 1 sanitised", rep)
	}
	for _, a := range rep.Actions {
		if !strings.Contains(a, store.String()) {
			t.Errorf("dry-run action does not name the store: %s", a)
		}
	}
	if got := treeSnapshot(t, remote); !maps.Equal(got, before) {
		t.Fatalf("dry run changed the store:\n got %v\nwant %v", got, before)
	}

	if _, err := PurgeFiles(t.Context(), local, testPolicy(t)); err != nil {
		t.Fatal(err)
	}
	rep = run(false)
	if rep.PartitionsDeleted != 1 || rep.PartitionsSanitised != 1 {
		t.Errorf("report %+v, want 1 deleted and 1 sanitised", rep)
	}
	want, got := treeSnapshot(t, local), treeSnapshot(t, remote)
	if !maps.Equal(got, want) {
		t.Errorf("store after purge differs from the local purge:\n got %v\nwant %v", keys(got), keys(want))
	}
	rep = run(false)
	if again := treeSnapshot(t, remote); !maps.Equal(again, got) || rep.PartitionsDeleted+rep.PartitionsSanitised != 0 {
		t.Errorf("a second purge changed the store (report %+v)", rep)
	}
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
