package purge

import (
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/dbtest"
	"github.com/eventlogging/eventlogging/internal/schema"
	"github.com/eventlogging/eventlogging/internal/sink/sqlsink"
)

// testNow is the purge's "now" in tests; old events are 100 days before
// it, recent ones 1 day.
var testNow = time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC)

const (
	testSaltHex = "73616c74" // "salt"
	testIP      = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	testUA      = "Mozilla/5.0 (☆ 彡)"
)

// testPolicyYAML gives Edit an allow-list and Click none.
const testPolicyYAML = `
retention: 90d
salt_hex: ` + testSaltHex + `
batch_rows: 2
schemas:
  Edit:
    keep: [wiki, event.action]
    hash: [event.token, clientIp]
`

func testPolicy(t *testing.T) Policy {
	t.Helper()
	p, err := ParsePolicy([]byte(testPolicyYAML))
	if err != nil {
		t.Fatal(err)
	}
	p.Now = func() time.Time { return testNow }
	return p
}

// wantHash is the HMAC the purge must write, computed independently.
func wantHash(v string) string {
	mac := hmac.New(sha256.New, []byte("salt"))
	mac.Write([]byte(v))
	return hex.EncodeToString(mac.Sum(nil))
}

// testEvent is one capsule of the test data set.
type testEvent struct {
	schema string
	seq    int64
	old    bool
}

// testEvents: 5 old and 2 recent Edit, 3 old and 1 recent Click.
func testEvents() []testEvent {
	var evs []testEvent
	for i := range int64(7) {
		evs = append(evs, testEvent{"Edit", i, i < 5})
	}
	for i := range int64(4) {
		evs = append(evs, testEvent{"Click", 100 + i, i < 3})
	}
	return evs
}

// makeCapsules makes a capsule of schema for each sequence number.
func makeCapsules(t *testing.T, schema string, old bool, seqs ...int64) []map[string]any {
	t.Helper()
	out := make([]map[string]any, 0, len(seqs))
	for _, s := range seqs {
		out = append(out, makeCapsule(t, testEvent{schema, s, old}))
	}
	return out
}

// makeCapsule builds a capsule as the processor emits it (decoded JSON,
// numbers as json.Number).
func makeCapsule(t *testing.T, e testEvent) map[string]any {
	t.Helper()
	at := testNow.Add(-24*time.Hour - time.Duration(e.seq)*time.Minute)
	if e.old {
		at = testNow.Add(-100*24*time.Hour - time.Duration(e.seq)*time.Minute)
	}
	var event string
	if e.schema == "Edit" {
		event = fmt.Sprintf(`{"action":"save","token":"tok-%d","pageId":%d,"user":{"id":7,"name":"Alice"}}`, e.seq, e.seq)
	} else {
		event = `{"button":"ok"}`
	}
	ev, err := capsule.Decode([]byte(event))
	if err != nil {
		t.Fatal(err)
	}
	c := capsule.Capsule{
		Event:     ev.(map[string]any),
		Schema:    e.schema,
		Revision:  1,
		Wiki:      "enwiki",
		WebHost:   "en.m.wikipedia.org",
		RecvFrom:  "cp1001",
		SeqID:     e.seq,
		HasSeqID:  true,
		Timestamp: at.Unix(),
		DT:        capsule.FormatDT(at),
		UUID:      capsule.UUID("cp1001", e.seq, at.Unix()),
		UserAgent: testUA,
		ClientIP:  testIP,
		Topic:     "eventlogging_" + e.schema,
	}
	v, err := capsule.Decode(c.AppendJSON(nil))
	if err != nil {
		t.Fatal(err)
	}
	return v.(map[string]any)
}

