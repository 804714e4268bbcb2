package sqlsink

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/schema"
)

// baseTS is the receive time of the test capsules with seqId 0.
const baseTS = 1358791834 // 2013-01-21T18:10:34Z

// makeCapsule builds a capsule the way the processor emits it: a
// capsule.Capsule encoded to JSON and decoded again (numbers as
// json.Number). Capsules with the same recvFrom and seq have the same uuid.
func makeCapsule(t testing.TB, name string, rev, seq int64, event string) map[string]any {
	t.Helper()
	ev, err := capsule.Decode([]byte(event))
	if err != nil {
		t.Fatalf("event %s: %v", event, err)
	}
	ts := baseTS + seq
	c := capsule.Capsule{
		Event:     ev.(map[string]any),
		Schema:    name,
		Revision:  rev,
		Wiki:      "enwiki",
		WebHost:   "en.m.wikipedia.org",
		RecvFrom:  "cp1001",
		SeqID:     seq,
		HasSeqID:  true,
		Timestamp: ts,
		DT:        capsule.FormatDT(time.Unix(ts, 0)),
		UUID:      capsule.UUID("cp1001", seq, ts),
		UserAgent: "Mozilla/5.0 (☆ 彡)",
		ClientIP:  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		Topic:     "eventlogging_" + name,
	}
	v, err := capsule.Decode(c.AppendJSON(nil))
	if err != nil {
		t.Fatal(err)
	}
	return v.(map[string]any)
}

// Property names of Hostile/1 and their columns.
const (
	dropQuote    = `"; DROP TABLE x; --`
	dropBacktick = "`; DROP TABLE x; --"
	longName     = "aVeryLongPropertyNameThatGoesOnAndOnWellPastTheSixtyThreeByteIdentifierLimit"
	longTable    = "ALongSchemaNameThatFillsAlmostAllOfTheSixtyThreeCharactersAllow"
)

