package icebergsink

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	restcat "github.com/apache/iceberg-go/catalog/rest"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	icebergio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // registers the s3:// warehouse IO
	"github.com/apache/iceberg-go/table"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // registers the "sqlite" database/sql driver

	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/sink"
)

// Defaults of the Config fields.
const (
	DefaultNamespace       = "eventlogging"
	DefaultCatalogName     = "eventlogging"
	DefaultCommitInterval  = time.Minute
	DefaultMaxBufferedRows = 200_000
)

// Schemas resolves the schema of an event (sink.Schemas, as for the file
// sink); a transient error fails WriteRecords, which is retried.
type Schemas = sink.Schemas

// AvroDecoder decodes a record in the Avro wire format back to the event
// it encoded (sink.AvroDecoder, as for the file sink).
type AvroDecoder = sink.AvroDecoder

// Config configures a Sink. Zero values take the documented defaults.
type Config struct {
	// Catalog is the URI of the Iceberg catalog; required. The SQL catalog
	// (the tables of the JDBC catalog, shared with PyIceberg's SqlCatalog,
	// Spark and Trino):
	//   - sqlite:///PATH: a SQLite file, SQLAlchemy's spelling (PATH is
	//     relative unless it starts with "/": sqlite:////var/lib/x.db);
	//   - postgresql://user:pass@host:port/db?sslmode=… (or postgres://).
	// The catalog tables (iceberg_tables, iceberg_namespace_properties) are
	// created when missing. Or the REST catalog:
	//   - http(s)://[CLIENT_ID:SECRET@]HOST[:PORT][/PATH][?prefix=P&scope=S&oauth2-server-uri=URL]:
	//     the catalog's base URL (requests go to /PATH/v1/…). Credentials:
	//     the URL's user info, or the environment variable
	//     EVENTLOGGING_ICEBERG_REST_CREDENTIAL, is an OAuth2 client
	//     credential (CLIENT_ID:SECRET or SECRET, exchanged at the catalog's
	//     v1/oauth/tokens or oauth2-server-uri); EVENTLOGGING_ICEBERG_REST_TOKEN
	//     is a bearer token used as is (it wins over a credential). They
	//     are never logged: messages show the URL redacted.
	Catalog string
	// CatalogName is the catalog_name the rows of the catalog tables carry;
	// readers must use the same name (PyIceberg: SqlCatalog("eventlogging",
	// …)). Default "eventlogging". (A REST catalog's name is only the
	// client's.)
	CatalogName string
	// Warehouse is where new tables' data and metadata files go; required.
	// For a REST catalog it is sent as the catalog's "warehouse" (a
	// location or a warehouse name, as the server defines it: where tables
	// go is the server's choice), verbatim except that an s3:// URL's
	// parameters below configure the sink's own S3 IO. Otherwise:
	// a local directory path or a file:// URL, or an S3 bucket,
	// s3://BUCKET/PREFIX?endpoint=URL&region=R&use_path_style=true (the
	// parameters optional, as for the file sink), with credentials from
	// the AWS SDK's default chain (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
	// a profile or a role). A table lives in
	// <warehouse>/<namespace>.db/<table>/{data,metadata}.
	Warehouse string
	// Namespace of the tables; default "eventlogging".
	Namespace string
	// CommitInterval: tables are committed no more often than this (unless
	// MaxBufferedRows rows are waiting), and at least this often while rows
	// are waiting, if Maintain is called; default 1 minute. Each commit is
	// one Iceberg snapshot per table written.
	CommitInterval time.Duration
	// MaxBufferedRows commits before CommitInterval elapsed once this many
	// rows wait in memory; default 200,000. When commits fail, WriteRecords
	// refuses new batches (returns an error) once twice as many are
	// waiting.
	MaxBufferedRows int
	// CompactEvery: Maintain compacts the tables (Compact) after this many
	// commit rounds; default 60 (hourly with the default CommitInterval);
	// negative: never.
	CompactEvery int
	// CompactAfter is Compact's olderThan when Maintain calls it: hour
	// partitions that ended longer ago than this are compacted; default
	// 1 hour.
	CompactAfter time.Duration
	// SnapshotRetention: after each compaction, Maintain expires the
	// snapshots older than this (ExpireSnapshots), keeping the newest
	// SnapshotsKept whatever their age; default 7 days; negative: never.
	SnapshotRetention time.Duration
	// SnapshotsKept is the number of newest snapshots expiry keeps;
	// default 10 (at least 1).
	SnapshotsKept int
	// Schemas resolves event schemas; required to write (PurgeOld,
	// Compact and ExpireSnapshots work without it).
	Schemas Schemas
	// Avro decodes records in the Avro wire format; nil: such records are
	// poison.
	Avro AvroDecoder
	// Logger; default slog.Default().
	Logger *slog.Logger
	// Published, if set, is called after each commit with the rows of a
	// topic it made visible to readers, with the Sink's lock held: it must
	// not call the Sink. For metrics (sink.Metrics.Published("iceberg")).
	Published func(topic string, records int)
	// Now is the clock of CommitInterval; default time.Now.
	Now func() time.Time

	// hook, set by tests, is called at the crash points of a commit
	// (pointWritten, pointCommitted); an error aborts the commit there.
	hook func(point, table string) error
}

