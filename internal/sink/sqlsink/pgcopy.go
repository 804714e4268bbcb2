package sqlsink

import (
	"context"
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

// copyAll inserts rows into table on PostgreSQL in one transaction: each
// layout's rows are copied (COPY, binary) into a temporary staging table
// of the session, emptied at commit, and moved into the table by one
// INSERT … SELECT … ON CONFLICT (uuid) DO NOTHING. It returns how many
// were new. The database must be opened with the pgx driver (Open).
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
