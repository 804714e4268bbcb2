package e2e

import (
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// warehouseEvents is how many events TestWarehouse sends to each store.
const warehouseEvents = 100_000

// TestWarehouse runs standalone with its file sink on the real S3 store and
// on the real HDFS (sink.files an s3:// or hdfs:// URL, as a user sets it),
// sends 100,000 events with `eventlogging bench` (POST batches of 100), and
// reads the Parquet files back with pyarrow — through its S3FileSystem, and
// for HDFS after Hadoop's own shell (`hdfs dfs -get`) copied them out:
// every uuid exactly once, the rows per hour partition adding up, and the
// sink's state hidden from readers.
func TestWarehouse(t *testing.T) {
	if raceEnabled {
		t.Skip("100,000 events through a race-built standalone: scripts/test.sh runs it in its pass without -race")
	}
	t.Run("s3", func(t *testing.T) {
		srv, bucket, target := userS3Target(t)
		warehouseRun(t, target, func() testsupport.ParquetRead {
			return testsupport.PyarrowS3(t, srv, bucket, "events")
		})
	})
	t.Run("hdfs", func(t *testing.T) {
		srv := testsupport.HDFS(t)
		dir := srv.Dir(t)
		target := "hdfs://" + srv.NameNode + dir + "?user=" + testsupport.HDFSUser
		warehouseRun(t, target, func() testsupport.ParquetRead {
			listing := srv.DFS(t, "-ls", "-R", dir)
			if !strings.Contains(listing, "/year=") || !strings.Contains(listing, ".parquet") {
				t.Fatalf("hdfs dfs -ls -R %s shows no Parquet in hour partitions:\n%.3000s", dir, listing)
			}
			local := filepath.Join(t.TempDir(), "copy")
			srv.DFS(t, "-get", dir, local)
			return testsupport.PyarrowLocal(t, local)
		})
	})
}

// userS3Target makes a bucket on the tests' S3 store, sets the AWS
// credential variables as a user would (the sinks inherit them) and
// returns the s3:// target of its events/ prefix, as a user writes it.
func userS3Target(t *testing.T) (srv testsupport.S3Server, bucket, target string) {
	t.Helper()
	srv = testsupport.S3(t)
	bucket = srv.Bucket(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	target = "s3://" + bucket + "/events?" + url.Values{"endpoint": {srv.Endpoint}, "region": {srv.Region}, "use_path_style": {"true"}}.Encode()
	return srv, bucket, target
}

func warehouseRun(t *testing.T, target string, read func() testsupport.ParquetRead) {
	dataDir := filepath.Join(t.TempDir(), "data")
	env := append(os.Environ(),
		"EVENTLOGGING_SINK_FILES="+target,
		"EVENTLOGGING_SINK_FILES_STAGING="+filepath.Join(t.TempDir(), "staging"),
		"EVENTLOGGING_SINK_FILE_MAX_AGE=5s")
	_, base := startStandalone(t, env, dataDir, "--schemas", "../../examples/schemas")
	rep := benchStandalone(t, base, dataDir, warehouseEvents, 8, "5m")
	if rep.Follow.Lost != 0 || rep.Follow.Duplicates != 0 {
		t.Fatalf("bench: %d accepted, follow %+v", rep.Events.Accepted, rep.Follow)
	}
	// The file sink publishes within sink.file_max_age of a file's first
	// record: wait until its metric counts every event as visible.
	waitPublished(t, base, "files", warehouseEvents, 3*time.Minute)
	got := read()
	dup := notOnce(got.UUIDs)
	rows := 0
	for _, n := range got.Hours {
		rows += n
	}
	if len(got.UUIDs) != warehouseEvents || dup != 0 || rows != warehouseEvents {
		t.Fatalf("pyarrow read %d distinct uuids (%d not exactly once), %d rows; want %d, each once", len(got.UUIDs), dup, rows, warehouseEvents)
	}
	for h := range got.Hours {
		if strings.Contains(h, "_filesink") || !strings.Contains(h, "/year=") || !strings.Contains(h, "/hour=") {
			t.Errorf("pyarrow read data outside an hour partition: %s", h)
		}
	}
	t.Logf("%d events: pyarrow read every uuid once from %d files in %d hour partitions (end to end %+v)", warehouseEvents, got.Files, len(got.Hours), rep.Follow.Latency)
}

// publishedRowsOf sums eventlogging_sink_rows_published_total of one sink
// (files, iceberg) on a standalone's /metrics.
func publishedRowsOf(t *testing.T, base, sinkName string) int {
	t.Helper()
	return sinkRowsOf(t, base, "eventlogging_sink_rows_published_total", sinkName)
}

// sinkRowsOf sums the counter metric of one sink (sql, files, iceberg) on
// a standalone's /metrics.
func sinkRowsOf(t *testing.T, base, metric, sinkName string) int {
	t.Helper()
	_, page, err := get(t.Context(), base+"/metrics")
	if err != nil {
		return 0
	}
	n := 0
	for line := range strings.Lines(page) {
		if !strings.HasPrefix(line, metric+"{") || !strings.Contains(line, `sink="`+sinkName+`"`) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			n += int(v)
		}
	}
	return n
}