// Crash points of a commit (Config.hook).
const (
	pointWritten   = "written"   // a table's data files written, not committed
	pointCommitted = "committed" // a table's snapshot committed, the round not finished
)

// Errors callers branch on.
var (
	// ErrClosed is returned by calls after Close.
	ErrClosed = errors.New("icebergsink: closed")
)

// tp names a Kafka partition.
type tp struct {
	topic     string
	partition int32
}

// partState is the sink's state of one Kafka partition.
type partState struct {
	processed int64         // last offset buffered or reported as poison; -1: none
	pending   []sink.Poison // poison reported but not yet acknowledged
}

// tableState is a table the sink writes, with its buffered rows.
type tableState struct {
	name   string
	source string
	tbl    *table.Table
	rows   []row
	// checked caches compare's verdict per version for the schema id
	// checkedSchema: "" fits, or the reason the version's records are
	// poison.
	checked       map[*version]string
	checkedSchema int
	schemaID      int // tbl's current schema id (Schema() copies the schema)
}

// setTable sets the table's latest metadata.
func (ts *tableState) setTable(tbl *table.Table) {
	ts.tbl = tbl
	ts.schemaID = tbl.Metadata().CurrentSchema().ID
}

// Sink writes Kafka records into Iceberg tables, one per schema (legacy
// EventLogging) or stream (Event Platform), and records the Kafka offsets
// each snapshot covers (see the package documentation). It is a sink.Sink,
// sink.Resumer and sink.Maintainer. Its methods are safe for concurrent
// use; they serialise on one mutex.
type Sink struct {
	cfg      Config
	log      *slog.Logger
	cat      catalog.Catalog
	closeCat func() error // closes cat (and a SQL catalog's database)
	ns       table.Identifier

	mu       sync.Mutex
	versions map[string]*version
	tables   map[string]*tableState
	parts    map[tp]*partState
	// complete are the offsets every table has committed through (or
	// whose records were acknowledged poison), as of the last complete
	// commit round: written into each snapshot (eventlogging.complete).
	complete   map[tp]int64
	buffered   int
	lastCommit time.Time
	closed     bool
	// rounds counts the commit rounds that committed something;
	// compactedAt is rounds when Maintain last compacted.
	rounds, compactedAt int
}

var (
	_ sink.Sink       = (*Sink)(nil)
	_ sink.Resumer    = (*Sink)(nil)
	_ sink.Maintainer = (*Sink)(nil)
)

// openTimeout bounds Open's catalog work.
const openTimeout = 30 * time.Second