// runConformance is the behaviour every dialect must show, run against a
// fresh, empty database: SQLite always, MariaDB and PostgreSQL when their
// test servers are configured (internal/dbtest).
func runConformance(t *testing.T, db *sql.DB, d Dialect) {
	ctx := t.Context()
	dl, err := newDialect(d)
	if err != nil {
		t.Fatal(err)
	}
	w := newTestWriter(t, db, testResolver(t), Config{Dialect: d})
	// The table the hostile property names try to drop.
	mustExec(t, db, "CREATE TABLE x (a INTEGER)")
	mustExec(t, db, "INSERT INTO x (a) VALUES (1)")

	hostile := fmt.Sprintf(`{%q: "Robert'); DROP TABLE x;--", %q: "bobby", "☆ 彡": "star", "trailing ": 1, "Case": true, "case": false, %q: 1, %q: 2}`,
		dropQuote, dropBacktick, longName, longName+"Too")
	batch := []map[string]any{
		0: makeCapsule(t, "Edit", 1, 0, `{"version": 1, "action": "init", "editor": "visualeditor", "pageId": 42, "revId": 9007199254740993,
			"timing": 12.5, "platform": "desktop", "user": {"id": 7, "editCount": 1234, "class": "", "undeclared": "kept"},
			"extra": {"anything": [1, "two", null]}}`),
		1: makeCapsule(t, "Edit", 1, 1, `{"version": 1, "action": "ready", "editor": "wikitext", "pageId": 1, "platform": "phone", "user": {"id": 0}}`),
		2: makeCapsule(t, "Nested", 1, 2, `{"value": "☆ 彡", "nested": {"deeplyNested": {"pi": 3.14159}}, "a_b": "flat",
			"a": {"b": -9223372036854775808}, "context": {"skin": "vector", "theme": "dark"}, "position": {"x": 1, "y": 2}}`),
		3: makeCapsule(t, "Nested", 1, 3, `{"value": "", "position": null}`),
		4: makeCapsule(t, "Types", 1, 4, `{"big": 9007199254740993, "count": null, "ratio": 1e-7, "flag": true, "label": "☆ 彡",
			"tags": ["a", "☆"], "free": {"k": {"deep": [1, 2]}}, "anything": "str", "mixed": 5, "choice": "b", "level": 3}`),
		5: makeCapsule(t, "Types", 1, 5, `{"big": -9007199254740993, "count": 1.0e2, "flag": false, "mixed": "five",
			"anything": 12345678901234567890123, "ratio": 1.0e3}`),
		6: makeCapsule(t, "Hostile", 1, 6, hostile),
		7: makeCapsule(t, longTable, 1234567, 7, `{"n": 5}`),
		8: makeCapsule(t, "Missing", 1, 8, `{}`),
		9: makeCapsule(t, "Types", 1, 9, `{"big": 99999999999999999999}`),
		10: func() map[string]any {
			c := makeCapsule(t, "Types", 1, 10, `{}`)
			delete(c, "uuid")
			return c
		}(),
		11: makeCapsule(t, "Types", 1, 11, `{"label": 5}`),
		12: makeCapsule(t, "Types", 1, 12, `{"big": 0}`),
		13: func() map[string]any {
			c := makeCapsule(t, "Edit", 1, 13, `{}`)
			c["event"] = "not an object"
			return c
		}(),
		// An Event Platform event whose schema is not there.
		14: {"$schema": "/analytics/button_click/1.0.0", "meta": map[string]any{"stream": "x"}},
	}
	wantPoison := []int{8, 9, 10, 11, 13, 14}
	const valid = 9

	res, err := w.Write(ctx, batch)
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	checkResult(t, "first write", res, valid, 0, wantPoison)
	for _, p := range res.Poison {
		t.Logf("poison %d: %s", p.Index, p.Reason)
	}
	reasons := map[int]string{}
	for _, p := range res.Poison {
		reasons[p.Index] = p.Reason
	}
	for i, want := range map[int]string{
		8: "schema not found", 9: "/event/big: 99999999999999999999: out of BIGINT range",
		10: "/uuid: required", 11: "/event/label: got number, want string",
		13: "/event: got string, want object", 14: "schema not found",
	} {
		if !strings.Contains(reasons[i], want) {
			t.Errorf("poison %d: reason %q, want it to contain %q", i, reasons[i], want)
		}
	}

	tables := map[string]int{"Edit_1": 2, "Nested_1": 2, "Types_1": 3, "Hostile_1": 1, w.Table(schema.ID{Name: longTable, Revision: 1234567}): 1, "x": 1}
	checkCounts(t, db, dl, tables)

	// Values round-trip.
	uuid := func(i int) string { return batch[i]["uuid"].(string) }
	checkRow(t, db, dl, "Edit_1", uuid(0), map[string]any{
		"uuid": uuid(0), "dt": "2013-01-21T18:10:34Z", "timestamp": "20130121181034", "schema": "Edit", "revision": int64(1),
		"topic": "eventlogging_Edit", "wiki": "enwiki", "webHost": "en.m.wikipedia.org", "recvFrom": "cp1001", "seqId": int64(0),
		"userAgent": "Mozilla/5.0 (☆ 彡)", "clientIp": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"event_version": int64(1), "event_action": "init", "event_editor": "visualeditor", "event_pageId": int64(42),
		"event_revId": int64(9007199254740993), "event_timing": 12.5, "event_platform": "desktop",
		"event_user_id": int64(7), "event_user_editCount": int64(1234), "event_user_class": "",
		"event_user": `{"undeclared":"kept"}`, "event_extra": `{"anything":[1,"two",null]}`,
	})
	checkRow(t, db, dl, "Edit_1", uuid(1), map[string]any{
		"seqId": int64(1), "timestamp": "20130121181035", "event_revId": nil, "event_timing": nil, "event_user_id": int64(0),
		"event_user_editCount": nil, "event_user_class": nil, "event_user": nil, "event_extra": nil,
	})
	checkRow(t, db, dl, "Nested_1", uuid(2), map[string]any{
		"event_value": "☆ 彡", "event_nested_deeplyNested_pi": 3.14159, "event_a_b": "flat",
		"event_a_b_4c235501": int64(math.MinInt64), "event_context_skin": "vector", "event_context": `{"theme":"dark"}`,
		"event_position_x": int64(1), "event_position_y": int64(2),
	})
	checkRow(t, db, dl, "Nested_1", uuid(3), map[string]any{
		"event_value": "", "event_nested_deeplyNested_pi": nil, "event_a_b": nil, "event_position_x": nil, "event_context": nil,
	})
	checkRow(t, db, dl, "Types_1", uuid(4), map[string]any{
		"event_big": int64(9007199254740993), "event_count": nil, "event_ratio": 1e-7, "event_flag": true,
		"event_label": "☆ 彡", "event_tags": `["a","☆"]`, "event_free": `{"k":{"deep":[1,2]}}`, "event_anything": `"str"`,
		"event_mixed": "5", "event_choice": "b", "event_level": int64(3),
	})
	checkRow(t, db, dl, "Types_1", uuid(5), map[string]any{
		"event_big": int64(-9007199254740993), "event_count": int64(100), "event_flag": false, "event_mixed": `"five"`,
		"event_anything": "12345678901234567890123", "event_ratio": 1000.0, "event_label": nil, "event_tags": nil,
	})
	checkRow(t, db, dl, "Hostile_1", uuid(6), map[string]any{
		"event_" + dropQuote: "Robert'); DROP TABLE x;--", "event_" + dropBacktick: "bobby", "event__ __44f44113": "star",
		"event_trailing__4dbfd35a": int64(1), "event_Case": true, "event_case_a72d9dfc": false,
		"event_aVeryLongPropertyNameThatGoesOnAndOnWellPastTheS_434bb318": int64(2),
		"event_aVeryLongPropertyNameThatGoesOnAndOnWellPastTheS_a8cf6dcd": int64(1),
	})

	// The same batch again: nothing new, every valid row a duplicate.
	res, err = w.Write(ctx, batch)
	if err != nil {
		t.Fatalf("Write again: %v", err)
	}
	checkResult(t, "same batch again", res, 0, valid, wantPoison)
	checkCounts(t, db, dl, tables)

	// One duplicate among new rows: the others are written.
	res, err = w.Write(ctx, []map[string]any{
		makeCapsule(t, "Types", 1, 100, `{"big": 1}`),
		batch[4],
		makeCapsule(t, "Types", 1, 101, `{"big": 2}`),
		makeCapsule(t, "Types", 1, 102, `{"big": 3}`),
	})
	if err != nil {
		t.Fatalf("Write with a duplicate: %v", err)
	}
	checkResult(t, "one duplicate", res, 3, 1, nil)
	// A uuid twice in one batch.
	twice := makeCapsule(t, "Types", 1, 103, `{"big": 4}`)
	res, err = w.Write(ctx, []map[string]any{twice, twice})
	if err != nil {
		t.Fatalf("Write with a uuid twice: %v", err)
	}
	checkResult(t, "uuid twice in a batch", res, 1, 1, nil)
	tables["Types_1"] = 7
	checkCounts(t, db, dl, tables)
	checkRow(t, db, dl, "x", "", map[string]any{"a": int64(1)})

	t.Run("DatabaseRefusesValue", func(t *testing.T) { testDatabaseRefuses(t, db, dl) })
	t.Run("TablePerSchema", func(t *testing.T) { testTablePerSchema(t, db, dl) })
	t.Run("ConcurrentWriters", func(t *testing.T) { testConcurrentWriters(t, db, dl) })
	t.Run("SmallStatements", func(t *testing.T) {
		// Statements of 3 rows: chunks 3+3+3+1, the full ones prepared
		// once and reused.
		w := newTestWriter(t, db, testResolver(t), Config{Dialect: d})
		w.maxRows = 3
		var batch []map[string]any
		for i := range 10 {
			batch = append(batch, makeCapsule(t, "Types", 1, int64(400+i), fmt.Sprintf(`{"big": %d, "label": "☆ 彡 🎉"}`, i)))
		}
		batch = append(batch, batch[4])
		for round, want := range [][2]int{{10, 1}, {0, 11}} {
			res, err := w.Write(ctx, batch)
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, fmt.Sprintf("small statements, round %d", round), res, want[0], want[1], nil)
		}
		checkCounts(t, db, dl, map[string]int{"Types_1": 17})
		checkRow(t, db, dl, "Types_1", batch[9]["uuid"].(string), map[string]any{"event_big": int64(9), "event_label": "☆ 彡 🎉"})
	})
	t.Run("EmptyBatch", func(t *testing.T) {
		res, err := w.Write(ctx, nil)
		if err != nil || res.Inserted != 0 || res.Duplicates != 0 || len(res.Poison) != 0 {
			t.Errorf("Write(nil) = %+v, %v", res, err)
		}
	})
	t.Run("EventPlatform", func(t *testing.T) { testPlatform(t, db, dl) })
	t.Run("EventPlatformTablePerSchema", func(t *testing.T) { testPlatformPerSchema(t, db, dl) })
}

