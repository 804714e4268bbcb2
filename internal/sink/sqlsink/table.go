package sqlsink

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/eventlogging/eventlogging/internal/schema"
)

// Statement size limits: the rows of one INSERT are bounded by the
// dialect's bind-parameter limit, by maxStmtRows and by about
// maxStmtBytes of values (MariaDB's default max_allowed_packet is 16 MiB;
// on MariaDB the dialect's smaller mysqlStmtBytes).
const (
	maxStmtRows  = 1000
	maxStmtBytes = 4 << 20
)

// maxAttempts bounds the tries of a table's transaction that failed on a
// deadlock or serialization conflict, before Write returns the error.
const maxAttempts = 3

// tableState is what a Writer knows about one table.
type tableState struct {
	mu sync.Mutex
	// checked holds the layouts known to fit the table: "" when they do,
	// else why not (the rows are poison).
	checked map[schema.ID]string
	// pgStored is set when the table's last PostgreSQL batch held uuids
	// the table had stored: the next asks for them before its COPY
	// (copyDirect).
	pgStored atomic.Bool
}

func (w *Writer) table(name string) *tableState {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.tables[name]
	if !ok {
		t = &tableState{checked: map[schema.ID]string{}}
		w.tables[name] = t
	}
	return t
}

// forget makes the next write check the table again (after an error that
// may mean it was dropped or altered behind the Writer's back).
func (t *tableState) forget() {
	t.mu.Lock()
	clear(t.checked)
	t.mu.Unlock()
}

// writeTable makes sure the table fits the rows' layouts and inserts them.
func (w *Writer) writeTable(ctx context.Context, table string, rows []pendingRow) (ins, dup int, poison []PoisonRow, err error) {
	t := w.table(table)
	var layouts []*layout
	for _, r := range rows {
		if !slices.Contains(layouts, r.l) {
			layouts = append(layouts, r.l)
		}
	}
	// The lowest revision (or $schema version) defines a new table; later
	// ones add columns.
	slices.SortFunc(layouts, compareLayouts)
	bad, err := w.ensure(ctx, t, table, layouts)
	if err != nil {
		return 0, 0, nil, err
	}
	if len(bad) > 0 {
		kept := rows[:0:0]
		for _, r := range rows {
			if reason, ok := bad[r.l.id]; ok {
				poison = append(poison, PoisonRow{Index: r.index, Reason: reason})
				continue
			}
			kept = append(kept, r)
		}
		rows = kept
	}
	if len(rows) == 0 {
		return 0, 0, poison, nil
	}
	// A fixed lock order: concurrent writers with overlapping batches
	// then queue on a uuid instead of deadlocking. Rows with the same
	// uuid keep their batch order, so the first is the one stored.
	slices.SortFunc(rows, func(a, b pendingRow) int {
		if c := strings.Compare(a.vals[0].(string), b.vals[0].(string)); c != 0 {
			return c
		}
		return a.index - b.index
	})
	for attempt := 1; ; attempt++ {
		ins, err = w.insertAll(ctx, table, rows)
		if err == nil {
			return ins, len(rows) - ins, poison, nil
		}
		if attempt == maxAttempts || !w.d.conflict(err) || ctx.Err() != nil {
			break
		}
		w.log.Debug("insert conflict, retrying", "table", table, "attempt", attempt, "err", err)
	}
	if !w.d.permanent(err) {
		t.forget()
		w.forgetStmts(table)
		return 0, 0, poison, fmt.Errorf("sqlsink: insert into %s: %w", table, err)
	}
	// The database refused a value Go did not catch: find the rows one
	// at a time.
	w.log.Warn("multi-row insert refused, inserting row by row", "table", table, "err", err)
	ins, dup, p, err := w.insertEach(ctx, table, rows)
	if err != nil {
		t.forget()
		w.forgetStmts(table)
	}
	return ins, dup, append(poison, p...), err
}

// errRedo restarts ensure after a layout turned out not to fit, whose
// failed DDL may have aborted the transaction.
var errRedo = errors.New("redo")