// Open connects to the catalog, creating the catalog tables and the
// namespace when missing (within 30 seconds). It starts no goroutine.
func Open(cfg Config) (*Sink, error) {
	if cfg.Catalog == "" {
		return nil, errors.New("icebergsink: Config.Catalog (the catalog URI) is required")
	}
	if cfg.Warehouse == "" {
		return nil, errors.New("icebergsink: Config.Warehouse is required")
	}
	if cfg.Namespace == "" {
		cfg.Namespace = DefaultNamespace
	}
	if cfg.CatalogName == "" {
		cfg.CatalogName = DefaultCatalogName
	}
	if cfg.CommitInterval <= 0 {
		cfg.CommitInterval = DefaultCommitInterval
	}
	if cfg.MaxBufferedRows <= 0 {
		cfg.MaxBufferedRows = DefaultMaxBufferedRows
	}
	if cfg.CompactEvery == 0 {
		cfg.CompactEvery = DefaultCompactEvery
	}
	if cfg.CompactAfter <= 0 {
		cfg.CompactAfter = DefaultCompactAfter
	}
	if cfg.SnapshotRetention == 0 {
		cfg.SnapshotRetention = DefaultSnapshotRetention
	}
	if cfg.SnapshotsKept <= 0 {
		cfg.SnapshotsKept = DefaultSnapshotsKept
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	cat, closeCat, err := openCatalog(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s := &Sink{
		cfg: cfg, log: cfg.Logger.With("component", "icebergsink"), cat: cat, closeCat: closeCat,
		ns:       catalog.ToIdentifier(cfg.Namespace),
		versions: map[string]*version{}, tables: map[string]*tableState{},
		parts: map[tp]*partState{}, complete: map[tp]int64{},
		lastCommit: cfg.Now(),
	}
	if err := cat.CreateNamespace(ctx, s.ns, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		_ = s.closeCatalog()
		return nil, fmt.Errorf("icebergsink: create namespace %s: %w", cfg.Namespace, err)
	}
	return s, nil
}

// openCatalog opens the catalog of cfg.Catalog: the REST catalog for an
// http(s):// URL, the SQL catalog otherwise. The function closes it.
func openCatalog(ctx context.Context, cfg Config) (catalog.Catalog, func() error, error) {
	if isREST(cfg.Catalog) {
		cat, err := openREST(ctx, cfg)
		if err != nil {
			return nil, nil, err
		}
		return cat, cat.Close, nil
	}
	props, err := warehouseProps(cfg.Warehouse)
	if err != nil {
		return nil, nil, err
	}
	db, dialect, err := openCatalogDB(cfg.Catalog)
	if err != nil {
		return nil, nil, err
	}
	cat, err := sqlcat.NewCatalog(cfg.CatalogName, db, dialect, props)
	if err != nil {
		_ = db.Close()
		return nil, nil, fmt.Errorf("icebergsink: open catalog: %w", err)
	}
	return cat, func() error { return errors.Join(cat.Close(), db.Close()) }, nil
}

// The environment variables with a REST catalog's credentials (when its
// URL has no user info).
const (
	// EnvRESTCredential is an OAuth2 client credential, CLIENT_ID:SECRET
	// (or SECRET alone), exchanged for a token at the catalog's
	// v1/oauth/tokens (or the URL's oauth2-server-uri).
	EnvRESTCredential = "EVENTLOGGING_ICEBERG_REST_CREDENTIAL"
	// EnvRESTToken is a bearer token sent as is.
	EnvRESTToken = "EVENTLOGGING_ICEBERG_REST_TOKEN"
)

// isREST reports whether a catalog URI names a REST catalog.
func isREST(uri string) bool {
	return strings.HasPrefix(uri, "http://") || strings.HasPrefix(uri, "https://")
}

// openREST opens the REST catalog at cfg.Catalog: the URL without its user
// info and query is the base URL; the user info (or EnvRESTCredential) is
// the OAuth2 client credential, EnvRESTToken a bearer token; the query's
// prefix, scope and oauth2-server-uri are iceberg-go's options of those
// names. Errors show the URL redacted.
func openREST(ctx context.Context, cfg Config) (*restcat.Catalog, error) {
	shown := redactREST(cfg.Catalog)
	u, err := url.Parse(cfg.Catalog)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("icebergsink: catalog %q: want http(s)://HOST[:PORT][/PATH]", shown)
	}
	var opts []restcat.Option
	q := u.Query()
	for k, vs := range q {
		v := vs[0]
		switch k {
		case "prefix":
			opts = append(opts, restcat.WithPrefix(v))
		case "scope":
			opts = append(opts, restcat.WithScope(v))
		case "oauth2-server-uri":
			au, err := url.Parse(v)
			if err != nil || (au.Scheme != "http" && au.Scheme != "https") || au.Host == "" {
				return nil, fmt.Errorf("icebergsink: catalog %q: oauth2-server-uri: want an http(s) URL", shown)
			}
			opts = append(opts, restcat.WithAuthURI(au))
		default:
			return nil, fmt.Errorf("icebergsink: catalog %q: unknown parameter %q (want prefix, scope, oauth2-server-uri)", shown, k)
		}
	}
	switch {
	case u.User != nil:
		cred := u.User.Username()
		if p, ok := u.User.Password(); ok {
			cred += ":" + p
		}
		opts = append(opts, restcat.WithCredential(cred))
	case os.Getenv(EnvRESTCredential) != "":
		opts = append(opts, restcat.WithCredential(os.Getenv(EnvRESTCredential)))
	}
	if tok := os.Getenv(EnvRESTToken); tok != "" {
		opts = append(opts, restcat.WithOAuthToken(tok))
	}
	props := iceberg.Properties{"warehouse": cfg.Warehouse}
	if strings.HasPrefix(cfg.Warehouse, "s3://") {
		if props, err = warehouseProps(cfg.Warehouse); err != nil {
			return nil, err
		}
	}
	opts = append(opts, restcat.WithWarehouseLocation(props["warehouse"]))
	delete(props, "warehouse")
	if len(props) > 0 {
		opts = append(opts, restcat.WithAdditionalProps(props))
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	cat, err := restcat.NewCatalog(ctx, cfg.CatalogName, u.String(), opts...)
	if err != nil {
		return nil, fmt.Errorf("icebergsink: open REST catalog %s: %w", shown, scrub(err, cfg.Catalog))
	}
	return cat, nil
}

// redactREST is a REST catalog URL as messages show it: the password
// replaced by "xxxxx", or the whole user info when it is a secret alone.
func redactREST(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return "(unparsable URI)"
	}
	if u.User != nil {
		if _, ok := u.User.Password(); !ok {
			u.User = url.User("xxxxx")
		}
	}
	return u.Redacted()
}

// scrub replaces a URI's secret (the password, or a user info without
// one) in an error's text by "xxxxx", should a library have put it there.
func scrub(err error, uri string) error {
	u, perr := url.Parse(uri)
	if perr != nil || u.User == nil {
		return err
	}
	secret, ok := u.User.Password()
	if !ok {
		secret = u.User.Username()
	}
	if secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), secret, "xxxxx"))
}

