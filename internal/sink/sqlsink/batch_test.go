package sqlsink

import (
	"database/sql"
	"fmt"
	"math/bits"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventlogging/eventlogging/internal/dbtest"
)

// Tests of the batched write paths (multi-row INSERT statements on SQLite
// and MariaDB, COPY through a staging table on PostgreSQL): duplicates
// inside a batch and already stored, a value the database refuses in the
// middle of a statement, and batch sizes around the statement size. Each
// runs on every dialect, on a database of its own.

// eachDialect runs f on a fresh database of every dialect (MariaDB and
// PostgreSQL as internal/dbtest provides them).
func eachDialect(t *testing.T, f func(t *testing.T, db *sql.DB, dl *dialect)) {
	t.Helper()
	eachDSN(t, func(t *testing.T, dl *dialect, dsn string) {
		f(t, openDSN(t, dl.name, dsn), dl)
	})
}

// eachDSN runs f with the DSN of a fresh database of every dialect, for
// tests that open it more than once (several Writers, as several
// processes would).
func eachDSN(t *testing.T, f func(t *testing.T, dl *dialect, dsn string)) {
	t.Helper()
	run := func(d Dialect, dsn func(t *testing.T) string) {
		t.Run(string(d), func(t *testing.T) {
			dl, err := newDialect(d)
			if err != nil {
				t.Fatal(err)
			}
			f(t, dl, dsn(t))
		})
	}
	run(SQLite, func(t *testing.T) string { return filepath.Join(t.TempDir(), "events.db") })
	run(MySQL, func(t *testing.T) string {
		_, dsn := dbtest.MySQL(t)
		return dsn
	})
	run(Postgres, func(t *testing.T) string {
		_, dsn := dbtest.Postgres(t)
		return dsn
	})
}

// typesRows returns n Types/1 capsules with seqIds from seq on.
func typesRows(t *testing.T, seq int64, n int) []map[string]any {
	t.Helper()
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = makeCapsule(t, "Types", 1, seq+int64(i), fmt.Sprintf(`{"big": %d, "label": "row %d ☆"}`, seq+int64(i), i))
	}
	return out
}

// TestBatchDuplicates: a batch holding rows already stored and uuids
// twice (with different events: the first in the batch is kept) stores
// each uuid once, and says how many were new, also when its rows take
// several statements and two tables.
func TestBatchDuplicates(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *sql.DB, dl *dialect) {
		ctx := t.Context()
		w := newTestWriter(t, db, testResolver(t), Config{Dialect: dl.name})
		w.maxRows = 7
		stored := typesRows(t, 1000, 20)
		res, err := w.Write(ctx, stored)
		if err != nil {
			t.Fatal(err)
		}
		checkResult(t, "first batch", res, 20, 0, nil)

		// 30 new rows, the 20 stored ones, 5 of the new ones again with
		// another event, and an Edit row twice.
		fresh := typesRows(t, 2000, 30)
		var batch []map[string]any
		for i := range 30 {
			batch = append(batch, fresh[i])
			if i < 20 {
				batch = append(batch, stored[i])
			}
		}
		for i := range 5 {
			batch = append(batch, makeCapsule(t, "Types", 1, 2000+int64(i), `{"big": -1, "label": "second"}`))
		}
		edit := makeCapsule(t, "Edit", 1, 3000, `{"version": 1, "action": "init", "editor": "wikitext", "pageId": 1, "platform": "phone", "user": {"id": 1}}`)
		batch = append(batch, edit, edit)
		res, err = w.Write(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		checkResult(t, "mixed batch", res, 31, 26, nil)
		checkCounts(t, db, dl, map[string]int{"Types_1": 50, "Edit_1": 1})
		for i := range 5 {
			checkRow(t, db, dl, "Types_1", fresh[i]["uuid"].(string), map[string]any{
				"event_big": int64(2000 + i), "event_label": fmt.Sprintf("row %d ☆", i),
			})
		}

		// A retried batch (as after a crash before the commit of the
		// offsets) adds nothing.
		res, err = w.Write(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		checkResult(t, "retried batch", res, 0, 57, nil)
		checkCounts(t, db, dl, map[string]int{"Types_1": 50, "Edit_1": 1})
	})
}

