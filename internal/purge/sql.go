package purge

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/sink/sqlsink"
)

// SanitisedColumn is the column PurgeSQL adds (BOOLEAN, NULL by default)
// to a table whose schema has an allow-list, set to true on every row it
// sanitises, so no later run touches the row again (a hash is never
// hashed twice). sqlsink never writes it and names no column like it
// (event columns start with "event"), so inserts are unaffected.
const SanitisedColumn = "sanitised"

// Dialects accepted by PurgeSQL, spelled as sqlsink.Dialect.
const (
	DialectSQLite   = string(sqlsink.SQLite)
	DialectMySQL    = string(sqlsink.MySQL)
	DialectPostgres = string(sqlsink.Postgres)
)

// newSQLDialect checks the dialect name given to PurgeSQL.
func newSQLDialect(name string) (sqlsink.Dialect, error) {
	switch name {
	case DialectSQLite, DialectMySQL, DialectPostgres:
		return sqlsink.Dialect(name), nil
	}
	return "", fmt.Errorf("%w: unknown SQL dialect %q (want %q, %q or %q)", ErrPolicy, name, DialectSQLite, DialectMySQL, DialectPostgres)
}

// stmt builds a statement, quoting identifiers (checked with
// sqlsink.Quotable first) and numbering placeholders as sqlsink does for
// the dialect.
type stmt struct {
	d    sqlsink.Dialect
	b    strings.Builder
	args []any
}

func (s *stmt) sql(parts ...string) *stmt {
	for _, p := range parts {
		s.b.WriteString(p)
	}
	return s
}

func (s *stmt) ident(id string) *stmt {
	s.b.WriteString(s.d.Quote(id))
	return s
}

func (s *stmt) arg(v any) *stmt {
	s.args = append(s.args, v)
	s.b.WriteString(s.d.Placeholder(len(s.args)))
	return s
}

func (s *stmt) String() string { return s.b.String() }

// sqlColumn is a column of a table as the catalog reports it.
type sqlColumn struct {
	name string
	text bool // a text type, able to hold a hash
}

// sqlTable is a table written by sqlsink.
type sqlTable struct {
	name string
	cols []sqlColumn
	has  map[string]bool // lower-case column names
}

// PurgeSQL deletes or sanitises the rows older than the retention in every
// table of db written by sqlsink (a table with the columns id, uuid, dt,
// timestamp, schema and revision; other tables are ignored). dialect is
// "sqlite", "mysql" or "postgres", as sqlsink.Dialect.
//
// A row is old when its timestamp column (sqlsink's YYYYMMDDHHMMSS, UTC)
// is before now − Retention, or, when timestamp is NULL, its dt is. The
// schema of a table is read from the schema column of an old row. Without
// a rule for it, old rows are deleted; with one, they are sanitised: every
// column not kept is set to NULL, hashed columns get the HMAC of their
// text, and the SanitisedColumn (added when missing) is set, so later
// runs skip them. Work goes in batches of Policy.BatchRows rows, one
// statement (or one transaction when hashing) each.
//
// An error on one table does not stop the others; the errors are joined.
// Interrupted, PurgeSQL can simply be run again: every batch is complete
// or absent, and finished rows are not touched again.
func PurgeSQL(ctx context.Context, db *sql.DB, dialect string, p Policy) (Report, error) { //nolint:revive // name fixed by the purge issue's API, read as "purge SQL"
	var rep Report
	p, err := p.withDefaults()
	if err != nil {
		return rep, err
	}
	d, err := newSQLDialect(dialect)
	if err != nil {
		return rep, err
	}
	names, err := d.Tables(ctx, db)
	if err != nil {
		return rep, fmt.Errorf("purge: list tables: %w", err)
	}
	pr := &sqlPurge{db: db, d: d, p: &p, rep: &rep, cutoff: p.cutoff(),
		log: p.Logger.With("component", "purge", "dialect", dialect)}
	var errs []error
	for _, name := range names {
		if !sqlsink.Quotable(name) {
			pr.log.Warn("table name skipped", "table", strconv.Quote(name))
			continue
		}
		t, err := readTable(ctx, db, d, name)
		if err != nil {
			errs = append(errs, fmt.Errorf("purge: table %s: %w", name, err))
			continue
		}
		if t == nil {
			continue
		}
		rep.Tables++
		if err := pr.table(ctx, t); err != nil {
			errs = append(errs, fmt.Errorf("purge: table %s: %w", name, err))
			if ctx.Err() != nil {
				break
			}
		}
	}
	return rep, errors.Join(errs...)
}