// openCatalogDB opens the database of a catalog URI.
func openCatalogDB(uri string) (*sql.DB, sqlcat.SupportedDialect, error) {
	switch {
	case strings.HasPrefix(uri, "sqlite:///"):
		path := strings.TrimPrefix(uri, "sqlite:///")
		if path == "" {
			return nil, "", fmt.Errorf("icebergsink: catalog %q: no file", uri)
		}
		dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"
		db, err := sql.Open("sqlite", dsn)
		if err != nil {
			return nil, "", fmt.Errorf("icebergsink: open catalog: %w", err)
		}
		return db, sqlcat.SQLite, nil
	case strings.HasPrefix(uri, "postgresql://"), strings.HasPrefix(uri, "postgres://"):
		db, err := sql.Open("pgx", uri)
		if err != nil {
			return nil, "", fmt.Errorf("icebergsink: open catalog: %w", err)
		}
		return db, sqlcat.Postgres, nil
	}
	return nil, "", fmt.Errorf("icebergsink: catalog %q: want sqlite:///PATH, postgresql://… or http(s)://… (REST)", redact(uri))
}

// redact hides a URI's password.
func redact(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return "(unparsable URI)"
	}
	return u.Redacted()
}

// warehouseProps turns Config.Warehouse into the catalog's properties:
// "warehouse", a file:// URL for a local path; for an
// s3://BUCKET/PREFIX?endpoint=&region=&use_path_style= URL (the file
// sink's spelling) the warehouse without the query, and iceberg-go's S3
// IO properties s3.endpoint, s3.region and s3.force-virtual-addressing.
// Credentials come from the AWS SDK's default chain (AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY, a profile, an instance role), never from the URL.
func warehouseProps(w string) (iceberg.Properties, error) {
	if strings.HasPrefix(w, "file://") {
		return iceberg.Properties{"warehouse": strings.TrimSuffix(w, "/")}, nil
	}
	if strings.HasPrefix(w, "s3://") {
		u, err := url.Parse(w)
		if err != nil || u.Host == "" || u.User != nil {
			return nil, fmt.Errorf("icebergsink: warehouse %q: want s3://BUCKET/PREFIX", redact(w))
		}
		props := iceberg.Properties{}
		q := u.Query()
		for k, vs := range q {
			v := vs[0]
			switch k {
			case "endpoint":
				e, err := url.Parse(v)
				if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" {
					return nil, fmt.Errorf("icebergsink: warehouse %q: endpoint %q: want http(s)://HOST[:PORT]", redact(w), v)
				}
				props[icebergio.S3EndpointURL] = v
			case "region":
				props[icebergio.S3Region] = v
			case "use_path_style":
				b, err := strconv.ParseBool(v)
				if err != nil {
					return nil, fmt.Errorf("icebergsink: warehouse %q: use_path_style=%q: want true or false", redact(w), v)
				}
				props[icebergio.S3ForceVirtualAddressing] = strconv.FormatBool(!b)
			default:
				return nil, fmt.Errorf("icebergsink: warehouse %q: unknown parameter %q (want endpoint, region, use_path_style)", redact(w), k)
			}
		}
		u.RawQuery = ""
		props["warehouse"] = strings.TrimSuffix(u.String(), "/")
		return props, nil
	}
	if strings.Contains(w, "://") {
		return nil, fmt.Errorf("icebergsink: warehouse %q: want a local path, a file:// or an s3:// URL", redact(w))
	}
	abs, err := filepath.Abs(w)
	if err != nil {
		return nil, fmt.Errorf("icebergsink: warehouse: %w", err)
	}
	return iceberg.Properties{"warehouse": "file://" + filepath.ToSlash(abs)}, nil
}

