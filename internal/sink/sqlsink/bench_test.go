package sqlsink

import (
	"database/sql"
	"encoding/json"
	"maps"
	"strconv"
	"testing"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/dbtest"
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

func benchWrite(b *testing.B, db *sql.DB, d Dialect) {
	const batchSize = 1000
	ctx := b.Context()
	w, err := NewWriter(db, testResolver(b), Config{Dialect: d})
	if err != nil {
		b.Fatal(err)
	}
	tmpl := makeCapsule(b, "Bench", 1, 0, benchEvent)
	seq := int64(0)
	newBatch := func() []map[string]any {
		batch := make([]map[string]any, batchSize)
		for i := range batch {
			seq++
			c := maps.Clone(tmpl)
			c["seqId"] = json.Number(strconv.FormatInt(seq, 10))
			c["uuid"] = capsule.UUID("bench", seq, baseTS)
			batch[i] = c
		}
		return batch
	}
	// The first write creates the table.
	if _, err := w.Write(ctx, newBatch()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		batch := newBatch()
		b.StartTimer()
		res, err := w.Write(ctx, batch)
		if err != nil {
			b.Fatal(err)
		}
		if res.Inserted != batchSize {
			b.Fatalf("inserted %d of %d, %d duplicates, %d poison", res.Inserted, batchSize, res.Duplicates, len(res.Poison))
		}
	}
	b.ReportMetric(float64(b.N*batchSize)/b.Elapsed().Seconds(), "rows/s")
}
