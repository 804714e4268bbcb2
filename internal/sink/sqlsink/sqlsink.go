package sqlsink

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/eventlogging/eventlogging/internal/schema"
	"github.com/eventlogging/eventlogging/internal/sink"
)

// sqliteCacheKiB is the page cache of each SQLite connection Open sets.
const sqliteCacheKiB = 16 << 10

// Pool limits set by Open.
const (
	maxOpenConns    = 8
	connMaxLifetime = 30 * time.Minute
	connMaxIdleTime = 5 * time.Minute
)

// Open opens a database for a Writer. It does not connect: the first
// statement does.
//
// SQLite (dsn: a file path or file: URI): WAL journal, busy_timeout 10s,
// synchronous=NORMAL, foreign keys off, write transactions that take
// the lock at BEGIN (_txlock=immediate), temp_store=MEMORY and a 16 MiB
// page cache per connection (_pragma=cache_size(-16384)), each unless the
// DSN sets it; an in-memory database gets one connection, a file four.
//
// MySQL/MariaDB (dsn: go-sql-driver syntax, user:pass@tcp(host:3306)/db):
// placeholders are never interpolated on the client, affected-row counts
// are of changed rows (CLIENT_FOUND_ROWS off, which duplicate counting
// relies on) and, unless the DSN sets sql_mode, the session is strict
// (STRICT_ALL_TABLES), so no value is silently truncated.
//
// PostgreSQL (dsn: a URL or key=value string, as pgx parses it).
//
// MySQL and PostgreSQL pools are limited to 8 open connections, recycled
// after 30 minutes (5 idle).
func Open(dialect Dialect, dsn string) (*sql.DB, error) {
	var db *sql.DB
	switch dialect {
	case SQLite:
		var err error
		db, err = sql.Open("sqlite", sqliteDSN(dsn))
		if err != nil {
			return nil, fmt.Errorf("sqlsink: open sqlite: %w", err)
		}
		conns := 4
		if isMemoryDSN(dsn) {
			// Every connection to :memory: is a database of its own.
			conns = 1
		}
		db.SetMaxOpenConns(conns)
		db.SetMaxIdleConns(conns)
		return db, nil
	case MySQL:
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			return nil, fmt.Errorf("sqlsink: open mysql: %w", err)
		}
		cfg.InterpolateParams = false
		cfg.ClientFoundRows = false
		if cfg.Params == nil {
			cfg.Params = map[string]string{}
		}
		if _, ok := cfg.Params["sql_mode"]; !ok {
			cfg.Params["sql_mode"] = "'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION'"
		}
		connector, err := mysql.NewConnector(cfg)
		if err != nil {
			return nil, fmt.Errorf("sqlsink: open mysql: %w", err)
		}
		db = sql.OpenDB(connector)
	case Postgres:
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			return nil, fmt.Errorf("sqlsink: open postgres: %w", err)
		}
		db = stdlib.OpenDB(*cfg)
	default:
		_, err := newDialect(dialect)
		return nil, err
	}
	db.SetMaxOpenConns(maxOpenConns)
	db.SetMaxIdleConns(maxOpenConns)
	db.SetConnMaxLifetime(connMaxLifetime)
	db.SetConnMaxIdleTime(connMaxIdleTime)
	return db, nil
}

// sqliteDSN adds Open's SQLite settings to dsn, keeping any it sets.
func sqliteDSN(dsn string) string {
	base, query, _ := strings.Cut(dsn, "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		return dsn // let the driver report it
	}
	set := func(key, alias, val string) {
		if !q.Has(key) && (alias == "" || !q.Has(alias)) {
			q.Set(key, val)
		}
	}
	set("_busy_timeout", "_timeout", "10000")
	if !isMemoryDSN(dsn) {
		set("_journal_mode", "_journal", "WAL")
	}
	set("_synchronous", "_sync", "NORMAL")
	set("_foreign_keys", "_fk", "0")
	set("_txlock", "", "immediate")
	// A batch's multi-row INSERTs keep their statement journal in memory
	// instead of a temporary file, and its pages in the cache instead of
	// spilling them to the WAL before the commit (a batch of random uuids
	// dirties a page of the uuid index per row).
	pragma := func(name, val string) {
		for _, p := range q["_pragma"] {
			if strings.HasPrefix(strings.ToLower(strings.TrimSpace(p)), name) {
				return
			}
		}
		q.Add("_pragma", name+"("+val+")")
	}
	pragma("temp_store", "memory")
	pragma("cache_size", strconv.Itoa(-sqliteCacheKiB))
	return base + "?" + q.Encode()
}

