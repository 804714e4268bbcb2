// Package purge enforces the retention policy on the sinks' data: it
// deletes or sanitises the events older than the retention in the SQL
// tables written by sqlsink ([PurgeSQL]) and in the hour partitions written
// by filesink ([PurgeFiles]). `eventlogging purge` runs it once or on a
// schedule. Each sink owns its layout, and purge asks it: sqlsink for
// identifier quoting, bind parameters, the catalog and the columns of its
// tables; filesink for the hour partitions, their removal and the atomic
// publication of files.
//
// # Semantics
//
// An event is old when it was received more than Policy.Retention ago
// (default 90 days). What happens to it depends on its schema:
//
//   - no Rule for the schema: the event is deleted;
//   - a Rule: the event is kept but sanitised. The fields listed in
//     Rule.Keep stay, the fields in Rule.Hash become the lowercase hex
//     HMAC-SHA256 keyed with Policy.Salt of their value (a string as is,
//     another value as its compact JSON; in SQL, the column's text), and
//     every other field is dropped — except the bookkeeping fields uuid,
//     dt, timestamp, schema and revision, which identify the event and its
//     age and always stay.
//
// clientIp and userAgent can never be kept in clear: a Rule may hash them
// or leave them out (dropped); ParsePolicy and the purge functions refuse
// a Rule that keeps them.
//
// Fields are named by their dotted path in the capsule ("wiki",
// "event.action", "event.user.id"); in SQL that is the column sqlsink
// flattened the path to ("event_user_id", compared ignoring ASCII case).
// See [Rule] for the details.
//
// # SQL
//
// PurgeSQL handles every table with sqlsink's capsule columns (id, uuid,
// dt, timestamp, schema, revision), on SQLite, MariaDB/MySQL and
// PostgreSQL. A row is old when its timestamp column (sqlsink's
// YYYYMMDDHHMMSS, UTC, which compares exactly as text) is before the
// cutoff, or when timestamp is NULL and dt is. Identifiers come from the
// database's catalog (sqlsink.Dialect.Tables and Columns), are checked
// (sqlsink.Quotable: valid UTF-8, no NUL, at most 64 bytes) and quoted by
// sqlsink.Dialect.Quote ("…" or `…`, the quote doubled), never
// concatenated raw; values are always bound parameters.
//
// Work goes in batches of Policy.BatchRows rows (default 10,000), each its
// own statement or transaction, so no table is locked for long:
//
//   - deletion: DELETE … WHERE <old> ORDER BY id LIMIT n on MySQL;
//     DELETE … WHERE id IN (SELECT id … WHERE <old> ORDER BY id LIMIT n)
//     on SQLite and PostgreSQL; repeated until a batch is short;
//   - sanitisation: in one transaction per batch, select the next n old,
//     unsanitised rows by id (keyset, so one run reads the table once),
//     then UPDATE them: dropped columns = NULL, hashed columns = the HMAC
//     computed here, sanitised = true, each UPDATE guarded by
//     "sanitised IS NULL".
//
// Marking sanitised rows: hashing is not idempotent (the hash of a hash is
// another value), and a 64-hex-digit test would misjudge values that are
// legitimately 64 hex digits (clientIp is already an HMAC when the
// processor hashes IPs). So the purge adds a nullable BOOLEAN column
// [SanitisedColumn] ("sanitised") to a table the first time it sanitises
// rows of it, and sets it on every row it sanitises; rows with it set are
// never selected again, and the UPDATE guard makes two concurrent purges
// safe too. sqlsink names its event columns "event…", so the column
// collides with nothing, and sqlsink names its insert columns, so it keeps
// writing to the table. A hashed field whose column is not text (an
// integer, say) cannot hold a hash: it is dropped instead, with a warning.
// A pgx client that cached a "SELECT *" of a table fails once after the
// column is added (PostgreSQL: "cached plan must not change result type");
// list columns instead.
//
// # Files
//
// PurgeFiles walks the hour partitions
// <root>/<topic>/year=YYYY/month=MM/day=DD/hour=HH/ (filesink.Hours) and
// handles the hours that ended before the cutoff. A partition none of whose
// records has a schema with a Rule (the "schema" field of each JSON line;
// for a Parquet file, the <Name>_<revision> in its name) is removed by
// filesink.RemoveHour: renamed to a hidden ".hour=HH.purge-deleting" first,
// then removed, with day and month directories left empty. Otherwise every
// JSON-lines file is rewritten: records without a Rule are dropped, the
// others sanitised as above (a hashed field inside a kept object replaces
// its clear value). Each rewrite is written to a hidden temp file and
// published (filesink.PublishFile: fsync, rename, directory fsync) as
// <name>.sanitised.jsonl.gz (still matched by *.jsonl.gz), and then the
// original is removed; once every file is done a [SanitisedMarker]
// (_SANITISED) is written atomically (filesink.WriteFileAtomic) and later
// runs skip the partition.
// The ".sanitised" name is what makes an interrupted run safe to resume: a
// rewritten file is never rewritten (hashed) again, and an original whose
// rewrite exists is simply removed. _SUCCESS and other files stay.
//
// Parquet files go the same way. A file whose name's schema has no Rule
// is removed (with its partition, or alone in a partition being
// sanitised). A file whose schema has one is rewritten row by row, to
// <name>.sanitised.parquet, with the same resumption: each row is
// sanitised with the Rule of its "schema" column (the file name's schema
// when that is NULL) and dropped when it has none. The file's Parquet
// schema is kept unchanged (filesink makes every field optional), so
// readers keep working: the bookkeeping and kept columns stay (a field
// naming a group keeps all its leaves), a hashed text (BYTE_ARRAY) column
// holds the HMAC of its text — for filesink's JSON-text columns (arrays,
// free objects, unions) that is the value's compact JSON, as in JSON
// lines — and every other column is set NULL, including a hashed column
// that is not text (a number, a boolean, a group), which cannot hold a
// hash, as in SQL. Key/value metadata is copied; the rewrite is Snappy
// compressed. A file with a required or repeated column to drop (which
// filesink never writes) is not rewritten: its partition is left unmarked
// and the run returns an error wrapping [ErrParquetSanitise].
//
// # Dry run, counts, resuming
//
// With Policy.DryRun nothing is changed (not even the sanitised column is
// added); [Report] counts what would be done and Report.Actions says it,
// one line per table or partition. Counts are logged per table and
// partition. Both functions are idempotent: run again after a crash or an
// error and they finish the job; a run with nothing to do changes nothing.
// An error on one table or partition does not stop the others.
//
// # Configuration
//
//	retention: 90d             # or a Go duration: 2160h
//	salt_hex: 5f1c…            # HMAC key, hex; required when a rule hashes
//	batch_rows: 10000
//	schemas:
//	  Edit:
//	    keep: [wiki, webHost, event.action, event.editor]
//	    hash: [event.user.id, clientIp]
//	  NavigationTiming:
//	    keep: [wiki, event.responseStart, event.loadEventEnd]
//
// Every other schema's old events are deleted. Keep the salt secret and
// stable: changing it changes every hash written from then on.
package purge
