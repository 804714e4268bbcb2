package purge

import (
	"maps"
	"strings"
	"testing"

	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// `PurgeFiles` on a real S3 store and a real HDFS, with the allow-list:
// the files read back from the store are exactly those a purge of the same
// tree on local disk leaves (old partitions without a rule deleted, old
// ones with a rule rewritten with only the allowed fields, hashed ones
// hashed, recent ones and the sink's state untouched), and a second run
// changes nothing.
func TestPurgeRealStores(t *testing.T) {
	check := func(t *testing.T, target string) {
		local := t.TempDir()
		purgeTree(t, local)
		testsupport.UploadTree(t, local, target)
		if _, err := PurgeFiles(t.Context(), local, testPolicy(t)); err != nil {
			t.Fatal(err)
		}
		rep, err := PurgeFiles(t.Context(), target, testPolicy(t))
		if err != nil {
			t.Fatal(err)
		}
		if rep.Partitions != 2 || rep.PartitionsDeleted != 1 || rep.PartitionsSanitised != 1 {
			t.Errorf("report %+v, want 2 old partitions: 1 deleted, 1 sanitised", rep)
		}
		want, got := treeSnapshot(t, local), treeSnapshot(t, testsupport.DownloadTree(t, target))
		if !maps.Equal(got, want) {
			t.Fatalf("store after purge differs from the local purge:\n got %v\nwant %v", keys(got), keys(want))
		}
		sanitised := 0
		for name := range got {
			if strings.HasSuffix(name, ".sanitised.jsonl.gz") {
				sanitised++
			}
		}
		if sanitised != 2 {
			t.Errorf("%d sanitised files in the store, want 2: %v", sanitised, keys(got))
		}
		if _, err := PurgeFiles(t.Context(), target, testPolicy(t)); err != nil {
			t.Fatal(err)
		}
		if again := treeSnapshot(t, testsupport.DownloadTree(t, target)); !maps.Equal(again, got) {
			t.Errorf("a second purge changed the store")
		}
	}
	t.Run("s3", func(t *testing.T) {
		target, _ := testsupport.S3(t).Target(t, "events")
		check(t, target)
	})
	t.Run("hdfs", func(t *testing.T) {
		srv := testsupport.HDFS(t)
		check(t, "hdfs://"+srv.NameNode+srv.Dir(t)+"?user="+testsupport.HDFSUser)
	})
}