func isMemoryDSN(dsn string) bool {
	return dsn == "" || strings.HasPrefix(dsn, ":memory:") || strings.Contains(dsn, "mode=memory") || strings.HasPrefix(dsn, "file::memory:")
}

// Config holds a Writer's settings.
type Config struct {
	// Dialect of the database. Required.
	Dialect Dialect
	// TablePerSchema selects one table per schema, named <Schema>, to
	// which the columns of later revisions are added. The default (false)
	// is one table per schema revision, <Schema>_<revision>.
	TablePerSchema bool
	// Logger receives table creations, added columns and incompatible
	// revisions. Nil: discard.
	Logger *slog.Logger
	// Avro decodes records in the Avro wire format (Event Platform
	// streams with format avro) for Decode. Nil: such records are poison.
	Avro AvroDecoder
}

// Schemas resolves the schema of a capsule or Event Platform event
// (sink.Schemas); a permanent error makes the row poison.
type Schemas = sink.Schemas

// Result reports what Write did with a batch.
type Result struct {
	// Inserted counts new rows.
	Inserted int
	// Duplicates counts rows skipped because their uuid was already in
	// the table (or earlier in the batch).
	Duplicates int
	// Poison lists the rows that can never be written, in batch order.
	Poison []PoisonRow
}

// PoisonRow is a capsule Write will never be able to store.
type PoisonRow struct {
	// Index is the row's position in the batch.
	Index int
	// Reason says why, starting with a JSON pointer into the capsule when
	// one field is at fault.
	Reason string
}

// Writer writes validated event capsules and Event Platform events into
// SQL tables, creating the tables on first use. It is safe for concurrent use, and several Writers
// (in several processes) may share one database. It starts no goroutines;
// Close releases its prepared statements.
type Writer struct {
	db      *sql.DB
	schemas Schemas
	d       *dialect
	cfg     Config
	log     *slog.Logger

	mu      sync.Mutex
	layouts map[schema.ID]*layout
	tables  map[string]*tableState
	// owners maps a table name (lower case) to the schema whose rows it
	// holds, so two Event Platform paths that join to the same name
	// ("/a_b/c/1.0.0", "/a/b_c/1.0.0") are not mixed in one table.
	owners map[string]string

	stmtMu sync.Mutex
	stmts  map[stmtKey]*sql.Stmt
	// stages holds the PostgreSQL staging of each table and layout.
	stages map[stmtKey]*pgStage
	// maxRows bounds the rows of one INSERT statement.
	maxRows int
	// copyFallbacks counts the PostgreSQL batches whose direct COPY
	// failed and which went through the staging table (copyDirect).
	copyFallbacks atomic.Int64
	// copyRetries counts the PostgreSQL COPYs made without asking for
	// stored uuids that failed, and were made again after asking
	// (copyDirect).
	copyRetries atomic.Int64
}

// NewWriter returns a Writer storing capsules in db, a database of
// cfg.Dialect (preferably from Open, whose connection settings the
// duplicate counting and strictness rely on).
func NewWriter(db *sql.DB, schemas Schemas, cfg Config) (*Writer, error) {
	if db == nil {
		return nil, errors.New("sqlsink: nil database")
	}
	if schemas == nil {
		return nil, errors.New("sqlsink: nil Schemas")
	}
	d, err := newDialect(cfg.Dialect)
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Writer{
		db:      db,
		schemas: schemas,
		d:       d,
		cfg:     cfg,
		log:     log.With("component", "sqlsink", "dialect", string(cfg.Dialect)),
		layouts: map[schema.ID]*layout{},
		tables:  map[string]*tableState{},
		owners:  map[string]string{},
		stmts:   map[stmtKey]*sql.Stmt{},
		stages:  map[stmtKey]*pgStage{},
		maxRows: maxStmtRows,
	}, nil
}