// ensure creates the table if needed, adds the columns layouts need that
// it lacks, and checks the types of those it has. It returns the layouts
// that cannot be written to the table, with the reason. Each layout is
// checked once per Writer (again after forget).
func (w *Writer) ensure(ctx context.Context, t *tableState, table string, layouts []*layout) (map[schema.ID]string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		var todo []*layout
		for _, l := range layouts {
			if _, ok := t.checked[l.id]; !ok {
				todo = append(todo, l)
			}
		}
		if len(todo) == 0 {
			break
		}
		var fits []schema.ID
		err := w.d.withDDLLock(ctx, w.db, table, func(ex execer) error {
			fits = fits[:0]
			reason, err := w.ensureLocked(ctx, ex, table, todo, &fits)
			if err != nil {
				return err
			}
			if reason != "" {
				// todo[len(fits)] does not fit; what ran in this
				// transaction may be rolled back, so start over.
				t.checked[todo[len(fits)].id] = reason
				return errRedo
			}
			return nil
		})
		if errors.Is(err, errRedo) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("sqlsink: prepare table %s: %w", table, err)
		}
		for _, id := range fits {
			t.checked[id] = ""
		}
	}
	bad := map[schema.ID]string{}
	for _, l := range layouts {
		if reason := t.checked[l.id]; reason != "" {
			bad[l.id] = reason
		}
	}
	return bad, nil
}

// ensureLocked does ensure's work under the DDL lock. It appends the ids
// of the layouts that fit to fits, and stops at the first that does not,
// returning why.
func (w *Writer) ensureLocked(ctx context.Context, ex execer, table string, todo []*layout, fits *[]schema.ID) (string, error) {
	cols, err := w.d.readColumns(ctx, ex, table)
	if err != nil {
		return "", err
	}
	if len(cols) == 0 || w.d.name != MySQL {
		// Idempotent; on SQLite and PostgreSQL it also restores missing
		// indexes of an existing table.
		for _, stmt := range w.d.createTable(todo[0]) {
			if _, err := ex.ExecContext(ctx, stmt); err != nil {
				if w.d.permanent(err) {
					return fmt.Sprintf("create table %s: %v", table, err), nil
				}
				return "", err
			}
		}
		if len(cols) == 0 {
			w.log.Info("table created", "table", table, "schema", todo[0].id.String())
			if cols, err = w.d.readColumns(ctx, ex, table); err != nil {
				return "", err
			}
		}
	}
	for _, l := range todo {
		var missing []column
		for _, c := range append([]column{{name: idColumn, typ: typeID}}, l.columns...) {
			have, ok := cols[strings.ToLower(c.name)]
			if !ok {
				missing = append(missing, c)
				continue
			}
			if want := typeClass(w.d.sqlType(c.typ)); have != want {
				return fmt.Sprintf("schema %s does not fit table %s: column %s is %s, the schema needs %s",
					l.id, table, c.name, have, want), nil
			}
		}
		for _, c := range missing {
			if c.typ == typeID || c.typ == typeUUID {
				return fmt.Sprintf("table %s has no %s column", table, c.name), nil
			}
			if _, err := ex.ExecContext(ctx, w.d.addColumn(table, c)); err != nil && !w.d.duplicateColumn(err) {
				if w.d.permanent(err) {
					return fmt.Sprintf("add column %s to table %s: %v", c.name, table, err), nil
				}
				return "", err
			}
			cols[strings.ToLower(c.name)] = typeClass(w.d.sqlType(c.typ))
			w.log.Info("column added", "table", table, "column", c.name, "schema", l.id.String())
		}
		*fits = append(*fits, l.id)
	}
	return "", nil
}

// insertAll inserts rows in one transaction and returns how many were
// new: multi-row statements on SQLite and MySQL, COPY on PostgreSQL
// (copyAll).
func (w *Writer) insertAll(ctx context.Context, table string, rows []pendingRow) (int, error) {
	if w.d.name == Postgres {
		return w.copyAll(ctx, table, rows)
	}
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback() }()
	inserted := 0
	for _, same := range byLayout(rows) {
		n, err := w.insertLayout(ctx, tx, table, same[0].l, same)
		inserted += n
		if err != nil {
			return 0, err
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, err
	}
	return inserted, nil
}

