package sqlsink

import (
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/dbtest"
)

// TestPostgresDirectCopy: on PostgreSQL a batch goes straight into the
// table (no staging) when none of its uuids is being written by someone
// else, also when some are stored already or repeated in the batch. The
// first COPY that meets stored uuids is made again without them, and the
// table's batches ask for stored uuids until one holds none.
func TestPostgresDirectCopy(t *testing.T) {
	_, dsn := dbtest.Postgres(t)
	db := openDSN(t, Postgres, dsn)
	ctx := t.Context()
	w := newTestWriter(t, db, testResolver(t), Config{Dialect: Postgres})
	stored := typesRows(t, 1000, 10)
	res, err := w.Write(ctx, stored)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, "first batch", res, 10, 0, nil)
	batch := append(typesRows(t, 2000, 10), stored[3:6]...)
	batch = append(batch, typesRows(t, 2000, 4)...)
	res, err = w.Write(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, "second batch", res, 10, 7, nil)
	all := append(typesRows(t, 1000, 10), typesRows(t, 2000, 10)...)
	res, err = w.Write(ctx, all)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, "all stored", res, 0, 20, nil)
	if !w.table("Types_1").pgStored.Load() {
		t.Error("after a batch of stored uuids: the next batch would not ask for them")
	}
	res, err = w.Write(ctx, typesRows(t, 3000, 5))
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, "new rows", res, 5, 0, nil)
	if w.table("Types_1").pgStored.Load() {
		t.Error("after a batch without stored uuids: the next batch would ask for them")
	}
	res, err = w.Write(ctx, append(typesRows(t, 4000, 5), typesRows(t, 4000, 2)...))
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, "new rows, repeated", res, 5, 2, nil)
	if n := w.copyFallbacks.Load(); n != 0 {
		t.Errorf("%d batches were staged, want none", n)
	}
	if n := w.copyRetries.Load(); n != 1 {
		t.Errorf("%d COPYs met a stored uuid, want 1 (the second batch's)", n)
	}
	checkCounts(t, db, mustDialect(t, Postgres), map[string]int{"Types_1": 30})
}

// TestPostgresCopyRace: another session stores one of a batch's uuids
// and commits while the batch's COPY waits for it. The COPY fails on the
// unique index. Made without asking for stored uuids, it is made again
// without the other session's; made after asking (before the other
// session committed), the batch is staged. Either way every other row is
// stored, the other session's row is kept as it is and counted as a
// duplicate.
func TestPostgresCopyRace(t *testing.T) {
	t.Run("unchecked", func(t *testing.T) { testCopyRace(t, false) })
	t.Run("checked", func(t *testing.T) { testCopyRace(t, true) })
}

func testCopyRace(t *testing.T, checked bool) {
	_, dsn := dbtest.Postgres(t)
	db := openDSN(t, Postgres, dsn)
	ctx := t.Context()
	dl := mustDialect(t, Postgres)
	w := newTestWriter(t, db, testResolver(t), Config{Dialect: Postgres})
	rows := typesRows(t, 1000, 20)
	if _, err := w.Write(ctx, rows[:1]); err != nil { // creates the table
		t.Fatal(err)
	}
	raced := rows[7]["uuid"].(string)
	w.table("Types_1").pgStored.Store(checked)

	other, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Rollback() }()
	if _, err := other.ExecContext(ctx, `INSERT INTO "Types_1" ("uuid", "event_label") VALUES ($1, 'the other session')`, raced); err != nil {
		t.Fatal(err)
	}
	type result struct {
		res Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := w.Write(ctx, rows[1:])
		done <- result{res, err}
	}()
	// Commit once the batch's COPY waits for the other session's row.
	deadline := time.Now().Add(20 * time.Second)
	for waiting := 0; waiting == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the batch never waited for the other session's uuid")
		}
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE 'copy %'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := other.Commit(); err != nil {
		t.Fatal(err)
	}
	var got result
	select {
	case got = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Write did not return")
	}
	if got.err != nil {
		t.Fatal(got.err)
	}
	checkResult(t, "raced batch", got.res, 18, 1, nil)
	wantStaged, wantRetried := int64(0), int64(1)
	if checked {
		wantStaged, wantRetried = 1, 0
	}
	if n := w.copyFallbacks.Load(); n != wantStaged {
		t.Errorf("%d batches staged, want %d", n, wantStaged)
	}
	if n := w.copyRetries.Load(); n != wantRetried {
		t.Errorf("%d COPYs made again without stored uuids, want %d", n, wantRetried)
	}
	checkCounts(t, db, dl, map[string]int{"Types_1": 20})
	checkRow(t, db, dl, "Types_1", raced, map[string]any{"event_label": "the other session"})
	checkRow(t, db, dl, "Types_1", rows[8]["uuid"].(string), map[string]any{"event_label": "row 8 ☆"})
}

func mustDialect(t *testing.T, d Dialect) *dialect {
	t.Helper()
	dl, err := newDialect(d)
	if err != nil {
		t.Fatal(err)
	}
	return dl
}