// readTable returns the columns of table, or nil when it is not a table
// written by sqlsink (sqlsink.IsEventTable).
func readTable(ctx context.Context, db *sql.DB, d sqlsink.Dialect, table string) (*sqlTable, error) {
	cols, err := d.Columns(ctx, db, table)
	if err != nil {
		return nil, err
	}
	t := &sqlTable{name: table, has: map[string]bool{}}
	for _, c := range cols {
		if !sqlsink.Quotable(c.Name) {
			return nil, fmt.Errorf("column name %q cannot be quoted safely", c.Name)
		}
		t.cols = append(t.cols, sqlColumn{name: c.Name, text: c.Text()})
		t.has[strings.ToLower(c.Name)] = true
	}
	if !sqlsink.IsEventTable(cols) {
		return nil, nil
	}
	return t, nil
}

// sqlPurge is one PurgeSQL run.
type sqlPurge struct {
	db     *sql.DB
	d      sqlsink.Dialect
	p      *Policy
	rep    *Report
	cutoff time.Time
	log    *slog.Logger
}

// old appends the predicate selecting old rows.
func (pr *sqlPurge) old(s *stmt) {
	s.sql("(").ident("timestamp").sql(" < ").arg(pr.cutoff.Format(sqlsink.TimestampLayout)).
		sql(" OR (").ident("timestamp").sql(" IS NULL AND ").ident("dt").sql(" < ").
		arg(capsule.FormatDT(pr.cutoff)).sql("))")
}

// table purges one table.
func (pr *sqlPurge) table(ctx context.Context, t *sqlTable) error {
	s := &stmt{d: pr.d}
	s.sql("SELECT ").ident("schema").sql(" FROM ").ident(t.name).sql(" WHERE ")
	pr.old(s)
	s.sql(" LIMIT 1")
	var schemaName sql.NullString
	err := pr.db.QueryRowContext(ctx, s.String(), s.args...).Scan(&schemaName)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // nothing old
	}
	if err != nil {
		return err
	}
	rule, ok := pr.p.Rules[schemaName.String]
	if !ok || !schemaName.Valid {
		return pr.deleteRows(ctx, t, schemaName.String)
	}
	return pr.sanitiseRows(ctx, t, schemaName.String, rule)
}