// WriteRecords buffers the batch's rows per table and commits the tables
// when CommitInterval elapsed or MaxBufferedRows rows wait (before
// buffering the batch). Records at or below an offset already buffered
// are skipped, so retrying a batch is safe.
//
// A nil error does not mean the rows are committed: the Sink is a
// sink.Resumer, and StartOffsets — from the tables' snapshots — decides
// where consumption resumes, so the group's committed offsets may run
// ahead of the tables. Records that can never be stored are returned as
// poison; the next call (or StartOffsets) acknowledges them, and no
// snapshot claims their offsets before that. ctx bounds schema lookups,
// table creation, schema updates and the commit.
func (s *Sink) WriteRecords(ctx context.Context, batch []kafka.Record) ([]sink.Poison, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	s.acknowledge(batch)
	if s.due() {
		if err := s.commitRound(ctx); err != nil {
			s.log.Warn("iceberg commit failed; rows stay buffered", "err", err, "rows", s.buffered)
			if s.buffered >= 2*s.cfg.MaxBufferedRows {
				return nil, fmt.Errorf("icebergsink: %d rows wait for a commit that fails: %w", s.buffered, err)
			}
		}
	}

	// Plan: decode and convert without changing the buffers, so a
	// transient error leaves the sink as it was.
	type planned struct {
		r      *kafka.Record
		ts     *tableState
		values map[string]any
		reason string
	}
	var poison []sink.Poison
	plan := make([]planned, 0, len(batch))
	for i := range batch {
		r := &batch[i]
		st := s.part(tp{r.Topic, r.Partition})
		if r.Offset <= st.processed {
			if p, ok := st.pendingAt(r.Offset); ok {
				poison = append(poison, p)
			}
			continue
		}
		v, values, reason, err := s.place(ctx, r)
		if err != nil {
			return nil, err
		}
		pl := planned{r: r, values: values, reason: reason}
		if reason == "" {
			ts, reason, err := s.tableFor(ctx, v)
			if err != nil {
				return nil, err
			}
			pl.ts, pl.reason = ts, reason
		}
		plan = append(plan, pl)
	}
	for _, pl := range plan {
		key := tp{pl.r.Topic, pl.r.Partition}
		st := s.parts[key]
		st.processed = pl.r.Offset
		if pl.reason != "" {
			p := sink.Poison{Record: *pl.r, Reason: pl.reason}
			st.pending = append(st.pending, p)
			poison = append(poison, p)
			continue
		}
		pl.ts.rows = append(pl.ts.rows, row{tp: key, offset: pl.r.Offset, topic: pl.r.Topic, values: pl.values})
		s.buffered++
	}
	return poison, nil
}

