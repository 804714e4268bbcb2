package sqlsink

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/dbtest"
	"github.com/eventlogging/eventlogging/internal/kafka"
)

// benchEvent is a realistic Bench/1 event: 22 fields, one nested object.
const benchEvent = `{"action": "saveSuccess", "editor": "visualeditor", "platform": "desktop", "version": 1,
	"pageId": 1234567, "pageNs": 0, "pageTitle": "Main Page ☆ 彡", "revId": 987654321,
	"sessionToken": "5f8a2b1c9d3e4f60718293a4b5c6d7e8", "userId": 4242, "userEditCount": 1500,
	"isAnon": false, "isOversample": true, "timing": 1234.5, "loadTime": 0.875, "skin": "vector-2022",
	"language": "en", "referrer": "https://en.wikipedia.org/wiki/Special:Search?search=eventlogging",
	"tags": ["visualeditor", "mobile edit"], "screen": {"width": 1920, "height": 1080, "density": 1.5}}`

// BenchmarkWrite measures rows/s for batches of 1,000 new Bench/1 rows per
// dialect (mysql and postgres when internal/dbtest has their servers):
//
//	go test -run '^$' -bench BenchmarkWrite -benchtime 20x ./internal/sink/sqlsink
func BenchmarkWrite(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { benchWrite(b, openSQLite(b), SQLite) })
	b.Run("mysql", func(b *testing.B) {
		_, dsn := dbtest.MySQL(b)
		benchWrite(b, openDSN(b, MySQL, dsn), MySQL)
	})
	b.Run("postgres", func(b *testing.B) {
		_, dsn := dbtest.Postgres(b)
		benchWrite(b, openDSN(b, Postgres, dsn), Postgres)
	})
}

// benchBatchSize is the rows of one benchmark batch.
const benchBatchSize = 1000

func benchWrite(b *testing.B, db *sql.DB, d Dialect) {
	ctx := b.Context()
	w, err := NewWriter(db, testResolver(b), Config{Dialect: d})
	if err != nil {
		b.Fatal(err)
	}
	runBench(b, benchCapsules(b), func(batch []map[string]any) error {
		res, err := w.Write(ctx, batch)
		if err == nil && res.Inserted != len(batch) {
			err = fmt.Errorf("inserted %d of %d, %d duplicates, %d poison", res.Inserted, len(batch), res.Duplicates, len(res.Poison))
		}
		return err
	})
}

// BenchmarkWriteRecords measures the path sink.Run takes for a batch of
// 1,000 Kafka records of new Bench/1 capsules on SQLite: decoding the JSON
// of each record, then inserting the rows.
//
//	go test -run '^$' -bench BenchmarkWriteRecords -benchtime 20x ./internal/sink/sqlsink
func BenchmarkWriteRecords(b *testing.B) {
	ctx := b.Context()
	w, err := NewWriter(openSQLite(b), testResolver(b), Config{Dialect: SQLite})
	if err != nil {
		b.Fatal(err)
	}
	capsules := benchCapsules(b)
	seq := int64(0)
	records := func() []kafka.Record {
		batch := make([]kafka.Record, 0, benchBatchSize)
		for _, c := range capsules() {
			v, err := json.Marshal(c)
			if err != nil {
				b.Fatal(err)
			}
			seq++
			batch = append(batch, kafka.Record{Topic: "eventlogging_Bench", Offset: seq, Value: v})
		}
		return batch
	}
	runBench(b, records, func(batch []kafka.Record) error {
		poison, err := w.WriteRecords(ctx, batch)
		if err == nil && len(poison) > 0 {
			err = fmt.Errorf("%d poison: %s", len(poison), poison[0].Reason)
		}
		return err
	})
}

// benchCapsules returns a function making batches of new Bench/1 capsules
// (a new seqId and uuid each).
func benchCapsules(b *testing.B) func() []map[string]any {
	tmpl := makeCapsule(b, "Bench", 1, 0, benchEvent)
	seq := int64(0)
	return func() []map[string]any {
		batch := make([]map[string]any, benchBatchSize)
		for i := range batch {
			seq++
			c := maps.Clone(tmpl)
			c["seqId"] = json.Number(strconv.FormatInt(seq, 10))
			c["uuid"] = capsule.UUID("bench", seq, baseTS)
			batch[i] = c
		}
		return batch
	}
}

// runBench writes a first batch (creating the table) and, when
// EVENTLOGGING_BENCH_PREFILL is set, that many more rows (a table of
// production size: on SQLite a commit writes about one page of the uuid
// index per row once the index is larger than a batch), then times write
// over b.N new batches (made untimed) and reports rows/s, and the CPU
// time of this process (user and system, all threads) per row spent in
// write: on a loaded machine rows/s measures the scheduler as much as the
// code, CPU time much less so. (A database server's own CPU time is not
// included.)
func runBench[T any](b *testing.B, newBatch func() []T, write func([]T) error) {
	if err := write(newBatch()); err != nil {
		b.Fatal(err)
	}
	if v := os.Getenv("EVENTLOGGING_BENCH_PREFILL"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("EVENTLOGGING_BENCH_PREFILL=%q: %v", v, err)
		}
		for range n / benchBatchSize {
			if err := write(newBatch()); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportAllocs()
	var cpu time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		batch := newBatch()
		start := processCPU(b)
		b.StartTimer()
		if err := write(batch); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cpu += processCPU(b) - start
		b.StartTimer()
	}
	b.ReportMetric(float64(b.N*benchBatchSize)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*benchBatchSize), "cpu-µs/row")
}

// processCPU returns the user and system CPU time of this process.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
