package e2e

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/eventlogging/eventlogging/internal/dbtest"
	"github.com/eventlogging/eventlogging/internal/kafkatest"
)

// sinkEvents are 5 schemas' events for the end-to-end sink test: nested
// objects, unicode, optional fields missing, an integer beyond 2^53.
var sinkEvents = []capsuleSet{
	{schema: "Generic", revision: 13, event: func(i int) string {
		return fmt.Sprintf(`{"articleId":%d,"articleTitle":"☆ 彡 %d"}`, i, i)
	}},
	{schema: "ButtonClick", revision: 1, event: func(i int) string {
		if i%2 == 0 {
			return fmt.Sprintf(`{"button":"save","page":"P%d"}`, i) // count, loggedIn missing
		}
		return fmt.Sprintf(`{"button":"cancel","page":"P%d","count":%d,"loggedIn":true}`, i, i)
	}},
	{schema: "PageView", revision: 2, event: func(i int) string {
		return fmt.Sprintf(`{"title":"T%d","namespace":0,"timing":{"firstPaint":%d.25,"domReady":1.5}}`, i, i)
	}},
	{schema: "SearchQuery", revision: 5, event: func(i int) string {
		return fmt.Sprintf(`{"query":"q %d","results":%d,"source":"fulltext"}`, i, i%7)
	}},
	{schema: "NavigationTiming", revision: 7, event: func(i int) string {
		return fmt.Sprintf(`{"responseStart":%d,"loadEventEnd":9007199254740993}`, i)
	}},
}

// TestSinkDatabasesEndToEnd: 50,000 capsules over 5 schemas from the real
// broker through `eventlogging sink` into SQLite, MariaDB and PostgreSQL:
// exact row counts per table, values round-trip, and re-reading every topic
// from offset 0 (a new consumer group) adds no duplicate.
func TestSinkDatabasesEndToEnd(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	prefix := sinkPrefix(t, "sinkdb")
	cl := kafkaClient(t, brokers)
	adm := kadm.NewClient(cl)
	const perSchema = 10_000
	for _, se := range sinkEvents {
		topic := prefix + "_" + se.schema
		if _, err := adm.CreateTopic(t.Context(), 2, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
		se.wiki, se.recvFrom = "enwiki", "sinkdb-"+se.schema
		se.produce(t, cl, topic, 0, perSchema)
	}
	targets := []struct {
		name  string
		quote string // identifier quote character of the dialect
		open  func(t *testing.T) (*sql.DB, string)
	}{
		{"sqlite", `"`, func(t *testing.T) (*sql.DB, string) {
			path := t.TempDir() + "/events.db"
			return openSQLite(t, path), "sqlite:" + path
		}},
		{"mariadb", "`", func(t *testing.T) (*sql.DB, string) { db, dsn := dbtest.MySQL(t); return db, "mysql:" + dsn }},
		{"postgres", `"`, func(t *testing.T) (*sql.DB, string) { return dbtest.Postgres(t) }},
	}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			db, dsn := tg.open(t)
			run := func(group string) {
				env := sinkEnv(brokers, prefix, group)
				s := startService(t, "sink "+group, env, "sink", "--sql", dsn, "--schemas", "../../examples/schemas")
				waitGroupDone(t, adm, group+"-sql", prefix, len(sinkEvents)*perSchema)
				s.stop(t)
			}
			run(prefix + "-" + tg.name + "-a")
			qi := func(s string) string { return tg.quote + s + tg.quote }
			counts := tableCounts(t, db, qi)
			run(prefix + "-" + tg.name + "-b") // everything again, from offset 0
			again := tableCounts(t, db, qi)
			for _, se := range sinkEvents {
				table := fmt.Sprintf("%s_%d", se.schema, se.revision)
				if counts[table] != [2]int{perSchema, perSchema} || again[table] != counts[table] {
					t.Errorf("%s: rows/distinct uuids %v, after re-reading %v; want %d each", table, counts[table], again[table], perSchema)
				}
			}
			var title string
			var nav int64
			var firstPaint float64
			var loggedIn sql.NullBool
			q := func(query string, dest ...any) {
				t.Helper()
				if err := db.QueryRowContext(t.Context(), query).Scan(dest...); err != nil {
					t.Fatalf("%s: %v", query, err)
				}
			}
			q("SELECT "+qi("event_articleTitle")+" FROM "+qi("Generic_13")+" WHERE "+qi("event_articleId")+" = 42", &title)
			q("SELECT "+qi("event_loadEventEnd")+" FROM "+qi("NavigationTiming_7")+" WHERE "+qi("event_responseStart")+" = 42", &nav)
			q("SELECT "+qi("event_timing_firstPaint")+" FROM "+qi("PageView_2")+" WHERE "+qi("event_title")+" = 'T42'", &firstPaint)
			q("SELECT "+qi("event_loggedIn")+" FROM "+qi("ButtonClick_1")+" WHERE "+qi("event_page")+" = 'P42'", &loggedIn)
			if title != "☆ 彡 42" || nav != 9007199254740993 || firstPaint != 42.25 || loggedIn.Valid {
				t.Errorf("round trip: title %q, loadEventEnd %d, firstPaint %v, loggedIn %v (want NULL)", title, nav, firstPaint, loggedIn)
			}
			t.Logf("%s: 50,000 events in 5 tables, re-read from offset 0 without a duplicate", tg.name)
		})
	}
}

// tableCounts returns rows and distinct uuids per table of the 5 schemas.
func tableCounts(t *testing.T, db *sql.DB, qi func(string) string) map[string][2]int {
	t.Helper()
	out := map[string][2]int{}
	for _, se := range sinkEvents {
		table := fmt.Sprintf("%s_%d", se.schema, se.revision)
		var n, d int
		if err := db.QueryRowContext(t.Context(), "SELECT count(*), count(DISTINCT "+qi("uuid")+") FROM "+qi(table)).Scan(&n, &d); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		out[table] = [2]int{n, d}
	}
	return out
}

// waitGroupDone polls until the consumer group has committed every record
// of the prefix's topics (want in total).
func waitGroupDone(t *testing.T, adm *kadm.Client, group, prefix string, want int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	var got int64
	for time.Now().Before(deadline) {
		offs, err := adm.FetchOffsets(t.Context(), group)
		if err == nil {
			got = 0
			offs.Each(func(o kadm.OffsetResponse) {
				if strings.HasPrefix(o.Topic, prefix+"_") {
					got += o.At
				}
			})
			if got >= int64(want) {
				return
			}
		}
		time.Sleep(200 * time.Millisecond) // polling interval
	}
	t.Fatalf("group %s committed %d of %d records", group, got, want)
}