// TestBatchRefusedValueMidStatement: a value the database refuses (a
// CHECK constraint Go knows nothing about) in the middle of a batch of
// several full statements makes that row poison, alone; the others are
// stored, and a retry of the batch finds them as duplicates.
func TestBatchRefusedValueMidStatement(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *sql.DB, dl *dialect) {
		ctx := t.Context()
		w := checkedWriter(t, db, dl)
		w.maxRows = 16
		var batch []map[string]any
		for i := range 50 {
			n := i
			if i == 23 || i == 41 {
				n = 100 + i
			}
			batch = append(batch, makeCapsule(t, "Checked", 1, int64(500+i), fmt.Sprintf(`{"n": %d}`, n)))
		}
		for round, want := range [][2]int{{48, 0}, {0, 48}} {
			r, err := w.Write(ctx, batch)
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, fmt.Sprintf("round %d", round), r, want[0], want[1], []int{23, 41})
			for _, p := range r.Poison {
				if !strings.Contains(p.Reason, "insert into Checked_1") {
					t.Errorf("poison %d: reason %q", p.Index, p.Reason)
				}
			}
		}
		checkCounts(t, db, dl, map[string]int{"Checked_1": 48})
		checkRow(t, db, dl, "Checked_1", batch[24]["uuid"].(string), map[string]any{"event_n": int64(24)})
	})
}

// TestBatchSizes writes batches of sizes around the statement size (and
// its powers of two), each with one row already stored, and checks that
// every row is stored once.
func TestBatchSizes(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *sql.DB, dl *dialect) {
		ctx := t.Context()
		w := newTestWriter(t, db, testResolver(t), Config{Dialect: dl.name})
		w.maxRows = 8
		seq, total := int64(10000), 0
		var last map[string]any
		for _, n := range []int{1, 2, 3, 7, 8, 9, 15, 16, 17, 23, 24, 25, 64} {
			batch := typesRows(t, seq, n)
			seq += int64(n)
			dups := 0
			if last != nil {
				batch = append(batch[:n/2:n/2], append([]map[string]any{last}, batch[n/2:]...)...)
				dups = 1
			}
			res, err := w.Write(ctx, batch)
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, fmt.Sprintf("batch of %d+%d", n, dups), res, n, dups, nil)
			total += n
			last = batch[len(batch)-1]
		}
		checkCounts(t, db, dl, map[string]int{"Types_1": total})
		checkRow(t, db, dl, "Types_1", last["uuid"].(string), map[string]any{"event_big": seq - 1, "event_label": "row 63 ☆"})
	})
}

// TestChunkRows: statements take perStmt rows while that many are left,
// then powers of two, never more than about maxStmtBytes (but at least
// one row), and together all the rows.
func TestChunkRows(t *testing.T) {
	small := []any{"uuid", int64(1), nil}
	big := []any{strings.Repeat("x", maxStmtBytes/3)}
	mk := func(n int, vals []any) []pendingRow {
		rows := make([]pendingRow, n)
		for i := range rows {
			rows[i] = pendingRow{index: i, vals: vals}
		}
		return rows
	}
	tests := []struct {
		rows    []pendingRow
		perStmt int
		want    []int
	}{
		{mk(1, small), 963, []int{1}},
		{mk(1000, small), 963, []int{963, 32, 4, 1}},
		{mk(963, small), 963, []int{963}},
		{mk(962, small), 963, []int{512, 256, 128, 64, 2}},
		{mk(17, small), 8, []int{8, 8, 1}},
		{mk(15, small), 8, []int{8, 4, 2, 1}},
		{mk(7, big), 100, []int{2, 2, 2, 1}},
		{mk(2, []any{strings.Repeat("x", maxStmtBytes+1)}), 100, []int{1, 1}},
	}
	for _, tt := range tests {
		var got []int
		for rows := tt.rows; len(rows) > 0; {
			n := chunkRows(rows, tt.perStmt, maxStmtBytes)
			if n < 1 || n > len(rows) || (n != tt.perStmt && bits.OnesCount(uint(n)) != 1) {
				t.Fatalf("chunkRows(%d rows, %d) = %d", len(rows), tt.perStmt, n)
			}
			got = append(got, n)
			rows = rows[n:]
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%d rows of %d bytes, perStmt %d: chunks %v, want %v", len(tt.rows), rowSize(tt.rows[0].vals), tt.perStmt, got, tt.want)
		}
	}
}