// tableRows reads every row of table as text, by uuid.
func tableRows(t *testing.T, db *sql.DB, d sqlsink.Dialect, table string) map[string]map[string]sql.NullString {
	t.Helper()
	dl, err := newSQLDialect(string(d))
	if err != nil {
		t.Fatal(err)
	}
	// Columns listed (not *): pgx caches statements, and a cached SELECT *
	// fails once the purge has added a column.
	tb, err := readTable(t.Context(), db, dl, table)
	if err != nil || tb == nil {
		t.Fatalf("table %s: %v", table, err)
	}
	var list []string
	for _, c := range tb.cols {
		list = append(list, dl.Quote(c.name))
	}
	rows, err := db.QueryContext(t.Context(), "SELECT "+strings.Join(list, ", ")+" FROM "+dl.Quote(table))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rows.Close() }()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]sql.NullString{}
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		dest := make([]any, len(cols))
		for i := range vals {
			dest[i] = &vals[i]
		}
		if err := rows.Scan(dest...); err != nil {
			t.Fatal(err)
		}
		m := map[string]sql.NullString{}
		for i, c := range cols {
			m[c] = vals[i]
		}
		out[m["uuid"].String] = m
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

type snapshot map[string]map[string]map[string]sql.NullString

func takeSnapshot(t *testing.T, db *sql.DB, d sqlsink.Dialect, tables []string) snapshot {
	t.Helper()
	s := snapshot{}
	for _, tb := range tables {
		s[tb] = tableRows(t, db, d, tb)
	}
	return s
}

func sameSnapshot(t *testing.T, what string, got, want snapshot) {
	t.Helper()
	for tb, rows := range want {
		if len(got[tb]) != len(rows) {
			t.Errorf("%s: table %s has %d rows, want %d", what, tb, len(got[tb]), len(rows))
			continue
		}
		for id, row := range rows {
			if !maps.Equal(got[tb][id], row) {
				t.Errorf("%s: table %s row %s changed:\n got %v\nwant %v", what, tb, id, got[tb][id], row)
			}
		}
	}
}

func TestPurgeSQLite(t *testing.T) {
	runPurgeSQL(t, sqlsink.SQLite, filepath.Join(t.TempDir(), "events.db"))
}

func TestPurgeMySQL(t *testing.T) {
	_, dsn := dbtest.MySQL(t)
	runPurgeSQL(t, sqlsink.MySQL, dsn)
}

func TestPurgePostgres(t *testing.T) {
	_, dsn := dbtest.Postgres(t)
	runPurgeSQL(t, sqlsink.Postgres, dsn)
}

