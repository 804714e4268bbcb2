package sqlsink

import (
	"context"
	"database/sql"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The layout of a Writer's tables as other programs read and change them
// (internal/purge): identifiers and bind parameters per dialect, the
// database's catalog, and the columns every table has.

// TimestampLayout is the format (time.Format) of the timestamp column:
// MediaWiki's YYYYMMDDHHMMSS, in UTC, which compares as text in time order.
const TimestampLayout = "20060102150405"

// eventTableColumns are the columns that identify a Writer's table: the
// surrogate key, then the capsule columns naming an event and its age.
var eventTableColumns = []string{idColumn, "uuid", "dt", "timestamp", "schema", "revision"}

// Quote returns id quoted as an identifier of d: backticks on MySQL, double
// quotes elsewhere, the quote character doubled inside. A Writer's names
// never contain NUL, the one character no dialect can quote; check names
// from elsewhere with Quotable.
func (d Dialect) Quote(id string) string {
	if d == MySQL {
		return "`" + strings.ReplaceAll(id, "`", "``") + "`"
	}
	return `"` + strings.ReplaceAll(id, `"`, `""`) + `"`
}

// Quotable reports whether an identifier read from a catalog can be quoted
// safely: valid UTF-8, no NUL, at most 64 bytes (MySQL's limit, one above
// PostgreSQL's and a Writer's).
func Quotable(id string) bool {
	return id != "" && len(id) <= 64 && utf8.ValidString(id) && !strings.ContainsRune(id, 0)
}

// Placeholder returns the n-th bind parameter of a statement (from 1):
// $n on PostgreSQL, ? elsewhere.
func (d Dialect) Placeholder(n int) string {
	if d == Postgres {
		return "$" + strconv.Itoa(n)
	}
	return "?"
}

// Queryer runs queries: a *sql.DB, *sql.Tx or *sql.Conn.
type Queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Column is a column of a table as the database's catalog reports it.
type Column struct {
	Name string
	// Type is the type as the catalog spells it (SQLite: as declared).
	Type string
}

// Text reports whether the column holds text (and so, say, a hash).
func (c Column) Text() bool {
	return typeClass(c.Type) == "text"
}

// IsEventTable reports whether a table with columns cols is one a Writer
// created: it has the columns id, uuid, dt, timestamp, schema and revision
// (in any letter case).
func IsEventTable(cols []Column) bool {
	for _, want := range eventTableColumns {
		if !slices.ContainsFunc(cols, func(c Column) bool { return strings.ToLower(c.Name) == want }) {
			return false
		}
	}
	return true
}

// FieldColumn returns the column name of a capsule field given by its
// dotted path ("wiki", "event.user.id"): the segments joined with "_"
// (event_user_id). That is the name a Writer gives the field's column
// unless it had to alter it — characters outside printable ASCII, more than
// 63 bytes, or a name taken already (ignoring case) get a hash suffix, and
// no path names them.
func FieldColumn(path string) string {
	return strings.ReplaceAll(path, ".", "_")
}

// Tables returns the names of the base tables of the current database
// (PostgreSQL: of the current schema), sorted.
func (d Dialect) Tables(ctx context.Context, q Queryer) ([]string, error) {
	var query string
	switch d {
	case SQLite:
		query = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
	case MySQL:
		query = "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE = 'BASE TABLE'"
	default:
		query = "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
	}
	names, err := queryAll(ctx, q, func(r *sql.Rows, name *string) error { return r.Scan(name) }, query)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

// Columns returns the columns of table in table order; none when the table
// does not exist.
func (d Dialect) Columns(ctx context.Context, q Queryer, table string) ([]Column, error) {
	var query string
	switch d {
	case SQLite:
		query = "SELECT name, type FROM pragma_table_info(?) ORDER BY cid"
	case MySQL:
		query = "SELECT COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION"
	default:
		query = "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position"
	}
	return queryAll(ctx, q, func(r *sql.Rows, c *Column) error { return r.Scan(&c.Name, &c.Type) }, query, table)
}

// queryAll runs a query and returns its rows, each read by scan.
func queryAll[T any](ctx context.Context, q Queryer, scan func(*sql.Rows, *T) error, query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	var out []T
	for rows.Next() {
		var v T
		if err := scan(rows, &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