// due reports whether the buffered rows should be committed now.
func (s *Sink) due() bool {
	if s.buffered == 0 {
		return false
	}
	return s.buffered >= s.cfg.MaxBufferedRows || !s.cfg.Now().Before(s.lastCommit.Add(s.cfg.CommitInterval))
}

// MaintainInterval is how often sink.Run calls Maintain: a tenth of
// CommitInterval (at least a second, at most sink.DefaultMaintainEvery), so
// that a row is visible at most about one CommitInterval after it was
// buffered, plus the commit's own time. (Maintain every minute made rows
// wait up to two intervals: the commit came due just after a tick.)
func (s *Sink) MaintainInterval() time.Duration {
	return max(time.Second, min(sink.DefaultMaintainEvery, s.cfg.CommitInterval/10))
}

// Maintain commits the buffered rows when CommitInterval elapsed, so a
// quiet topic's rows become visible without waiting for the next batch,
// and every Config.CompactEvery commit rounds compacts the tables' hours
// that ended more than Config.CompactAfter ago (Compact), then expires the
// snapshots older than Config.SnapshotRetention (ExpireSnapshots), without holding
// up WriteRecords meanwhile. sink.Run calls it on a timer.
func (s *Sink) Maintain(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	var err error
	if s.due() {
		err = s.commitRound(ctx)
	}
	compact := s.cfg.CompactEvery > 0 && s.rounds-s.compactedAt >= s.cfg.CompactEvery
	if compact {
		s.compactedAt = s.rounds
	}
	s.mu.Unlock()
	if err != nil || !compact {
		return err
	}
	if _, err = s.Compact(ctx, s.cfg.CompactAfter); err != nil {
		return err
	}
	if s.cfg.SnapshotRetention < 0 {
		return nil
	}
	return s.ExpireSnapshots(ctx, s.cfg.SnapshotsKept, s.cfg.SnapshotRetention)
}

// Flush commits every buffered row now, whatever CommitInterval says.
func (s *Sink) Flush(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return s.commitRound(ctx)
}

// closeTimeout bounds the last commit of Close.
const closeTimeout = 30 * time.Second

// Close commits the buffered rows and closes the catalog. A poison record
// not acknowledged yet (the runner's last batch failed) is not claimed by
// the snapshots: consumption resumes at it after the restart. Close is
// idempotent.
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	err := s.commitRound(ctx)
	if err != nil {
		s.log.Warn("iceberg commit at close failed; the rows are consumed again after the restart", "err", err, "rows", s.buffered)
	}
	return errors.Join(err, s.closeCatalog())
}

func (s *Sink) closeCatalog() error {
	return s.closeCat()
}

