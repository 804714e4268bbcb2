package sqlsink

import (
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/dbtest"
)

// TestPostgresDirectCopy: on PostgreSQL a batch goes straight into the
// table (no staging) when none of its uuids is being written by someone
// else, also when some are stored already or repeated in the batch.
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
	if n := w.copyFallbacks.Load(); n != 0 {
		t.Errorf("%d batches were staged, want none", n)
	}
	checkCounts(t, db, mustDialect(t, Postgres), map[string]int{"Types_1": 20})
}

// TestPostgresCopyRace: another session stores one of a batch's uuids
// after the batch looked for stored uuids and commits while the batch's
// COPY waits for it. The COPY fails on the unique index; the batch is
// then staged, and stores every other row, keeps the other session's row
// as it is, and counts it as a duplicate.
func TestPostgresCopyRace(t *testing.T) {
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
	if n := w.copyFallbacks.Load(); n != 1 {
		t.Errorf("%d batches staged, want 1", n)
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