// Close releases the Writer's prepared statements (a Write after Close
// prepares them again). It does not close the database.
func (w *Writer) Close() error {
	w.stmtMu.Lock()
	defer w.stmtMu.Unlock()
	var errs []error
	for k, s := range w.stmts {
		errs = append(errs, s.Close())
		delete(w.stmts, k)
	}
	return errors.Join(errs...)
}

// DDL returns the statements that create the table of s with its indexes
// (CREATE TABLE IF NOT EXISTS, then on SQLite and PostgreSQL CREATE INDEX
// IF NOT EXISTS), as Write runs them; none for an Event Platform schema
// whose path cannot name a table.
func (w *Writer) DDL(s *schema.Schema) []string {
	l := w.layout(s)
	if l.table == "" {
		return nil
	}
	return w.d.createTable(l)
}

// Table returns the name of the table rows of schema id are written to.
// For an Event Platform schema, id.Name is its $schema path (as
// schema.Resolver.ResolveURI names it); "" when the path cannot name a
// table.
func (w *Writer) Table(id schema.ID) string {
	return tableName(id, w.cfg.TablePerSchema)
}

// layout returns the (cached) layout of s.
func (w *Writer) layout(s *schema.Schema) *layout {
	w.mu.Lock()
	l, ok := w.layouts[s.ID()]
	w.mu.Unlock()
	if ok {
		return l
	}
	l = buildLayout(s, w.cfg.TablePerSchema)
	w.mu.Lock()
	defer w.mu.Unlock()
	if prev, ok := w.layouts[s.ID()]; ok {
		return prev
	}
	w.layouts[s.ID()] = l
	return l
}

// pendingRow is one converted capsule waiting for its INSERT.
type pendingRow struct {
	index int
	l     *layout
	vals  []any
}

// Write inserts a batch of capsules and Event Platform events: decoded
// JSON objects as the processor produces them (map[string]any, numbers as
// json.Number; a capsule's event under "event", an Event Platform event
// with "$schema" and meta at its root). It groups the rows by table, creates each table on first use
// (and, with TablePerSchema, adds the columns of new revisions) and
// inserts each table's rows in one transaction of multi-row statements.
// A row whose uuid is already stored is skipped and counted as a
// duplicate; the rest of the batch is written.
//
// A row that can never be written is returned in Result.Poison with the
// reason, and the others are written: its schema does not resolve
// (schema.ErrNotFound, ErrInvalidSchema, ErrInvalidID), it is neither an
// EventLogging capsule nor an Event Platform event with a $schema path
// that names a table, meta.id or meta.dt is missing, a value does not fit its column (an integer
// beyond BIGINT, a string longer than a MySQL TEXT, a type that
// contradicts the schema), or its revision is incompatible with the
// table's columns (TablePerSchema).
//
// Any other failure — connection lost, deadlock, lock timeout, ctx ended,
// a transient schema fetch error — is returned as err, and the caller
// should retry the whole batch. Schemas are resolved before anything is
// written, but tables are written one transaction each, so on error some
// tables may hold their rows: a retry counts those as duplicates.
func (w *Writer) Write(ctx context.Context, batch []map[string]any) (Result, error) {
	var res Result
	// Each row's layout first, in batch order (schemas resolve here).
	layouts := make([]*layout, len(batch))
	reasons := make([]string, len(batch))
	seen := map[schema.ID]prepared{}
	cols := 0
	for i, c := range batch {
		l, reason, err := w.prepare(ctx, c, seen)
		if err != nil {
			return res, err
		}
		layouts[i], reasons[i] = l, reason
		if reason == "" {
			cols += len(l.columns)
		}
	}
	// Then the values: the rows' share one allocation, and a large batch
	// is converted on two cores (convertRows).
	slab := make([]any, cols)
	vals := make([][]any, len(batch))
	for i, l := range layouts {
		if reasons[i] == "" {
			n := len(l.columns)
			vals[i], slab = slab[:n:n], slab[n:]
		}
	}
	w.convertRows(batch, layouts, vals, reasons)
	groups := map[string][]pendingRow{}
	var order []string
	for i, l := range layouts {
		if reasons[i] != "" {
			res.Poison = append(res.Poison, PoisonRow{Index: i, Reason: reasons[i]})
			continue
		}
		if _, ok := groups[l.table]; !ok {
			order = append(order, l.table)
		}
		groups[l.table] = append(groups[l.table], pendingRow{index: i, l: l, vals: vals[i]})
	}
	for _, table := range order {
		rows := groups[table]
		ins, dup, poison, err := w.writeTable(ctx, table, rows)
		res.Inserted += ins
		res.Duplicates += dup
		res.Poison = append(res.Poison, poison...)
		if err != nil {
			sortPoison(res.Poison)
			return res, err
		}
	}
	sortPoison(res.Poison)
	return res, nil
}