// byLayout splits rows by layout, layouts in order of first row, each
// keeping the rows' order.
func byLayout(rows []pendingRow) [][]pendingRow {
	l := rows[0].l
	same := true
	for _, r := range rows {
		if r.l != l {
			same = false
			break
		}
	}
	if same {
		return [][]pendingRow{rows}
	}
	var out [][]pendingRow
	for len(rows) > 0 {
		l := rows[0].l
		var this, rest []pendingRow
		for _, r := range rows {
			if r.l == l {
				this = append(this, r)
			} else {
				rest = append(rest, r)
			}
		}
		out = append(out, this)
		rows = rest
	}
	return out
}

// insertLayout inserts rows of layout l in multi-row statements (SQLite,
// MySQL): as many rows as the limits allow (perStmt: maxRows and the
// dialect's bind parameters; about maxStmtBytes of values), and the
// rest in statements of a power of two rows, so that a table's INSERTs
// have at most a dozen sizes, each prepared once per Writer and reused.
func (w *Writer) insertLayout(ctx context.Context, tx *sql.Tx, table string, l *layout, rows []pendingRow) (int, error) {
	all := rows
	ncols := len(l.columns)
	perStmt := max(1, min(w.maxRows, w.d.maxParams/ncols))
	args := make([]any, 0, min(len(rows), perStmt)*ncols)
	inserted := 0
	for len(rows) > 0 {
		n := chunkRows(rows, perStmt, w.d.maxStmtBytes)
		args = args[:0]
		for _, r := range rows[:n] {
			args = append(args, r.vals...)
		}
		stmt, err := w.stmt(ctx, table, l, n)
		if err != nil {
			return 0, err
		}
		res, err := tx.StmtContext(ctx, stmt).ExecContext(ctx, args...)
		if err != nil {
			return 0, err
		}
		affected, err := res.RowsAffected()
		if err != nil {
			return 0, err
		}
		inserted += int(affected)
		rows = rows[n:]
	}
	if w.d.name == SQLite && inserted < len(all) {
		if err := w.checkIgnored(ctx, tx, table, all, inserted); err != nil {
			return 0, err
		}
	}
	return inserted, nil
}

// distinctUUIDs returns the uuids of rows, which are sorted by uuid, once
// each, in order.
func distinctUUIDs(rows []pendingRow) []string {
	uuids := make([]string, 0, len(rows))
	for _, r := range rows {
		if u := r.vals[0].(string); len(uuids) == 0 || u != uuids[len(uuids)-1] {
			uuids = append(uuids, u)
		}
	}
	return uuids
}

// errIgnoredRow is a permanent error (dialect.permanent): SQLite's INSERT
// OR IGNORE skipped a row whose uuid is not in the table, so some other
// constraint refused it.
var errIgnoredRow = errors.New("a row broke a constraint of the table other than the uuid's (INSERT OR IGNORE skipped it)")

// checkIgnored makes sure every row SQLite's INSERT OR IGNORE skipped
// (rows, sorted by uuid, of which inserted were new) was skipped for its
// uuid: each of the rows' uuids must now be in the table. Otherwise the
// transaction is to be undone (errIgnoredRow), and writeTable inserts the
// rows one at a time with the exact statement, which names the poison.
// Only a batch holding duplicates pays for the query.
func (w *Writer) checkIgnored(ctx context.Context, tx *sql.Tx, table string, rows []pendingRow, inserted int) error {
	uuids := distinctUUIDs(rows)
	if inserted == len(uuids) {
		return nil // every skipped row repeats a uuid of the batch
	}
	want, found := len(uuids), 0
	args := make([]any, 0, min(len(uuids), 1000))
	for len(uuids) > 0 {
		n := min(len(uuids), 1000)
		args = args[:0]
		for _, u := range uuids[:n] {
			args = append(args, u)
		}
		q := "SELECT count(*) FROM " + w.d.quote(table) + " WHERE " + w.d.quote("uuid") + " IN (?" + strings.Repeat(",?", n-1) + ")"
		var c int
		if err := tx.QueryRowContext(ctx, q, args...).Scan(&c); err != nil {
			return err
		}
		found += c
		uuids = uuids[n:]
	}
	if found != want {
		return errIgnoredRow
	}
	return nil
}

