// Package icebergsink writes Kafka topics of events into Apache Iceberg
// tables — one per schema or stream — that PyIceberg, Spark, Trino and
// DuckDB read as soon as a commit lands, and resumes from the tables' own
// snapshots so that no record is appended twice, even across kill -9.
//
// See docs/iceberg.md for the catalog URIs, how to query the tables, and
// what exactly once means here.
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
// sink's Parquet rules (both classify nodes with internal/sink/columns): string → string, integer → long, number → double,
// boolean → boolean, an object with properties → a struct, anything else
// (arrays, free-form objects, type unions) → its JSON text in a string
// column. Every column is optional; members a schema does not declare are
// not stored.
//
// A new revision that adds fields adds optional columns to the same table
// (an Iceberg schema update; older rows read null). A revision that changes
// a column's type cannot be stored in the table: its records are poison
// ("incompatible with table column event.x: long vs string"). The table
// property eventlogging.source ("schema:Name", "stream:name") tells apart
// two sources whose names sanitise to one table name; the second one's
// records are poison.
//
// # Commits and offsets
//
// WriteRecords converts and buffers rows per table. A commit round — when
// Config.CommitInterval has passed (on the next WriteRecords or Maintain),
// when Config.MaxBufferedRows rows wait, on StartOffsets and on Close —
// writes each table's rows as Parquet data files and appends them in one
// snapshot per table. Each snapshot's summary records, per Kafka topic and
// partition (cumulative over the table's history):
//
//   - eventlogging.offsets (PropOffsets): every record of the partition up
//     to this offset that belongs in this table is in it;
//   - eventlogging.complete (PropComplete): every record of the partition
//     up to this offset is in its table, or was acknowledged as poison. The
//     last table of a round records the round's offsets; earlier ones the
//     previous round's.
//
// StartOffsets resumes each partition after the highest complete offset of
// any table (0 when none mentions it), never from the group's committed
// offsets. Each commit attempt reloads the table and drops the buffered
// rows whose offsets the table's eventlogging.offsets already covers.
// Together: a crash after an Iceberg commit but before the Kafka commit, or
// between two tables' commits, re-reads records and drops those already
// stored; a crash before a commit loses only buffered rows, which are
// re-read. A commit that conflicts with another writer's (another member of
// the consumer group, a compaction) is retried on the refreshed table,
// re-applying the same drop, so a partition that moved to another member
// while this one still held its rows is not stored twice either.
//
// Poison records (not JSON, no usable schema, a value that does not fit its
// column, an incompatible revision) are returned by WriteRecords; no
// snapshot claims them complete before the caller acknowledged them (by
// calling again), so a crash re-delivers them rather than losing them.
//
// # Maintenance
//
// Compact (run by Maintain every Config.CompactEvery commit rounds)
// rewrites an old hour's small files into one, in one replace snapshot per
// table; PurgeOld deletes old hours of tables without a retention rule and
// rewrites those of tables with one, keeping only the allowed fields, in
// one overwrite snapshot per table (ColumnSanitised marks the rows, so a
// rerun changes nothing); ExpireSnapshots drops old snapshots and the files
// only they referenced. Each of these snapshots carries the offsets of the
// one it follows. A table property commit.retry.num-retries is refused:
// iceberg-go would replay the sink's commits with stale offsets.
//
// # Memory
//
// The buffered rows, as decoded maps (about 1 KiB for a typical capsule),
// up to MaxBufferedRows (twice that while commits fail), plus one Arrow copy
// of a table's rows while it is committed.
package icebergsink