// TestBatchDuplicateOfRefusedValue pins what a row both duplicate and
// refused (its uuid stored, or earlier in the batch, and a value a CHECK
// refuses) counts as. On SQLite and PostgreSQL the uuid decides: such a
// row is a duplicate, skipped before the database looks at its values
// (SQLite's INSERT OR IGNORE, PostgreSQL's COPY of the new uuids only).
// MariaDB checks the row before the duplicate key, so it is poison there.
// Either way the stored row is the first, and the others are stored.
func TestBatchDuplicateOfRefusedValue(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *sql.DB, dl *dialect) {
		ctx := t.Context()
		w := checkedWriter(t, db, dl)
		first := makeCapsule(t, "Checked", 1, 700, `{"n": 1}`)
		if _, err := w.Write(ctx, []map[string]any{first}); err != nil {
			t.Fatal(err)
		}
		batch := []map[string]any{
			makeCapsule(t, "Checked", 1, 700, `{"n": 500}`), // stored uuid, refused value
			makeCapsule(t, "Checked", 1, 701, `{"n": 2}`),
			makeCapsule(t, "Checked", 1, 702, `{"n": 3}`),
			makeCapsule(t, "Checked", 1, 702, `{"n": 600}`), // repeated uuid, refused value
		}
		res, err := w.Write(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		if dl.name == MySQL {
			checkResult(t, "MariaDB", res, 2, 0, []int{0, 3})
		} else {
			checkResult(t, string(dl.name), res, 2, 2, nil)
		}
		checkCounts(t, db, dl, map[string]int{"Checked_1": 3})
		checkRow(t, db, dl, "Checked_1", first["uuid"].(string), map[string]any{"event_n": int64(1)})
		checkRow(t, db, dl, "Checked_1", batch[2]["uuid"].(string), map[string]any{"event_n": int64(3)})
	})
}

// TestBatchConvertedOnTwoCores: a batch large enough for convertRows to
// split keeps every row's poison reason and index in both halves, and
// stores the others once.
func TestBatchConvertedOnTwoCores(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *sql.DB, dl *dialect) {
		ctx := t.Context()
		w := newTestWriter(t, db, testResolver(t), Config{Dialect: dl.name})
		// 2*parallelRows rows in all: the halves split at parallelRows.
		batch := typesRows(t, 5000, 2*parallelRows-2)
		var poison []int
		for _, i := range []int{3, parallelRows - 1, parallelRows, 2*parallelRows - 3} {
			batch[i] = makeCapsule(t, "Types", 1, int64(9000+i), `{"big": 99999999999999999999}`)
			poison = append(poison, i)
		}
		batch = append(batch, batch[7], batch[parallelRows+7]) // repeated
		res, err := w.Write(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		checkResult(t, "two halves", res, 2*parallelRows-6, 2, poison)
		for _, p := range res.Poison {
			if !strings.Contains(p.Reason, "/event/big: 99999999999999999999: out of BIGINT range") {
				t.Errorf("poison %d: %s", p.Index, p.Reason)
			}
		}
		checkCounts(t, db, dl, map[string]int{"Types_1": 2*parallelRows - 6})
		checkRow(t, db, dl, "Types_1", batch[parallelRows+1]["uuid"].(string), map[string]any{"event_big": int64(5000 + parallelRows + 1)})
	})
}
