// Package icebergsink writes Kafka topics of events into Apache Iceberg
// tables — one per schema or stream — that PyIceberg, Spark, Trino and
// DuckDB read as soon as a commit lands, and resumes from the tables' own
// snapshots so that no record is appended twice, even across kill -9.
//
// docs/iceberg.md is the guide for people running the binary (settings,
// a walkthrough, querying, retention); this comment is how the package
// works. It uses the Apache Iceberg Go library (github.com/apache/iceberg-go
// v0.7.0).
//
// # Tables
//
// The catalog is Iceberg's SQL catalog (the JDBC catalog's tables
// iceberg_tables and iceberg_namespace_properties) on SQLite or PostgreSQL,
// reached through iceberg-go's catalog/sql, or a REST catalog (an
// http(s):// URL, iceberg-go's catalog/rest; credentials from the URL's
// user info or the environment, never logged). Tables live in
// Config.Namespace ("eventlogging"):
//
//   - a legacy EventLogging capsule ("schema", "revision", "event") goes to
//     the table named after its schema (eventlogging.NavigationTiming): the
//     capsule fields are top-level columns, "event" a struct;
//   - an Event Platform event ("$schema", "meta.stream") goes to the table
//     named after its stream, through TableName ("mediawiki.page-create" →
//     mediawiki_page_create): the schema's fields are the columns; the
//     event's own "dt" (the client's time) is stored as client_dt.
//
// Every table has a column dt (timestamptz), the receive time — the
// capsule's dt or the event's meta.dt, the Kafka timestamp when neither
// parses — and is partitioned by hour(dt) (hidden partitioning: readers
// filter on dt). Columns follow the registry's JSON Schema with the file
// sink's Parquet rules (both classify nodes with internal/sink/columns):
// string → string, integer → long, number → double, boolean → boolean, an
// object with properties → a struct, anything else (arrays, free-form
// objects, type unions) → its JSON text in a string column. Every column
// is optional; members a schema does not declare are not stored.
//
// A new revision that adds fields adds optional columns to the same table
// (an Iceberg schema update, also inside structs; older rows read null). A
// revision that changes a column's type cannot be stored in the table: its
// records are poison ("incompatible with table column x: long vs string").
// The table property eventlogging.source ("schema:Name", "stream:name")
// tells apart two sources whose names sanitise to one table name; the
// second one's records are poison.
//
// # Catalogs and object stores
//
// sqlite:///PATH opens the file in WAL mode with a 10 s busy timeout and
// synchronous=FULL, so readers and several sinks share it on one machine.
// The SQL catalog checks each commit's requirements against the row it
// updates; a commit that lost the race fails with table.ErrCommitFailed.
//
// An s3:// warehouse goes through iceberg-go's S3 IO (io/gocloud/s3, on the
// AWS SDK v2): the URL's endpoint becomes s3.endpoint, region s3.region,
// use_path_style=true s3.force-virtual-addressing=false (path style is
// also iceberg-go's default whenever an endpoint is given). Credentials
// come from the AWS SDK's default chain. Tested against the test S3 store
// (versitygw), PyIceberg reading back through its own S3 client.
//
// A REST catalog owns the catalog: it decides where tables go (their
// location comes back in its responses), writes their metadata files and
// checks each commit's requirements; the sink writes the data and manifest
// files. Config.Warehouse is sent as the catalog's "warehouse" (the
// /v1/config request's parameter) verbatim, except an s3:// URL, whose
// endpoint, region and use_path_style become the sink's S3 IO properties
// instead of being sent. The user info is an OAuth2 client credential
// (client-credentials grant at the token endpoint) and is not part of the
// URL handed to iceberg-go; messages and errors show the URL redacted
// (redactREST, scrub). A commit whose requirements fail (another writer
// committed first) is answered HTTP 409 CommitFailedException, which
// iceberg-go turns into table.ErrCommitFailed: the sink retries on the
// reloaded table exactly as with the SQL catalog. A 5xx
// (CommitStateUnknown) fails the commit; the next attempt reloads and drops
// whatever the server did commit.
//
// # Exactly once
//
// WriteRecords converts and buffers rows per table. A commit round — when
// Config.CommitInterval has passed (on the next WriteRecords or Maintain;
// sink.Run calls Maintain every MaintainInterval, a tenth of the interval,
// at least a second, so rows wait about one interval), when
// Config.MaxBufferedRows rows wait, on StartOffsets and on Close — writes
// each table's rows as Parquet data files and appends them in one snapshot
// per table. Each snapshot's summary records, per Kafka topic and
// partition (cumulative over the table's history, as JSON
// {"topic": {"partition": offset}}):
//
//   - eventlogging.offsets (PropOffsets): every record of the partition up
//     to this offset that belongs in this table is in it;
//   - eventlogging.complete (PropComplete): every record of the partition
//     up to this offset is in its table, or was acknowledged as poison
//     (sent to the sink-error topic). The last table of a round records the
//     round's offsets; earlier ones the previous round's.
//
// StartOffsets resumes each partition after the highest complete offset of
// any table (0 when none mentions it), never from the group's committed
// offsets, which run ahead: the runner lets Kafka commit a batch as soon as
// it is buffered. Each commit attempt reloads the table and drops the
// buffered rows whose offsets the table's eventlogging.offsets already
// covers. So, as long as only this sink writes the tables'
// eventlogging.* snapshot properties, every record of a partition is
// stored once in its table:
//
//   - a crash before a commit loses only buffered rows, which are consumed
//     again;
//   - a crash after an Iceberg commit but before the Kafka commit, or
//     between two tables' commits of one round, consumes records again and
//     drops those already stored;
//   - a commit that conflicts with another writer's (another member of the
//     consumer group, a compaction) is retried on the refreshed table with
//     the same drop, so a partition that moved to another member while this
//     one still held rows of it is stored once, by whichever commits first;
//   - a record that can never be stored (not JSON, no usable schema, a value
//     that does not fit its column, an incompatible revision) is returned
//     by WriteRecords as poison, and no snapshot claims it complete before
//     the caller acknowledged it (by calling again): after a crash it is
//     delivered again, and may reach the sink-error topic twice (at least
//     once there).
//
// What it does not mean: rows are visible only after a commit; if another
// tool rewrites a table without keeping the snapshot properties, the sink
// walks back to the latest snapshot that has them.
//
// Do not set the table property commit.retry.num-retries: with it,
// iceberg-go retries a conflicting commit by replaying the snapshot —
// summary properties computed against the older table — on top of the
// other writer's, which would move the offsets back and store rows twice
// after the next restart. The sink refuses to commit to (or maintain) a
// table that has it, with an error naming the property, and retries
// conflicts itself on the reloaded table.
//
// # Maintenance and retention
//
// Every maintenance operation is one snapshot per table that carries the
// eventlogging.offsets and eventlogging.complete of the snapshot it follows
// (so the newest snapshot always has them, whatever expires), and retries
// on the reloaded table when another writer committed first. All are safe
// while the sink writes, from the sink's process or another one.
//
//   - Compact(ctx, olderThan) rewrites each hour partition that ended more
//     than olderThan ago and has more than one data file into one file
//     (more only past the table's write.target-file-size-bytes, 512 MiB by
//     default), in one replace snapshot per table (iceberg-go's
//     RewriteFiles, built from table.ExecuteCompactionGroup): readers see
//     the old files or the new ones, never both. An hour already in one
//     file is left alone, so a second run does nothing. Maintain runs it
//     every Config.CompactEvery commit rounds (default 60) for the hours
//     that ended more than Config.CompactAfter (default 1 hour) ago, outside
//     the sink's lock, so writes go on meanwhile.
//   - ExpireSnapshots(ctx, keep, olderThan) expires old snapshots in every
//     table (keeping at least the newest) and deletes the files only they
//     referenced, including those compaction and purges replaced. Maintain
//     runs it after each compaction with Config.SnapshotRetention (default
//     7 days) and Config.SnapshotsKept (default 10)
//     (TestMaintainExpiresSnapshots).
//   - PurgeOld(ctx, before, rules) applies a retention policy to the hours
//     received before before (truncated to the hour: whole partitions).
//     For a table rules gives no Sanitiser (nil rules: every table; Purge
//     is this), the old hours are deleted in one delete snapshot. For a
//     table with one, the old hours' data files are rewritten with the
//     sanitised rows and swapped in by one overwrite snapshot
//     (ReplaceDataFilesWithDataFiles). The Sanitiser gets each row as a
//     capsule (top-level columns, "event" a map; values string, int64,
//     float64, bool, time.Time) and returns what may stay; a value that no
//     longer fits its column (a hash of a number) is stored as null, as in
//     the file and SQL purges; dt always stays. Sanitised rows get
//     ColumnSanitised = true, a boolean column the first purge adds (null
//     in every other row): it makes a rerun skip what is done — hashing is
//     not idempotent — and shows readers which rows were sanitised. A rerun
//     rewrites only files holding rows not sanitised yet (a late row, a
//     run that failed); when there are none it commits nothing. A table's
//     unsanitised old rows are held in memory while its files are
//     rewritten.
//
// The files a purge replaced stay until their snapshots expire (time
// travel reads the originals meanwhile): run ExpireSnapshots after a purge,
// olderThan 0 to drop them at once. `eventlogging purge` (internal/role)
// calls PurgeOld with rules from the purge policy (TableInfo.Schema for a
// capsule table, TableInfo.Stream for a stream's) and does not expire
// snapshots; the running sink's Maintain does.
//
// # Memory and performance
//
// The buffered rows, as decoded maps (about 1 KiB for a typical capsule),
// up to MaxBufferedRows (twice that while commits fail, after which
// WriteRecords refuses batches), plus one Arrow copy of a table's rows
// while it is committed. Compaction streams each hour through iceberg-go's
// scan and Parquet writer.
//
// BenchmarkWrite: 1,000-row batches of capsules on a SQLite catalog and a
// local warehouse, a commit every 100,000 rows, 29,000–55,000 rows/s on the
// shared 2-core development machine (four runs, load average 5–9 from other
// work):
//
//	go test -run '^$' -bench Write -benchtime 200x ./internal/sink/icebergsink/
//
// Rows are buffered as decoded maps, which costs allocation and GC; an
// Arrow builder per table would be faster. Compacting three hours (six
// files, 2,000 rows) on the test S3 store took 0.24–0.54 s.
//
// The dependency is large: iceberg-go brings Arrow and its Parquet writer
// (whose pqarrow imports arrow/flight, hence gRPC), bun (the SQL catalog's
// ORM, with its MSSQL and Oracle dialects), substrait, OpenTelemetry, and
// through its S3 IO gocloud.dev, google.golang.org/api and gax-go. In the
// binary that is about 45 % of the release build (docs/performance.md,
// "Build and binary").
//
// # Tests
//
// go test ./internal/sink/icebergsink/ (about 25 s; the PostgreSQL, S3,
// REST catalog and PyIceberg tests skip without their services, and fail
// under CI=true):
//
//   - TestWriteCapsules, TestWritePlatform, TestCommitInterval;
//   - TestCrash (a crash at each point of a commit), TestConcurrentSinks,
//     TestCommitConflict (the SQL catalog's requirement check, the REST
//     catalog's 409), TestTwoWritersStaleCommit and TestTwoWritersConcurrent
//     (a zombie and the partition's new owner committing the same records;
//     docs/reliability.md, "Two writers on one target"): these and
//     TestWriteCapsules on every catalog,
//     SQLite, PostgreSQL (EVENTLOGGING_POSTGRES_DSN) and REST
//     (EVENTLOGGING_ICEBERG_REST_URL, a namespace per test);
//   - TestKill9: re-executes the test binary as a child that feeds 100,000
//     capsules (schemas Test/1, Test/2 and Other/1 in two tables, five
//     partitions of two topics, four hours) with a 150 ms commit interval,
//     at most 8,000 a second; the parent watches the warehouse and SIGKILLs
//     it five times while a commit is under way (data files written that no
//     metadata references yet, plus 0–25 ms: some kills land before the
//     snapshot is committed, some after it, before the round finished). A
//     last run completes the input from StartOffsets; PyIceberg reads every
//     uuid exactly once and every append snapshot carries the offsets.
//     8.7–11.2 s on the shared 2-core machine;
//   - TestPyIceberg (one-hour scan pruning, schema evolution),
//     TestPyIcebergPostgres, TestPurgeAndExpire, TestPurgeOld (sanitise and
//     delete, rerun, late row), TestCompact, TestMaintainExpiresSnapshots,
//     TestReplayRefused;
//   - TestS3Warehouse: write, compact, purge, expire on S3;
//   - TestRESTCatalog (two tables, schema evolution, compaction, both
//     purges, expiry, resume offsets; PyIceberg's REST catalog with an
//     OAuth2 client credential reads every uuid once) and
//     TestRESTCredentials (user info, the two environment variables, what
//     reaches the server, no secret in errors or logs).
//
// The REST catalog of the tests is Apache Iceberg's own server, the test
// fixture behind the apache/iceberg-rest-fixture image
// (org.apache.iceberg.rest.RESTCatalogServer, on Iceberg's JdbcCatalog with
// SQLite and a local warehouse): scripts/iceberg-rest.sh start fetches
// iceberg-open-api 1.10.1's test-fixtures jar and the dependencies
// scripts/iceberg-rest/pom.xml pins, and starts it on 127.0.0.1:38181;
// scripts/test.sh does so for the whole run.
package icebergsink
