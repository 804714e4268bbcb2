package sqlsink

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// stagePrefix starts the names of the PostgreSQL staging tables, and the
// keys under which a session records those it has (PgConn.CustomData).
const stagePrefix = "eventlogging_stage_"

// pgStage is how copyAll moves the rows of one layout into one table.
type pgStage struct {
	// name is the temporary staging table, named after the layout's
	// column names and types, so layouts with the same columns share it.
	name string
	// create makes it in a session that does not have it.
	create string
	// cols are the layout's column names, for COPY.
	cols []string
	// move inserts the staged rows into the table, skipping those whose
	// uuid is already there (or earlier in the batch), as the other
	// dialects' INSERT does.
	move string
	// stored selects which of a list of uuids ($1, text[]) the table
	// already holds, for copyDirect.
	stored string
}

// stage returns (and caches) the staging of layout l's rows into table.
func (w *Writer) stage(table string, l *layout) *pgStage {
	key := stmtKey{table: table, id: l.id}
	w.stmtMu.Lock()
	defer w.stmtMu.Unlock()
	if st, ok := w.stages[key]; ok {
		return st
	}
	sig := make([]string, 0, 2*len(l.columns))
	cols := make([]string, len(l.columns))
	var defs, list strings.Builder
	for i, c := range l.columns {
		typ := stageType(c.typ)
		sig = append(sig, c.name, typ)
		cols[i] = c.name
		if i > 0 {
			defs.WriteString(", ")
			list.WriteByte(',')
		}
		defs.WriteString(w.d.quote(c.name) + " " + typ)
		list.WriteString(w.d.quote(c.name))
	}
	name := stagePrefix + pathHash(sig, "")
	st := &pgStage{
		name: name,
		// Rows last until the transaction ends; the table, for the session.
		create: "CREATE TEMPORARY TABLE IF NOT EXISTS " + w.d.quote(name) + " (" + defs.String() + ") ON COMMIT DELETE ROWS",
		cols:   cols,
		// A temporary table filled by one COPY is read back in the
		// order written: in the order of rows, which writeTable sorted.
		move: "INSERT INTO " + w.d.quote(table) + " (" + list.String() + ") SELECT " + list.String() +
			" FROM " + w.d.quote(name) + " ON CONFLICT (" + w.d.quote("uuid") + ") DO NOTHING",
		stored: "SELECT " + w.d.quote("uuid") + " FROM " + w.d.quote(table) + " WHERE " + w.d.quote("uuid") + " = ANY($1)",
	}
	w.stages[key] = st
	return st
}

// stageType is the staging column type of a column of type t: the
// table's own types, without constraints, and TEXT for VARCHAR.
func stageType(t colType) string {
	switch t {
	case typeInt, typeCapsuleInt:
		return "BIGINT"
	case typeNumber:
		return "DOUBLE PRECISION"
	case typeBool:
		return "BOOLEAN"
	}
	return "TEXT"
}

// copyAll inserts rows into table on PostgreSQL in one transaction and
// returns how many were new. Each layout's rows are copied (COPY, binary)
// straight into the table, without those whose uuid it already holds
// (copyDirect). When that COPY fails (a concurrent writer stored one of
// the uuids first, or the database refuses a value) they are copied
// instead into a temporary staging table of the session, emptied at
// commit, and moved into the table by one INSERT … SELECT … ON CONFLICT
// (uuid) DO NOTHING, which skips exactly the duplicates and otherwise
// fails as before. The database must be opened with the pgx driver
// (Open).
func (w *Writer) copyAll(ctx context.Context, table string, rows []pendingRow) (int, error) {
	conn, err := w.db.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { _ = conn.Close() }()
	inserted := 0
	err = conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("postgres connection from driver %T, want pgx (sqlsink.Open)", dc)
		}
		pc := sc.Conn()
		n, err := w.copyTx(ctx, pc, table, rows)
		if err != nil {
			// A rolled back transaction takes the staging tables it
			// created with it; the session may also have lost them
			// (DISCARD TEMP): make them again next time.
			data := pc.PgConn().CustomData()
			for k := range data {
				if strings.HasPrefix(k, stagePrefix) {
					delete(data, k)
				}
			}
			return err
		}
		inserted = n
		return nil
	})
	return inserted, err
}

// copyTx is copyAll's transaction on the session pc.
func (w *Writer) copyTx(ctx context.Context, pc *pgx.Conn, table string, rows []pendingRow) (int, error) {
	tx, err := pc.Begin(ctx)
	if err != nil {
		return 0, err
	}
	// Never leave the session inside a transaction: database/sql does not
	// know about this one.
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	data := pc.PgConn().CustomData()
	inserted := 0
	for _, same := range byLayout(rows) {
		st := w.stage(table, same[0].l)
		n, ok, err := w.copyDirect(ctx, tx, table, st, same)
		if err != nil {
			return 0, err
		}
		if ok {
			inserted += n
			continue
		}
		if data[st.name] == nil {
			if _, err := tx.Exec(ctx, st.create); err != nil {
				return 0, err
			}
			data[st.name] = true
		}
		src := pgx.CopyFromSlice(len(same), func(i int) ([]any, error) { return same[i].vals, nil })
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{st.name}, st.cols, src); err != nil {
			return 0, err
		}
		tag, err := tx.Exec(ctx, st.move)
		if err != nil {
			return 0, err
		}
		inserted += int(tag.RowsAffected())
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, err
	}
	return inserted, nil
}

// directSavepoint is where copyDirect's transaction goes back to when its
// COPY fails.
const directSavepoint = "eventlogging_direct_copy"

