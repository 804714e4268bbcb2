package e2e

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/testsupport"

	"github.com/parquet-go/parquet-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/kafkatest"
	"github.com/eventlogging/eventlogging/internal/sink/sqlsink"
)

// TestSinkCrashExactlyOnce: 20,000 capsules through `eventlogging sink`
// (SQLite + Parquet) on the real broker while the sink is SIGKILLed 5 times
// at random moments; afterwards SQL has exactly one row per uuid and the
// Parquet files hold each uuid exactly once.
func TestSinkCrashExactlyOnce(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	prefix := strings.ReplaceAll(kafkatest.Topic(t, "sinkit"), "-", "_")
	topic := prefix + "_Generic"
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := mustAdmin(t, brokers)
	if _, err := adm.CreateTopic(t.Context(), 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "events.db")
	files := filepath.Join(dir, "files")
	env := []string{
		"EVENTLOGGING_KAFKA_BROKERS=" + strings.Join(brokers, ","),
		"EVENTLOGGING_SINK_TOPICS=^" + prefix + "_.+",
		"EVENTLOGGING_SINK_GROUP=" + prefix,
		"EVENTLOGGING_SINK_ERROR_TOPIC=" + prefix + "-sinkerrors",
		"EVENTLOGGING_SINK_BATCH_SIZE=500",
		"EVENTLOGGING_SINK_BATCH_TIME=200ms",
		"EVENTLOGGING_SINK_FILE_MAX_AGE=2s",
		"EVENTLOGGING_KAFKA_SESSION_TIMEOUT=6s",
	}
	args := []string{"sink", "--sql", "sqlite:" + dbPath, "--files", files, "--schemas", "../../examples/schemas"}

	const n = 20_000
	produce := func(from, to int) {
		recs := make([]*kgo.Record, 0, to-from)
		for i := from; i < to; i++ {
			uuid := capsule.UUID("sink-test", int64(i), 1764496800)
			v := fmt.Sprintf(`{"event":{"articleId":%d,"articleTitle":"☆ 彡 %d"},"schema":"Generic","revision":13,"wiki":"testwiki","recvFrom":"sink-test","seqId":%d,"timestamp":1764496800,"dt":"2025-11-30T10:00:00Z","uuid":%q,"topic":%q}`, i, i, i, uuid, topic)
			recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(v)})
		}
		if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	s := startService(t, "sink", env, args...)
	for k := range 5 {
		produce(k*n/5, (k+1)*n/5)
		time.Sleep(time.Duration(300+rng.IntN(1500)) * time.Millisecond) // a random moment for the kill (load shape, not synchronisation)
		s.kill()
		t.Logf("SIGKILLed the sink (%d)", k+1)
		s = startService(t, fmt.Sprintf("sink-%d", k+2), env, args...)
	}

	db, err := sqlsink.Open(sqlsink.SQLite, dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
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
	dups, missing := 0, 0
	for i := range n {
		switch seen[capsule.UUID("sink-test", int64(i), 1764496800)] {
		case 0:
			missing++
		case 1:
		default:
			dups++
		}
	}
	if missing > 0 || dups > 0 || len(seen) != n {
		t.Fatalf("Parquet: %d uuids, %d missing, %d duplicated", len(seen), missing, dups)
	}
	t.Logf("after 5 SIGKILLs: %d rows in SQL, %d distinct uuids in Parquet, no duplicate", rows, len(seen))
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