// deleteRows deletes the old rows of t in batches.
func (pr *sqlPurge) deleteRows(ctx context.Context, t *sqlTable, schemaName string) error {
	if pr.p.DryRun {
		n, err := pr.count(ctx, t, false)
		if err != nil {
			return err
		}
		pr.rep.RowsDeleted += n
		pr.rep.Actions = append(pr.rep.Actions, fmt.Sprintf(
			"sql table %s: delete %d rows older than %s (schema %q has no allow-list)",
			t.name, n, capsule.FormatDT(pr.cutoff), schemaName))
		pr.log.Info("rows to delete", "table", t.name, "schema", schemaName, "rows", n, "dry_run", true)
		return nil
	}
	total := 0
	defer func() {
		pr.rep.RowsDeleted += total
		pr.log.Info("rows deleted", "table", t.name, "schema", schemaName, "rows", total)
	}()
	for {
		s := &stmt{d: pr.d}
		if pr.d == sqlsink.MySQL {
			// MySQL refuses LIMIT in an IN subquery, but has DELETE … LIMIT.
			s.sql("DELETE FROM ").ident(t.name).sql(" WHERE ")
			pr.old(s)
			s.sql(" ORDER BY ").ident("id").sql(" LIMIT ").sql(strconv.Itoa(pr.p.BatchRows))
		} else {
			s.sql("DELETE FROM ").ident(t.name).sql(" WHERE ").ident("id").sql(" IN (SELECT ").
				ident("id").sql(" FROM ").ident(t.name).sql(" WHERE ")
			pr.old(s)
			s.sql(" ORDER BY ").ident("id").sql(" LIMIT ").sql(strconv.Itoa(pr.p.BatchRows)).sql(")")
		}
		res, err := pr.db.ExecContext(ctx, s.String(), s.args...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		total += int(n)
		if n < int64(pr.p.BatchRows) {
			return nil
		}
	}
}

// count counts the old rows of t (only those not yet sanitised when
// unsanitised is set and the table has the SanitisedColumn).
func (pr *sqlPurge) count(ctx context.Context, t *sqlTable, unsanitised bool) (int, error) {
	s := &stmt{d: pr.d}
	s.sql("SELECT COUNT(*) FROM ").ident(t.name).sql(" WHERE ")
	pr.old(s)
	if unsanitised && t.has[SanitisedColumn] {
		s.sql(" AND ").ident(SanitisedColumn).sql(" IS NULL")
	}
	var n int
	err := pr.db.QueryRowContext(ctx, s.String(), s.args...).Scan(&n)
	return n, err
}

// plan is what sanitising does to each column of a table.
type plan struct {
	keep, hash, null []string // column names, in table order
}

// planColumns sorts the columns of t by rule; hash fields whose column
// cannot hold a hash (not text) are dropped, with a warning.
func (pr *sqlPurge) planColumns(t *sqlTable, rule Rule) plan {
	keep := map[string]bool{"id": true, SanitisedColumn: true}
	for _, b := range bookkeeping {
		keep[strings.ToLower(b)] = true
	}
	for _, f := range rule.Keep {
		keep[columnOf(f)] = true
	}
	hash := map[string]bool{}
	for _, f := range rule.Hash {
		hash[columnOf(f)] = true
	}
	var pl plan
	for _, c := range t.cols {
		lc := strings.ToLower(c.name)
		switch {
		case keep[lc]:
			pl.keep = append(pl.keep, c.name)
		case hash[lc] && c.text:
			pl.hash = append(pl.hash, c.name)
		default:
			if hash[lc] {
				pr.log.Warn("column cannot hold a hash, dropped instead", "table", t.name, "column", c.name)
			}
			pl.null = append(pl.null, c.name)
		}
	}
	return pl
}

// columnOf is the lower-case column name sqlsink gives a dotted field.
func columnOf(field string) string {
	return strings.ToLower(sqlsink.FieldColumn(field))
}

// sanitiseRows sanitises the old rows of t not sanitised yet.
func (pr *sqlPurge) sanitiseRows(ctx context.Context, t *sqlTable, schemaName string, rule Rule) error {
	pl := pr.planColumns(t, rule)
	if pr.p.DryRun {
		n, err := pr.count(ctx, t, true)
		if err != nil {
			return err
		}
		pr.rep.RowsSanitised += n
		pr.rep.Actions = append(pr.rep.Actions, fmt.Sprintf(
			"sql table %s: sanitise %d rows older than %s (schema %q): keep %v, hash %v, set NULL %v",
			t.name, n, capsule.FormatDT(pr.cutoff), schemaName, pl.keep, pl.hash, pl.null))
		pr.log.Info("rows to sanitise", "table", t.name, "schema", schemaName, "rows", n, "dry_run", true)
		return nil
	}
	if err := pr.addSanitisedColumn(ctx, t); err != nil {
		return fmt.Errorf("add column %s: %w", SanitisedColumn, err)
	}
	total := 0
	defer func() {
		pr.rep.RowsSanitised += total
		pr.log.Info("rows sanitised", "table", t.name, "schema", schemaName, "rows", total)
	}()
	h := pr.p.hasher()
	var lastID int64
	for {
		n, next, err := pr.sanitiseBatch(ctx, t, pl, lastID, h.Hash)
		total += n
		if err != nil {
			return err
		}
		if next == lastID {
			return nil
		}
		lastID = next
	}
}

// addSanitisedColumn adds SanitisedColumn to t unless it has it.
func (pr *sqlPurge) addSanitisedColumn(ctx context.Context, t *sqlTable) error {
	if t.has[SanitisedColumn] {
		return nil
	}
	s := &stmt{d: pr.d}
	s.sql("ALTER TABLE ").ident(t.name).sql(" ADD COLUMN ").ident(SanitisedColumn).sql(" BOOLEAN")
	if _, err := pr.db.ExecContext(ctx, s.String()); err != nil {
		// Perhaps another purge added it meanwhile.
		again, rerr := readTable(ctx, pr.db, pr.d, t.name)
		if rerr != nil || again == nil || !again.has[SanitisedColumn] {
			return err
		}
	}
	t.has[SanitisedColumn] = true
	pr.log.Info("column added", "table", t.name, "column", SanitisedColumn)
	return nil
}

// sanitiseBatch sanitises up to BatchRows old, unsanitised rows with id >
// after, in one transaction. It returns the rows changed and the highest
// id seen (after when there was none).
func (pr *sqlPurge) sanitiseBatch(ctx context.Context, t *sqlTable, pl plan, after int64, hash func(string) string) (int, int64, error) {
	tx, err := pr.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, after, err
	}
	defer func() { _ = tx.Rollback() }()

	// Select the batch: ids by keyset, so a run reads the table once.
	s := &stmt{d: pr.d}
	s.sql("SELECT ").ident("id")
	for _, c := range pl.hash {
		s.sql(", ").ident(c)
	}
	s.sql(" FROM ").ident(t.name).sql(" WHERE ").ident("id").sql(" > ").arg(after).sql(" AND ")
	pr.old(s)
	s.sql(" AND ").ident(SanitisedColumn).sql(" IS NULL ORDER BY ").ident("id").
		sql(" LIMIT ").sql(strconv.Itoa(pr.p.BatchRows))
	type row struct {
		id   int64
		vals []sql.NullString
	}
	var batch []row
	rows, err := tx.QueryContext(ctx, s.String(), s.args...)
	if err != nil {
		return 0, after, err
	}
	for rows.Next() {
		r := row{vals: make([]sql.NullString, len(pl.hash))}
		dest := []any{&r.id}
		for i := range r.vals {
			dest = append(dest, &r.vals[i])
		}
		if err := rows.Scan(dest...); err != nil {
			_ = rows.Close()
			return 0, after, err
		}
		batch = append(batch, r)
	}
	if err := rows.Err(); err != nil {
		_ = rows.Close()
		return 0, after, err
	}
	_ = rows.Close()
	if len(batch) == 0 {
		return 0, after, nil
	}
	last := batch[len(batch)-1].id

	setNulls := func(s *stmt) {
		for _, c := range pl.null {
			s.ident(c).sql(" = NULL, ")
		}
	}
	n := int64(0)
	if len(pl.hash) == 0 {
		// One statement for the batch.
		u := &stmt{d: pr.d}
		u.sql("UPDATE ").ident(t.name).sql(" SET ")
		setNulls(u)
		u.ident(SanitisedColumn).sql(" = ").arg(true).sql(" WHERE ").ident("id").sql(" IN (")
		for i, r := range batch {
			if i > 0 {
				u.sql(", ")
			}
			u.arg(r.id)
		}
		u.sql(") AND ").ident(SanitisedColumn).sql(" IS NULL")
		res, err := tx.ExecContext(ctx, u.String(), u.args...)
		if err != nil {
			return 0, after, err
		}
		if n, err = res.RowsAffected(); err != nil {
			return 0, after, err
		}
	} else {
		// One prepared statement per row: each hash is computed here.
		u := &stmt{d: pr.d}
		u.sql("UPDATE ").ident(t.name).sql(" SET ")
		setNulls(u)
		for _, c := range pl.hash {
			u.ident(c).sql(" = ").arg(nil).sql(", ")
		}
		u.ident(SanitisedColumn).sql(" = ").arg(true).sql(" WHERE ").ident("id").sql(" = ").arg(nil).
			sql(" AND ").ident(SanitisedColumn).sql(" IS NULL")
		ps, err := tx.PrepareContext(ctx, u.String())
		if err != nil {
			return 0, after, err
		}
		defer func() { _ = ps.Close() }()
		args := make([]any, len(pl.hash)+2)
		for _, r := range batch {
			for i, v := range r.vals {
				if v.Valid {
					args[i] = hash(v.String)
				} else {
					args[i] = nil
				}
			}
			args[len(pl.hash)] = true
			args[len(pl.hash)+1] = r.id
			res, err := ps.ExecContext(ctx, args...)
			if err != nil {
				return 0, after, err
			}
			k, err := res.RowsAffected()
			if err != nil {
				return 0, after, err
			}
			n += k
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, after, err
	}
	return int(n), last, nil
}