// parallelRows is the least rows convertRows splits between two
// goroutines.
const parallelRows = 256

// convertRows fills vals[i] with batch[i]'s row in layouts[i], for each
// row without a reason yet, and sets the reason of each that does not
// fit. A large batch is split in two halves converted at the same time:
// converting is a sixth to a fifth of a batch's time, done while the
// database waits.
func (w *Writer) convertRows(batch []map[string]any, layouts []*layout, vals [][]any, reasons []string) {
	convert := func(from, to int) {
		for i := from; i < to; i++ {
			if reasons[i] != "" {
				continue
			}
			if err := layouts[i].rowInto(vals[i], batch[i], w.d); err != nil {
				reasons[i] = err.Error()
			}
		}
	}
	if len(batch) < parallelRows || runtime.GOMAXPROCS(0) < 2 {
		convert(0, len(batch))
		return
	}
	half := len(batch) / 2
	done := make(chan struct{})
	go func() {
		defer close(done)
		convert(half, len(batch))
	}()
	convert(0, half)
	<-done
}

func sortPoison(p []PoisonRow) {
	slices.SortFunc(p, func(a, b PoisonRow) int { return a.Index - b.Index })
}

// prepared is the outcome of resolving one schema id.
type prepared struct {
	l      *layout
	reason string
}

// prepare resolves the layout of capsule c. A poison reason or a
// transient error is returned instead when there is none. seen caches the
// outcomes within a batch.
func (w *Writer) prepare(ctx context.Context, c map[string]any, seen map[schema.ID]prepared) (l *layout, reason string, err error) {
	if c == nil {
		return nil, "not an EventLogging capsule: null", nil
	}
	id, err := capsuleID(c)
	if err != nil {
		return nil, err.Error(), nil
	}
	if p, ok := seen[id]; ok {
		return p.l, p.reason, nil
	}
	var s *schema.Schema
	if isPlatform(id) {
		s, err = w.schemas.ResolveURI(ctx, id.Name)
	} else {
		s, err = w.schemas.Resolve(ctx, id)
	}
	switch {
	case err == nil && isPlatform(id) && s.ID() != id:
		// Not the schema asked for: its layout would name another table.
		reason = fmt.Sprintf("schema %s resolved to %s", id, s.ID())
	case err == nil:
		l = w.layout(s)
		reason = w.claim(l)
		if reason != "" {
			l = nil
		}
	case sink.PermanentSchemaError(err):
		reason = err.Error()
	default:
		return nil, "", fmt.Errorf("sqlsink: resolve %s: %w", id, err)
	}
	seen[id] = prepared{l: l, reason: reason}
	return l, reason, nil
}

// claim records that l's table holds the rows of l's schema (all its
// versions with TablePerSchema) and returns a poison reason when the table
// already holds another schema's and either is an Event Platform schema.
// (Legacy schema names map to table names one to one, up to case, and
// are left as they were.) The check covers what this Writer has written.
func (w *Writer) claim(l *layout) string {
	owner := l.id.String()
	if l.platform {
		owner = l.id.Name
		if w.cfg.TablePerSchema {
			owner = owner[:strings.LastIndexByte(owner, '/')]
		}
	} else if w.cfg.TablePerSchema {
		owner = l.id.Name
	}
	key := strings.ToLower(l.table)
	w.mu.Lock()
	defer w.mu.Unlock()
	prev, ok := w.owners[key]
	if !ok {
		w.owners[key] = owner
		return ""
	}
	if prev == owner || (!l.platform && !strings.HasPrefix(prev, "/")) {
		return ""
	}
	return fmt.Sprintf("schema %s would share table %s with %s", l.id, l.table, prev)
}