// copyDirect copies the rows of one layout (sorted by uuid, then batch
// order, as writeTable leaves them) straight into table, skipping those
// whose uuid the table already holds and all but the first of a uuid in
// the batch: the rows the staging's INSERT … ON CONFLICT DO NOTHING
// would insert, in the same order, without writing and reading them
// twice.
//
// A table's batches rarely hold stored uuids (only those Kafka delivers
// again after a restart do), so unless the table's last batch met some
// (tableState.pgStored), the rows are first copied without asking which
// uuids are stored: the SELECT of 1,000 uuids took about an eighth of a
// batch's time. Should the unique index refuse one of them, the
// transaction goes back to before the COPY, and the rows are copied again
// without those the table holds (copyChecked); so they are when the
// database refused a value.
//
// ok is false when the COPY failed otherwise: the database refused a
// value, or a concurrent writer committed one of the uuids after the
// check. The transaction is then back where it was, and the caller stages
// the rows, which sorts out either case.
func (w *Writer) copyDirect(ctx context.Context, tx pgx.Tx, table string, st *pgStage, rows []pendingRow) (n int, ok bool, err error) {
	t := w.table(table)
	if t.pgStored.Load() {
		return w.copyChecked(ctx, tx, table, st, rows, t)
	}
	keep := rows
	if repeatsUUID(rows) {
		keep = withoutStored(rows, len(rows), nil)
	}
	copied, err := copySaved(ctx, tx, table, st, keep)
	if !errors.Is(err, errRolledBack) {
		return int(copied), err == nil, err
	}
	// A stored uuid, a value the database refuses, a lock timeout: copy
	// again as before this shortcut, which leaves out the stored uuids (a
	// refused row among them is then a duplicate, as on SQLite) and
	// stages the rows should that COPY fail too. A batch with a refused
	// value thus makes one COPY more than before, on its way to poison.
	w.copyRetries.Add(1)
	w.log.Debug("direct COPY failed, asking which uuids are stored and copying again", "table", table, "rows", len(keep), "err", err)
	return w.copyChecked(ctx, tx, table, st, rows, t)
}

// copyChecked is copyDirect after asking which of the rows' uuids table
// holds; it records in t whether it held any.
func (w *Writer) copyChecked(ctx context.Context, tx pgx.Tx, table string, st *pgStage, rows []pendingRow, t *tableState) (n int, ok bool, err error) {
	uuids := distinctUUIDs(rows)
	stored, err := storedUUIDs(ctx, tx, st.stored, uuids)
	if err != nil {
		return 0, false, err
	}
	t.pgStored.Store(len(stored) > 0)
	keep := rows
	if len(uuids) < len(rows) || len(stored) > 0 {
		keep = withoutStored(rows, len(uuids)-len(stored), stored)
	}
	if len(keep) == 0 {
		return 0, true, nil
	}
	copied, err := copySaved(ctx, tx, table, st, keep)
	if errors.Is(err, errRolledBack) {
		w.copyFallbacks.Add(1)
		w.log.Debug("direct COPY failed, staging the rows", "table", table, "rows", len(keep), "err", err)
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return int(copied), true, nil
}

// repeatsUUID reports whether rows (sorted by uuid) hold a uuid twice.
func repeatsUUID(rows []pendingRow) bool {
	for i := 1; i < len(rows); i++ {
		if rows[i].vals[0].(string) == rows[i-1].vals[0].(string) {
			return true
		}
	}
	return false
}

// withoutStored returns rows (sorted by uuid) without all but the first
// of each uuid and without the uuids in stored; n is a capacity hint.
func withoutStored(rows []pendingRow, n int, stored map[string]bool) []pendingRow {
	keep := make([]pendingRow, 0, n)
	for i, r := range rows {
		u := r.vals[0].(string)
		if (i > 0 && u == rows[i-1].vals[0].(string)) || stored[u] {
			continue
		}
		keep = append(keep, r)
	}
	return keep
}

// errRolledBack wraps the error of a COPY copySaved undid.
var errRolledBack = errors.New("rolled back to the savepoint")

// copySaved copies rows into table under a savepoint. When the COPY
// fails, the transaction goes back to the savepoint and the error wraps
// both errRolledBack and the COPY's error; an error without
// errRolledBack leaves the transaction unusable.
func copySaved(ctx context.Context, tx pgx.Tx, table string, st *pgStage, rows []pendingRow) (int64, error) {
	if _, err := tx.Exec(ctx, "SAVEPOINT "+directSavepoint); err != nil {
		return 0, err
	}
	src := pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) { return rows[i].vals, nil })
	copied, err := tx.CopyFrom(ctx, pgx.Identifier{table}, st.cols, src)
	if err != nil {
		if _, rerr := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT "+directSavepoint+"; RELEASE SAVEPOINT "+directSavepoint); rerr != nil {
			return 0, errors.Join(err, rerr)
		}
		return 0, fmt.Errorf("%w: %w", errRolledBack, err)
	}
	if _, err := tx.Exec(ctx, "RELEASE SAVEPOINT "+directSavepoint); err != nil {
		return 0, err
	}
	return copied, nil
}

// storedUUIDs runs query (pgStage.stored) for uuids and returns those
// found; nil when none is.
func storedUUIDs(ctx context.Context, tx pgx.Tx, query string, uuids []string) (map[string]bool, error) {
	res, err := tx.Query(ctx, query, uuids)
	if err != nil {
		return nil, err
	}
	defer res.Close()
	var stored map[string]bool
	for res.Next() {
		var u string
		if err := res.Scan(&u); err != nil {
			return nil, err
		}
		if stored == nil {
			stored = map[string]bool{}
		}
		stored[u] = true
	}
	return stored, res.Err()
}