// StartOffsets commits the buffered rows, then returns, for each assigned
// partition, the offset after the highest one the tables' snapshots say is
// complete (every record at or below it is in its table or was
// acknowledged poison), or 0 for a partition no snapshot mentions. The
// group's committed offsets are never used. An error (the catalog cannot
// be read) stops sink.Run rather than resuming elsewhere.
func (s *Sink) StartOffsets(ctx context.Context, assigned map[string][]int32) (map[string]map[int32]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	// Between batches every poison record has been handled.
	for _, st := range s.parts {
		st.pending = nil
	}
	if err := s.commitRound(ctx); err != nil {
		// The rows stay buffered and are committed later; the commit
		// drops those another sink committed meanwhile.
		s.log.Warn("iceberg commit before resuming failed; rows stay buffered", "err", err, "rows", s.buffered)
	}
	complete, err := s.tableOffsets(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[int32]int64, len(assigned))
	for topic, ps := range assigned {
		out[topic] = make(map[int32]int64, len(ps))
		for _, p := range ps {
			key := tp{topic, p}
			start := int64(0)
			if off, ok := complete[key]; ok {
				start = off + 1
			}
			st := s.part(key)
			st.processed = max(st.processed, start-1)
			out[topic][p] = start
		}
	}
	return out, nil
}

// tableOffsets reads every table of the namespace and returns, per Kafka
// partition, the highest complete offset any of them records.
func (s *Sink) tableOffsets(ctx context.Context) (map[tp]int64, error) {
	out := map[tp]int64{}
	for ident, err := range s.cat.ListTables(ctx, s.ns) {
		if err != nil {
			return nil, fmt.Errorf("icebergsink: list tables: %w", err)
		}
		tbl, err := s.cat.LoadTable(ctx, ident)
		if err != nil {
			return nil, fmt.Errorf("icebergsink: load table %s: %w", strings.Join(ident, "."), err)
		}
		offs, err := snapshotOffsets(tbl.Metadata())
		if err != nil {
			return nil, fmt.Errorf("icebergsink: table %s: %w", strings.Join(ident, "."), err)
		}
		mergeMax(out, offs.complete)
	}
	return out, nil
}

// tableFor returns the table of a version, creating it (or evolving its
// schema) when needed. A reason means the version's records can never be
// stored in it.
func (s *Sink) tableFor(ctx context.Context, v *version) (*tableState, string, error) {
	ts, ok := s.tables[v.table]
	if !ok {
		var err error
		ts, err = s.loadOrCreate(ctx, v)
		if err != nil {
			return nil, "", err
		}
		s.tables[v.table] = ts
	}
	if ts.source != v.source {
		return nil, fmt.Sprintf("table %s.%s holds %s, not %s", s.cfg.Namespace, v.table, ts.source, v.source), nil
	}
	if ts.checked == nil || ts.checkedSchema != ts.schemaID {
		ts.checked, ts.checkedSchema = map[*version]string{}, ts.schemaID
	}
	if reason, ok := ts.checked[v]; ok {
		return ts, reason, nil
	}
	adds, reason := compare(ts.tbl.Schema(), v.root)
	if reason == "" && len(adds) > 0 {
		var err error
		reason, err = s.evolve(ctx, ts, v)
		if err != nil {
			return nil, "", err
		}
	}
	if reason != "" {
		reason = fmt.Sprintf("schema %s: table %s.%s: %s", v.key, s.cfg.Namespace, v.table, reason)
	}
	ts.checked[v] = reason
	return ts, reason, nil
}

// Table properties the sink sets.
const (
	propSource = "eventlogging.source" // "schema:Name" or "stream:name"
)