// runPurgeSQL opens the database at dsn, writes the test events with
// sqlsink, then checks a dry run, a purge and a second purge.
func runPurgeSQL(t *testing.T, d sqlsink.Dialect, dsn string) {
	db, err := sqlsink.Open(d, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ctx := t.Context()
	res := schema.NewResolver(schema.NewDirSource("testdata/schemas"), schema.ResolverConfig{})
	w, err := sqlsink.NewWriter(db, res, sqlsink.Config{Dialect: d})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	evs := testEvents()
	var batch []map[string]any
	for _, e := range evs {
		batch = append(batch, makeCapsule(t, e))
	}
	r, err := w.Write(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	if r.Inserted != len(evs) || len(r.Poison) != 0 {
		t.Fatalf("sqlsink wrote %+v", r)
	}
	editT := w.Table(schema.ID{Name: "Edit", Revision: 1})
	clickT := w.Table(schema.ID{Name: "Click", Revision: 1})
	// A table sqlsink did not write is left alone.
	if _, err := db.ExecContext(ctx, "CREATE TABLE other (id INTEGER, dt TEXT)"); err != nil {
		t.Fatal(err)
	}
	tables := []string{editT, clickT}
	before := takeSnapshot(t, db, d, tables)

	p := testPolicy(t)
	p.DryRun = true
	rep, err := PurgeSQL(ctx, db, string(d), p)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Tables != 2 || rep.RowsDeleted != 3 || rep.RowsSanitised != 5 || len(rep.Actions) != 2 {
		t.Errorf("dry run report %+v, want 2 tables, 3 rows deleted, 5 sanitised, 2 actions", rep)
	}
	for _, a := range rep.Actions {
		t.Logf("dry run: %s", a)
	}
	if !strings.Contains(strings.Join(rep.Actions, "\n"), "delete 3 rows") {
		t.Errorf("dry run actions %q do not say what is deleted", rep.Actions)
	}
	sameSnapshot(t, "after dry run", takeSnapshot(t, db, d, tables), before)
	// The dry run added no column either.
	if got := tableRows(t, db, d, editT); len(got) > 0 {
		for _, row := range got {
			if _, ok := row[SanitisedColumn]; ok {
				t.Errorf("dry run added column %s", SanitisedColumn)
			}
			break
		}
	}

	p.DryRun = false
	rep, err = PurgeSQL(ctx, db, string(d), p)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Tables != 2 || rep.RowsDeleted != 3 || rep.RowsSanitised != 5 || len(rep.Actions) != 0 {
		t.Errorf("purge report %+v, want 2 tables, 3 rows deleted, 5 sanitised", rep)
	}
	after := takeSnapshot(t, db, d, tables)
	for _, e := range evs {
		c := makeCapsule(t, e)
		id := c["uuid"].(string)
		table := editT
		if e.schema == "Click" {
			table = clickT
		}
		got, ok := maps.Clone(after[table][id]), after[table][id] != nil
		orig := before[table][id]
		switch {
		case !e.old:
			if !ok {
				t.Errorf("recent %s row %d deleted", e.schema, e.seq)
				continue
			}
			delete(got, SanitisedColumn)
			if !maps.Equal(got, orig) {
				t.Errorf("recent %s row %d changed:\n got %v\nwant %v", e.schema, e.seq, got, orig)
			}
		case e.schema == "Click":
			if ok {
				t.Errorf("old Click row %d not deleted", e.seq)
			}
		default:
			if !ok {
				t.Errorf("old Edit row %d deleted, want sanitised", e.seq)
				continue
			}
			want := map[string]sql.NullString{}
			for col, v := range orig {
				switch col {
				case "id", "uuid", "dt", "timestamp", "schema", "revision", "wiki", "event_action":
					want[col] = v
				case "clientIp", "event_token":
					want[col] = sql.NullString{String: wantHash(v.String), Valid: true}
				default:
					want[col] = sql.NullString{}
				}
			}
			if want["wiki"].String != "enwiki" || want["event_action"].String != "save" ||
				want["event_token"].String != wantHash(fmt.Sprintf("tok-%d", e.seq)) {
				t.Fatalf("unexpected test data: %v", orig)
			}
			s := got[SanitisedColumn]
			if !s.Valid || (s.String != "1" && s.String != "true") {
				t.Errorf("old Edit row %d: %s = %v, want true", e.seq, SanitisedColumn, s)
			}
			delete(got, SanitisedColumn)
			if !maps.Equal(got, want) {
				t.Errorf("old Edit row %d:\n got %v\nwant %v", e.seq, got, want)
			}
		}
	}

	// Idempotent: a second run (and a dry run) finds nothing to do.
	for _, dry := range []bool{false, true} {
		p.DryRun = dry
		rep, err = PurgeSQL(ctx, db, string(d), p)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Tables != 2 || rep.RowsDeleted != 0 || rep.RowsSanitised != 0 {
			t.Errorf("second run (dry run %v) report %+v, want nothing done", dry, rep)
		}
		sameSnapshot(t, "after second run", takeSnapshot(t, db, d, tables), after)
	}

	// sqlsink still writes to a sanitised table (the extra column is
	// harmless), and the new old row is sanitised by the next run.
	late := makeCapsule(t, testEvent{"Edit", 50, true})
	if r, err := w.Write(ctx, []map[string]any{late}); err != nil || r.Inserted != 1 {
		t.Fatalf("write after purge: %+v, %v", r, err)
	}
	rep, err = PurgeSQL(ctx, db, string(d), p)
	if err != nil {
		t.Fatal(err)
	}
	if rep.RowsSanitised != 1 || len(rep.Actions) != 1 {
		t.Errorf("dry run after a late row: %+v", rep)
	}
	p.DryRun = false
	rep, err = PurgeSQL(ctx, db, string(d), p)
	if err != nil {
		t.Fatal(err)
	}
	if rep.RowsSanitised != 1 {
		t.Errorf("late row: %+v, want 1 row sanitised", rep)
	}
	row := tableRows(t, db, d, editT)[late["uuid"].(string)]
	if row["event_token"].String != wantHash("tok-50") || row["userAgent"].Valid {
		t.Errorf("late row not sanitised: %v", row)
	}
	keys := slices.Sorted(maps.Keys(row))
	t.Logf("columns of %s: %v", editT, keys)
}