// testDatabaseRefuses checks the row-by-row fallback: a CHECK constraint the
// Writer does not know about makes the database refuse one row, which
// becomes poison while the rest are written.
func testDatabaseRefuses(t *testing.T, db *sql.DB, dl *dialect) {
	ctx := t.Context()
	w := checkedWriter(t, db, dl)
	one := makeCapsule(t, "Checked", 1, 200, `{"n": 1}`)
	r, err := w.Write(ctx, []map[string]any{
		one,
		makeCapsule(t, "Checked", 1, 201, `{"n": 500}`),
		makeCapsule(t, "Checked", 1, 202, `{"n": 2}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, "refused value", r, 2, 0, []int{1})
	if len(r.Poison) == 1 && !strings.Contains(r.Poison[0].Reason, "insert into Checked_1") {
		t.Errorf("reason %q", r.Poison[0].Reason)
	}
	r, err = w.Write(ctx, []map[string]any{one, makeCapsule(t, "Checked", 1, 203, `{"n": 1000}`)})
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, "refused value and a duplicate", r, 0, 1, []int{1})
	checkCounts(t, db, dl, map[string]int{"Checked_1": 2})
}

// checkedWriter returns a Writer to db and creates the table of Checked/1
// as the Writer would, plus a CHECK constraint the Writer does not know
// about: event_n < 100.
func checkedWriter(t *testing.T, db *sql.DB, dl *dialect) *Writer {
	t.Helper()
	res := testResolver(t)
	s, err := res.Resolve(t.Context(), schema.ID{Name: "Checked", Revision: 1})
	if err != nil {
		t.Fatal(err)
	}
	w := newTestWriter(t, db, res, Config{Dialect: dl.name})
	stmts := w.DDL(s)
	i := strings.LastIndex(stmts[0], "\n)")
	stmts[0] = stmts[0][:i] + ",\n\tCHECK (" + dl.quote("event_n") + " < 100)" + stmts[0][i:]
	for _, stmt := range stmts {
		mustExec(t, db, stmt)
	}
	return w
}

// testTablePerSchema writes three revisions to one table: revision 2 adds a
// column, revision 3 changes a column's type and is poison.
func testTablePerSchema(t *testing.T, db *sql.DB, dl *dialect) {
	ctx := t.Context()
	w := newTestWriter(t, db, testResolver(t), Config{Dialect: dl.name, TablePerSchema: true})
	if got := w.Table(schema.ID{Name: "Evolve", Revision: 2}); got != "Evolve" {
		t.Fatalf("Table = %q", got)
	}
	batch := []map[string]any{
		makeCapsule(t, "Evolve", 2, 300, `{"a": 2, "b": "y", "c": true}`),
		makeCapsule(t, "Evolve", 1, 301, `{"a": 1, "b": "x"}`),
		makeCapsule(t, "Evolve", 3, 302, `{"a": "three"}`),
		makeCapsule(t, "Evolve", 1, 303, `{"a": 4}`),
	}
	r, err := w.Write(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, "per schema", r, 3, 0, []int{2})
	if len(r.Poison) == 1 && !strings.Contains(r.Poison[0].Reason, "does not fit table Evolve: column event_a is int") {
		t.Errorf("reason %q", r.Poison[0].Reason)
	}
	checkRow(t, db, dl, "Evolve", batch[0]["uuid"].(string), map[string]any{"revision": int64(2), "event_a": int64(2), "event_c": true})
	checkRow(t, db, dl, "Evolve", batch[1]["uuid"].(string), map[string]any{"revision": int64(1), "event_b": "x", "event_c": nil})

	// A new Writer (a restarted sink) finds the table as it is.
	w2 := newTestWriter(t, db, testResolver(t), Config{Dialect: dl.name, TablePerSchema: true})
	r, err = w2.Write(ctx, []map[string]any{
		batch[3],
		makeCapsule(t, "Evolve", 3, 304, `{"a": "four"}`),
		makeCapsule(t, "Evolve", 2, 305, `{"c": false}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, "per schema, restarted", r, 1, 1, []int{1})
	checkCounts(t, db, dl, map[string]int{"Evolve": 4})
}

// testConcurrentWriters writes to one new table from several goroutines
// and Writers (as several sink processes would) at once, with overlapping
// uuids. Write errors are retried, as the sink runner does.
func testConcurrentWriters(t *testing.T, db *sql.DB, dl *dialect) {
	ctx := t.Context()
	const writers, perWriter, step = 4, 50, 25
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		ins, dup int
		errs     []error
	)
	// Two Writers (two sink processes), each shared by two goroutines.
	var shared [2]*Writer
	for i := range shared {
		w := newTestWriter(t, db, testResolver(t), Config{Dialect: dl.name})
		shared[i] = w
	}
	for k := range writers {
		w := shared[k%2]
		var batch []map[string]any
		for i := range perWriter {
			seq := int64(1000 + k*step + i)
			batch = append(batch, makeCapsule(t, "Burst", 1, seq, fmt.Sprintf(`{"n": %d, "s": "writer %d ☆"}`, seq, k)))
		}
		wg.Go(func() {
			r, err := writeRetrying(t, ctx, w, batch)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			ins += r.Inserted
			dup += r.Duplicates
		})
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	distinct := (writers-1)*step + perWriter
	if ins != distinct || dup != writers*perWriter-distinct {
		t.Errorf("inserted %d, duplicates %d; want %d, %d", ins, dup, distinct, writers*perWriter-distinct)
	}
	checkCounts(t, db, dl, map[string]int{"Burst_1": distinct})
}

func writeRetrying(t *testing.T, ctx context.Context, w *Writer, batch []map[string]any) (Result, error) {
	var err error
	for range 10 {
		var r Result
		if r, err = w.Write(ctx, batch); err == nil {
			return r, nil
		}
		t.Logf("Write: %v; retrying", err)
	}
	return Result{}, err
}

func mustExec(t *testing.T, db *sql.DB, stmt string) {
	t.Helper()
	if _, err := db.ExecContext(t.Context(), stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

func checkResult(t *testing.T, what string, r Result, inserted, duplicates int, poison []int) {
	t.Helper()
	var got []int
	for _, p := range r.Poison {
		got = append(got, p.Index)
	}
	if r.Inserted != inserted || r.Duplicates != duplicates || !slices.Equal(got, poison) {
		t.Errorf("%s: inserted %d, duplicates %d, poison %v; want %d, %d, %v (%+v)",
			what, r.Inserted, r.Duplicates, got, inserted, duplicates, poison, r.Poison)
	}
}

func checkCounts(t *testing.T, db *sql.DB, dl *dialect, want map[string]int) {
	t.Helper()
	for table, n := range want {
		var got int
		if err := db.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM "+dl.quote(table)).Scan(&got); err != nil {
			t.Errorf("count %s: %v", table, err)
			continue
		}
		if got != n {
			t.Errorf("table %s has %d rows, want %d", table, got, n)
		}
	}
}

// checkRow reads the columns of want from the row of table with uuid (any
// row when uuid is "") and compares the values. Booleans may come back as
// 0/1, text as []byte.
func checkRow(t *testing.T, db *sql.DB, dl *dialect, table, uuid string, want map[string]any) {
	t.Helper()
	cols := make([]string, 0, len(want))
	for c := range want {
		cols = append(cols, c)
	}
	slices.Sort(cols)
	quoted := make([]string, len(cols))
	for i, c := range cols {
		quoted[i] = dl.quote(c)
	}
	q := "SELECT " + strings.Join(quoted, ", ") + " FROM " + dl.quote(table)
	var args []any
	if uuid != "" {
		ph := "?"
		if dl.name == Postgres {
			ph = "$1"
		}
		q += " WHERE " + dl.quote("uuid") + " = " + ph
		args = append(args, uuid)
	}
	got := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range got {
		ptrs[i] = &got[i]
	}
	if err := db.QueryRowContext(t.Context(), q, args...).Scan(ptrs...); err != nil {
		t.Errorf("%s: %v", q, err)
		return
	}
	for i, c := range cols {
		g, w := got[i], want[c]
		if b, ok := g.([]byte); ok {
			g = string(b)
		}
		if _, ok := w.(bool); ok {
			if n, ok := g.(int64); ok && (n == 0 || n == 1) {
				g = n == 1
			}
		}
		if g != w {
			t.Errorf("%s %s: got %#v, want %#v", table, c, g, w)
		}
	}
}