// loadOrCreate loads a version's table, creating it when missing: its
// schema is the version's, partitioned by hour(dt).
func (s *Sink) loadOrCreate(ctx context.Context, v *version) (*tableState, error) {
	ident := append(slices.Clone(s.ns), v.table)
	tbl, err := s.cat.LoadTable(ctx, ident)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		sc := v.root.icebergSchema()
		spec, serr := iceberg.NewPartitionSpecOpts(iceberg.AddPartitionFieldByName("dt", "dt_hour", iceberg.HourTransform{}, sc, nil))
		if serr != nil {
			return nil, fmt.Errorf("icebergsink: partition spec: %w", serr)
		}
		tbl, err = s.cat.CreateTable(ctx, ident, sc, catalog.WithPartitionSpec(&spec),
			catalog.WithProperties(iceberg.Properties{propSource: v.source, "format-version": "2"}))
		if errors.Is(err, catalog.ErrTableAlreadyExists) {
			tbl, err = s.cat.LoadTable(ctx, ident) // another sink created it
		} else if err == nil {
			s.log.Info("created iceberg table", "table", strings.Join(ident, "."), "source", v.source)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("icebergsink: table %s: %w", strings.Join(ident, "."), err)
	}
	source := tbl.Properties()[propSource]
	if source == "" {
		source = v.source // created by someone else: adopt it
	}
	ts := &tableState{name: v.table, source: source}
	ts.setTable(tbl)
	return ts, nil
}

// evolve adds the columns a version declares and the table lacks, by an
// Iceberg schema update, refreshing and checking again when another writer
// changed the schema meanwhile. A reason means a column conflicts.
func (s *Sink) evolve(ctx context.Context, ts *tableState, v *version) (string, error) {
	for attempt := 0; ; attempt++ {
		adds, reason := compare(ts.tbl.Schema(), v.root)
		if reason != "" || len(adds) == 0 {
			return reason, nil
		}
		txn := ts.tbl.NewTransaction()
		upd := txn.UpdateSchema(true, false)
		for _, a := range adds {
			next := 0
			upd.AddColumn(a.path, a.f.icebergType(&next), "", false, nil)
		}
		err := upd.Commit()
		if err == nil {
			var tbl *table.Table
			tbl, err = txn.Commit(ctx)
			if err == nil {
				ts.setTable(tbl)
				names := make([]string, len(adds))
				for i, a := range adds {
					names[i] = strings.Join(a.path, ".")
				}
				s.log.Info("added iceberg columns", "table", ts.name, "schema", v.key, "columns", names)
				return "", nil
			}
		}
		if !isConflict(err) || attempt >= maxCommitAttempts {
			return "", fmt.Errorf("icebergsink: table %s: add columns: %w", ts.name, err)
		}
		if err := ts.tbl.Refresh(ctx); err != nil {
			return "", fmt.Errorf("icebergsink: table %s: refresh: %w", ts.name, err)
		}
	}
}

// part returns the state of a partition, creating it when new.
func (s *Sink) part(key tp) *partState {
	st, ok := s.parts[key]
	if !ok {
		st = &partState{processed: -1}
		s.parts[key] = st
	}
	return st
}

// acknowledge clears the poison reported by the previous call: the caller
// handled it, unless this batch retries the records that carried it.
func (s *Sink) acknowledge(batch []kafka.Record) {
	retried := map[tp]bool{}
	for i := range batch {
		r := &batch[i]
		if st, ok := s.parts[tp{r.Topic, r.Partition}]; ok && len(st.pending) > 0 && r.Offset <= st.processed {
			retried[tp{r.Topic, r.Partition}] = true
		}
	}
	for key, st := range s.parts {
		if len(st.pending) > 0 && !retried[key] {
			st.pending = nil
		}
	}
}

// pendingAt returns the unacknowledged poison record at offset off.
func (st *partState) pendingAt(off int64) (sink.Poison, bool) {
	for _, p := range st.pending {
		if p.Record.Offset == off {
			return p, true
		}
	}
	return sink.Poison{}, false
}

// sortedTables returns the tables with buffered rows, by name.
func (s *Sink) sortedTables() []*tableState {
	var out []*tableState
	for _, ts := range s.tables {
		if len(ts.rows) > 0 {
			out = append(out, ts)
		}
	}
	slices.SortFunc(out, func(a, b *tableState) int { return cmp.Compare(a.name, b.name) })
	return out
}