// chunkRows returns how many of rows (at least one) the next INSERT
// takes: perStmt when that many are left and hold at most maxBytes,
// else the largest power of two that is left and fits.
func chunkRows(rows []pendingRow, perStmt, maxBytes int) int {
	n := min(len(rows), perStmt)
	size := 0
	for i, r := range rows[:n] {
		size += rowSize(r.vals)
		if i > 0 && size > maxBytes {
			n = i
			break
		}
	}
	if n < perStmt {
		n = 1 << (bits.Len(uint(n)) - 1)
	}
	return n
}

// stmtKey names a prepared multi-row INSERT.
type stmtKey struct {
	table string
	id    schema.ID
	rows  int
}

// stmt returns the prepared INSERT of rows rows of layout l into table.
func (w *Writer) stmt(ctx context.Context, table string, l *layout, rows int) (*sql.Stmt, error) {
	key := stmtKey{table, l.id, rows}
	w.stmtMu.Lock()
	defer w.stmtMu.Unlock()
	if s, ok := w.stmts[key]; ok {
		return s, nil
	}
	s, err := w.db.PrepareContext(ctx, w.d.insertFast(table, l.columns, rows))
	if err != nil {
		return nil, err
	}
	w.stmts[key] = s
	return s, nil
}

// forgetStmts closes the prepared statements of table (after an error
// that may mean it changed).
func (w *Writer) forgetStmts(table string) {
	w.stmtMu.Lock()
	defer w.stmtMu.Unlock()
	for k, s := range w.stmts {
		if k.table == table {
			_ = s.Close()
			delete(w.stmts, k)
		}
	}
}

// rowSize estimates the bytes a row takes in a statement.
func rowSize(vals []any) int {
	size := 0
	for _, v := range vals {
		if s, ok := v.(string); ok {
			size += len(s) + 4
		} else {
			size += 9
		}
	}
	return size
}

// insertEach inserts rows one at a time, each under a savepoint, so that a
// value the database refuses makes only its row poison.
func (w *Writer) insertEach(ctx context.Context, table string, rows []pendingRow) (ins, dup int, poison []PoisonRow, err error) {
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, nil, fmt.Errorf("sqlsink: insert into %s: %w", table, err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, r := range rows {
		if _, err := tx.ExecContext(ctx, "SAVEPOINT row_insert"); err != nil {
			return 0, 0, nil, fmt.Errorf("sqlsink: insert into %s: %w", table, err)
		}
		res, err := tx.ExecContext(ctx, w.d.insert(table, r.l.columns, 1), r.vals...)
		if err != nil {
			if !w.d.permanent(err) {
				return 0, 0, nil, fmt.Errorf("sqlsink: insert into %s: %w", table, err)
			}
			if _, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT row_insert"); err != nil {
				return 0, 0, nil, fmt.Errorf("sqlsink: insert into %s: %w", table, err)
			}
			poison = append(poison, PoisonRow{Index: r.index, Reason: fmt.Sprintf("insert into %s: %v", table, err)})
			continue
		}
		affected, err := res.RowsAffected()
		if err != nil {
			return 0, 0, nil, fmt.Errorf("sqlsink: insert into %s: %w", table, err)
		}
		if affected > 0 {
			ins++
		} else {
			dup++
		}
		if _, err := tx.ExecContext(ctx, "RELEASE SAVEPOINT row_insert"); err != nil {
			return 0, 0, nil, fmt.Errorf("sqlsink: insert into %s: %w", table, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, 0, nil, fmt.Errorf("sqlsink: insert into %s: %w", table, err)
	}
	return ins, dup, poison, nil
}
