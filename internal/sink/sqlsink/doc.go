// Package sqlsink writes validated event capsules and Event Platform events
// into SQL tables on SQLite, MariaDB/MySQL or PostgreSQL, one table per
// schema revision (or $schema version), creating the tables on first use.
//
// # Tables
//
// Rows of schema S revision R go to table S_R (with [Config].TablePerSchema,
// to table S, see below). A table has, in this order:
//
//   - id: a surrogate key filled by the database (insertion order);
//   - the capsule fields: uuid (NOT NULL, UNIQUE), dt (indexed), timestamp
//     (indexed), schema, revision, topic, wiki, webHost, recvFrom, seqId,
//     userAgent, clientIp;
//   - one column per event property, named "event" and the property path
//     joined with "_" (event.nested.field is event_nested_field), sorted by
//     name.
//
// Event Platform events (see below) get tables of the same shape.
//
// timestamp keeps the original's MediaWiki format: the capsule's epoch
// seconds as 14 characters of UTC, YYYYMMDDHHMMSS, which sort and compare
// as text. Epoch seconds are not stored a second time: they convert back
// exactly, and dt holds the same instant in ISO 8601 (also text, also
// sortable). A timestamp outside the years 0000–9999 makes the row poison.
//
// Objects whose schema declares properties are flattened, up to 16 levels;
// deeper, recursive ($ref to an ancestor) and property-less objects are one
// JSON column. An object that admits undeclared members (no
// "additionalProperties": false) also gets a JSON column named after its own
// path (event_context for event.context), holding those members as an
// object, or NULL when there are none: nothing the validator accepted is
// dropped. Properties are found in "properties" and, through local $refs,
// in allOf, anyOf, oneOf, then/else and dependentSchemas.
//
// # Event Platform events
//
// A record with "$schema" (a path such as /analytics/button_click/1.0.0, or
// a URL ending in one) is an Event Platform event, resolved with
// [Schemas].ResolveURI. Its table is the path's segments joined with "_",
// dots as "_": analytics_button_click_1_0_0, or with TablePerSchema
// analytics_button_click (the version dropped), shortened past 63 bytes as
// above. The path must be a canonical schema path (segments of ASCII
// letters, digits, "_", "-" and ".", no dot segments; see schema.Path) whose
// last segment is a version of dot-separated numbers; anything else is
// poison before any lookup, so a table name only ever holds ASCII letters,
// digits, "_" and "-" (and is quoted all the same). Two paths that join to
// the same name ("/a_b/c/1.0.0", "/a/b_c/1.0.0") are not mixed: within a
// Writer, the second schema to claim a table (or a legacy schema whose
// table name an Event Platform schema has, or the reverse) is poison.
//
// Its JSON Schema describes the whole record, so the event columns are the
// record flattened by the rules above, from the root: meta.id is event_meta_id,
// http.client_ip event_http_client_ip, the client's own "dt" event_dt,
// "$schema" event_$schema; undeclared members of an open object go to its
// JSON column (event_meta, event_http). The "event" prefix keeps them
// apart from the capsule columns. The capsule columns are filled from
// meta: uuid is meta.id (required: a redelivered event is a duplicate),
// dt is meta.dt as given and timestamp meta.dt as YYYYMMDDHHMMSS (meta.dt,
// the receive time, is required and must be RFC 3339, so retention purges
// these rows as any other), schema is the canonical $schema path (so rows
// of several versions in one table tell their version); revision, topic,
// wiki, webHost, recvFrom, seqId, userAgent and clientIp are NULL, their
// data being in the event columns (event_meta_stream, event_meta_domain,
// event_http_request_headers, event_http_client_ip). http.client_ip is
// stored as given, as a capsule's clientIp is: the processor has applied
// the IP policy. With TablePerSchema, versions are ordered numerically
// (1.10.0 after 1.9.0): the lowest creates the table, later ones add
// columns, as revisions do.
//
// # Types
//
// A property's column type follows the JSON types its schema admits (type,
// or inferred from const and enum), "null" aside, which only makes the
// column nullable (every event column is nullable: a missing property is
// NULL, and so is JSON null):
//
//	JSON type              SQLite    MariaDB/MySQL   PostgreSQL
//	integer                INTEGER   BIGINT          BIGINT
//	number (or int|number) REAL      DOUBLE          DOUBLE PRECISION
//	boolean                INTEGER   BOOLEAN         BOOLEAN          (SQLite: 0/1)
//	string                 TEXT      TEXT            TEXT
//	anything else          TEXT      TEXT            TEXT             (JSON text)
//
// "Anything else" is arrays, objects stored whole, untyped (draft 3 "any")
// and mixed-type properties; such a column holds the value's compact JSON
// with sorted keys, strings included ("abc" is stored with its quotes), so
// every value in it parses as JSON. Capsule columns: uuid is VARCHAR(64) on
// MySQL (TEXT elsewhere), dt VARCHAR(64) on MySQL, timestamp VARCHAR(14)
// (TEXT on SQLite), revision and seqId BIGINT (INTEGER on SQLite), the
// other fields TEXT. MySQL tables are InnoDB, utf8mb4 with the binary
// collation, so any Unicode text round-trips and compares exactly.
//
// Integers are converted exactly from json.Number (1.0 and 1e3 are integers,
// as in JSON Schema): 9007199254740993 is stored as such. An integer beyond
// the BIGINT range (−2⁶³ … 2⁶³−1) cannot be held by its column and makes
// the row poison; it is not stored as text. A number beyond the DOUBLE range
// is poison too. A value whose type contradicts its column (the capsule was
// not validated against this schema), a MySQL TEXT value over 65,535 bytes,
// a uuid or dt over 64 characters and, on PostgreSQL, text containing U+0000
// are poison as well.
//
// # Names
//
// Every identifier is quoted ("…" on SQLite and PostgreSQL, `…` on MySQL,
// the quote character doubled inside) and never concatenated raw: a
// property named `"; DROP TABLE x; --` is the column `event_"; DROP TABLE x;
// --`. Identifiers are also made valid for all three dialects alike, so a
// schema gets the same columns everywhere:
//
//   - Runes outside printable ASCII (U+0020–U+007E; control characters,
//     non-ASCII letters such as é or ☆) become "_", as do trailing spaces,
//     and such a name gets a suffix: "_" and 8 hex digits of SHA-256 over the
//     property path (each segment followed by a NUL byte).
//   - Names longer than 63 bytes (PostgreSQL's limit, one below MySQL's) are
//     cut to 54 bytes plus that suffix. Table names <Schema>_<revision> past
//     63 bytes are shortened the same way (hash of the full name).
//   - Names are compared ignoring ASCII case, as MySQL and SQLite compare
//     them. When two columns get the same name — property a_b and nested
//     a.b both flatten to event_a_b; event_Name and event_name; an overflow
//     column and a property — the column with the shorter property path
//     keeps it (ties: paths compared byte-wise, segment by segment, so
//     upper case wins), and the others get the suffix (hashed with "#1",
//     "#2"… in the rare case the suffixed name is taken too). Collision
//     suffixes depend only on the path, so a column keeps its name as long
//     as the set of colliding properties does not change.
//
// Index names are <table>_dt_idx, <table>_timestamp_idx and (PostgreSQL)
// <table>_uuid_key, shortened the same way.
//
// # Writing and duplicates
//
// [Writer.Write] resolves every row's schema first, then, per table, checks
// the table once per Writer (CREATE TABLE IF NOT EXISTS and indexes, added
// columns), serialised across processes by a database lock
// (pg_advisory_xact_lock, GET_LOCK, SQLite's write lock), and inserts the
// table's rows in one transaction, in uuid order (a fixed lock order, so
// concurrent writers queue instead of deadlocking; deadlocks and
// serialization failures are retried twice):
//
//   - SQLite: multi-row INSERT OR IGNORE, up to 1,000 rows or 32,766
//     parameters per statement (no statement journal, unlike ON CONFLICT
//     (uuid) DO NOTHING, whose other constraints may abort a statement
//     half done). OR IGNORE would also skip a row that breaks another
//     constraint (a CHECK added by hand): when fewer rows were inserted
//     than the batch has uuids, one query makes sure every skipped row's
//     uuid is in the table, else the transaction is undone and the rows
//     go one at a time with the exact statement (below);
//   - MySQL: multi-row INSERT … ON DUPLICATE KEY UPDATE uuid = uuid, which
//     skips exactly the rows whose uuid exists (unlike INSERT IGNORE, which
//     would also turn bad values into warnings), up to 1,000 rows or 65,535
//     parameters;
//   - PostgreSQL: the rows (the first of a uuid repeated in the batch)
//     are copied (COPY, binary) straight into the table, under a
//     savepoint. Should that COPY fail (a stored uuid, or a value the
//     database refuses), the transaction goes back to the savepoint, one
//     SELECT finds which of the batch's uuids the table holds, and the
//     others are copied again; a table whose last batch held stored
//     uuids asks first. Should that COPY fail too (a concurrent writer
//     stored one of the uuids since, or the refused value), the rows take
//     the careful way: COPY into a temporary staging table of the session
//     (created once per session and layout, emptied at commit), then
//     INSERT … SELECT … ON CONFLICT (uuid) DO NOTHING into the table.
//
// A row whose uuid is stored already, or earlier in the batch, is a
// duplicate on SQLite and PostgreSQL whatever its values: it is skipped
// before the database looks at them. MariaDB checks a row's values before
// its key, so there a duplicate with a value it refuses is poison
// (TestBatchDuplicateOfRefusedValue). The row stored is the same.
//
// SQLite statements also stay under about 4 MiB of values, MySQL ones
// under 224 KiB (so that the driver reuses its packet buffer); the rows
// left after the full-size statements go in statements of a power of two
// rows, so a table's INSERTs have few sizes, each prepared once per
// Writer and reused. A row whose uuid is already stored, or
// appears earlier in the batch, is skipped and counted in
// [Result].Duplicates: a duplicate never costs the rest of the batch (the
// original dropped whole batches). Since the uuid is deterministic, replays
// after a crash are idempotent.
//
// Should the database refuse a multi-row statement for a value the checks
// above let through (a constraint added by hand, say), the table's rows are
// inserted again one at a time, each under a savepoint, and only the
// refused rows become poison.
//
// # One table per schema
//
// With TablePerSchema, every revision of S goes to table S. The lowest
// revision seen creates it; later revisions add their new columns (ALTER
// TABLE … ADD COLUMN). A revision whose column exists with another type
// class (integer, real, boolean, text; SQLite stores booleans as integers)
// does not fit: its rows are poison, with the column named in the reason.
// Compatibility is by column name: a property that changes between string
// and another type keeps its TEXT column, and a collision that changes
// between revisions can reassign a name.
//
// # Errors
//
// Rows that can never be written are returned in [Result].Poison (the
// schema does not resolve, the record is neither an EventLogging capsule
// nor an Event Platform event, its $schema cannot name a table, meta.id or
// meta.dt is missing or malformed, or a value does not fit, as above); the
// batch goes on. Everything else (connections,
// timeouts, locks, a transient schema fetch error, ctx) is returned as an
// error, and the caller retries the batch: tables written before the error
// keep their rows, and the retry counts them as duplicates.
//
// # Running it
//
// sink.Run drives a Writer through [Writer.WriteRecords] (it implements
// sink.Sink): each batch of Kafka records is decoded ([Writer.Decode]) and
// written, and the records that can never be stored go to the error topic
// with the reason before the batch's offsets are committed.
//
// Purge (internal/purge) reads and changes the tables through their layout
// as exported here: [Dialect.Quote], [Dialect.Placeholder], the catalog
// ([Dialect.Tables], [Dialect.Columns], [IsEventTable]), [FieldColumn] and
// [TimestampLayout].
package sqlsink
