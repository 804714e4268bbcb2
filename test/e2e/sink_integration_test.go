package e2e

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/testsupport"

	"github.com/parquet-go/parquet-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventlogging/eventlogging/internal/kafkatest"
)

// TestSinkCrashExactlyOnce: 20,000 capsules through `eventlogging sink`
// (SQLite + Parquet) on the real broker while the sink is SIGKILLed 5 times
// at random moments; afterwards SQL has exactly one row per uuid and the
// Parquet files hold each uuid exactly once.
func TestSinkCrashExactlyOnce(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	prefix := sinkPrefix(t, "sinkit")
	topic := prefix + "_Generic"
	cl := kafkaClient(t, brokers, kgo.RequiredAcks(kgo.AllISRAcks()))
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(t.Context(), 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "events.db")
	files := filepath.Join(dir, "files")
	env := sinkEnv(brokers, prefix, prefix,
		"EVENTLOGGING_SINK_BATCH_SIZE=500",
		"EVENTLOGGING_SINK_FILE_MAX_AGE=2s",
		"EVENTLOGGING_KAFKA_SESSION_TIMEOUT=6s")
	args := []string{"sink", "--sql", "sqlite:" + dbPath, "--files", files, "--schemas", "../../examples/schemas"}

	const n = 20_000
	// Generic events of sinkEvents, from another sender.
	events := sinkEvents[0]
	events.wiki, events.recvFrom = "testwiki", "sink-test"
	rng := rand.New(rand.NewPCG(1, 2))
	s := startService(t, "sink", env, args...)
	for k := range 5 {
		events.produce(t, cl, topic, k*n/5, (k+1)*n/5)
		time.Sleep(time.Duration(300+rng.IntN(1500)) * time.Millisecond) // a random moment for the kill (load shape, not synchronisation)
		s.kill()
		t.Logf("SIGKILLed the sink (%d)", k+1)
		s = startService(t, fmt.Sprintf("sink-%d", k+2), env, args...)
	}

	db := openSQLite(t, dbPath)
	deadline := time.Now().Add(3 * time.Minute)
	var rows, distinct int
	for time.Now().Before(deadline) {
		_ = db.QueryRowContext(t.Context(), `SELECT count(*), count(DISTINCT uuid) FROM "Generic_13"`).Scan(&rows, &distinct)
		if rows >= n {
			break
		}
		time.Sleep(200 * time.Millisecond) // polling interval
	}
	s.stop(t) // SIGTERM: the file sink publishes what it holds
	if rows != n || distinct != n {
		t.Fatalf("SQL: %d rows, %d distinct uuids, want %d", rows, distinct, n)
	}
	var title string
	if err := db.QueryRowContext(t.Context(), `SELECT event_articleTitle FROM "Generic_13" WHERE event_articleId = 7`).Scan(&title); err != nil || title != "☆ 彡 7" {
		t.Errorf("unicode round trip: %q %v", title, err)
	}
	seen := parquetUUIDs(t, filepath.Join(files, topic))
	missing, dups := events.notOnce(seen, n)
	if missing > 0 || dups > 0 || len(seen) != n {
		t.Fatalf("Parquet: %d uuids, %d missing, %d duplicated", len(seen), missing, dups)
	}
	t.Logf("after 5 SIGKILLs: %d rows in SQL, %d distinct uuids in Parquet, no duplicate", rows, len(seen))
}

// notOnce counts the capsules 0 to n-1 of c that seen holds no time
// (missing) or more than once (dups).
func (c capsuleSet) notOnce(seen map[string]int, n int) (missing, dups int) {
	for i := range n {
		switch seen[c.uuid(i)] {
		case 0:
			missing++
		case 1:
		default:
			dups++
		}
	}
	return missing, dups
}

// parquetUUIDs counts each uuid in the Parquet files under dir.
func parquetUUIDs(t *testing.T, dir string) map[string]int {
	t.Helper()
	seen := map[string]int{}
	err := testsupport.WalkParquet(dir, false, func(p string, pf *parquet.File) error {
		col, ok := pf.Schema().Lookup("uuid")
		if !ok {
			return fmt.Errorf("%s: no uuid column", p)
		}
		testsupport.EachParquetValue(pf, col.ColumnIndex, func(v parquet.Value) bool {
			if !v.IsNull() {
				seen[v.String()]++
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return seen
}
