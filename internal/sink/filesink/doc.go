// Package filesink writes Kafka topics of events into hour-partitioned
// files — gzip-compressed JSON lines or Parquet — that Hive, Spark and
// DuckDB read, and publishes each file exactly once in effect, even across
// kill -9.
//
// # Layout
//
// Everything lives under Config.Root:
//
//	<topic>/year=YYYY/month=MM/day=DD/hour=HH/
//	    part-<partition>-<firstOffset>-<lastOffset>.jsonl.gz            (JSON lines)
//	    part-<partition>-<firstOffset>-<lastOffset>.<schema>.parquet    (Parquet)
//	    _SUCCESS                        the hour is closed (see Sink.CloseHours)
//	_filesink/                          the sink's state; "_" makes readers skip it
//	    lock                            flock: one process per root
//	    manifests/<topic>/<partition>.json   last checkpoint of a Kafka partition
//	    inprogress/<topic>/<partition>/*.tmp files being written (never read)
//	    hours/<topic>.json              first hour not closed yet
//
// The hour is the record's receive time: the capsule's "dt", or "meta.dt"
// for an Event Platform event (one with "$schema"), in UTC; the Kafka record
// timestamp when neither parses. Offsets in a file name are the Kafka
// offsets of the first and last record in it. <schema> is "<Name>_<revision>"
// for EventLogging capsules and the $schema path with "/" as "_" for Event
// Platform events ("analytics_button_click_1.0.0"): each Parquet file holds
// one schema version, so a topic with several versions is read with DuckDB's
// union_by_name=true.
//
// # Parquet
//
// The schema is built from the registry's normalised JSON Schema
// (Schemas): string → BYTE_ARRAY with the String logical type, integer →
// INT64, number → DOUBLE, boolean → BOOLEAN, an object with properties → a
// group of them, anything else (arrays, free-form objects, type unions) →
// its JSON text in a String column. Every field is optional. For an
// EventLogging capsule the schema describes the "event" group and the
// capsule fields (schema, revision, wiki, webHost, recvFrom, seqId,
// timestamp, dt, uuid, userAgent, clientIp, topic) are added; an Event
// Platform schema describes the whole record. Members a schema does not
// declare are not stored; a value that does not fit its column makes the
// record poison. Files are Snappy-compressed, data page v1, with column
// chunk and page statistics (min, max, null count) and page indexes.
//
// # Exactly once in effect
//
// Records of a Kafka partition are appended to temp files, one per
// (hour[, schema version]). A checkpoint publishes all of them together:
//
//  1. finish each temp file (gzip trailer or Parquet footer), fsync it, fsync
//     the temp directory;
//  2. replace manifests/<topic>/<partition>.json atomically (write a temp
//     file, fsync, rename, fsync the directory) with
//     {last_offset, files: [{tmp, final}]};
//  3. rename each temp file to its final name;
//  4. fsync the final directories.
//
// Open recovers: for every manifest it renames the temp files still there
// (idempotent: a file already renamed is left alone), then deletes every
// other temp file; StartOffsets then resumes each partition at the
// manifest's last_offset+1. Invariant: every record at or below last_offset
// is in exactly one published file, no record above it is published, and
// temp files are never visible in partition directories. A crash
// (including kill -9 or power loss, thanks to the fsyncs) before step 2
// loses only temp files, whose records are above last_offset and so consumed
// again; a crash after step 2 leaves renames that recovery finishes, and
// consumption resumes after them. A file's name holds the offset of
// its first record, which no other file of the partition holds, so a rename
// never replaces another file.
// Records already written are skipped by offset, so retried batches do not
// duplicate either. The group's committed offsets are not trusted (they run
// ahead of the published data): the runner must use StartOffsets.
//
// A checkpoint happens when a file reaches MaxFileBytes, when the oldest
// open file of the partition is MaxFileAge old, to stay under MaxOpenFiles
// (the least recently written partition), when an hour is closed, on
// reassignment (StartOffsets) and on Close.
//
// Poison records (not JSON, not an object, no usable schema, a value that
// does not fit its column) are returned by Write for the caller to send to
// the error topic; a checkpoint covers their offsets only after the caller
// acknowledged them, so a crash never loses them: sink.Run calls
// AcknowledgePoison as soon as the error topic acknowledged them (another
// call to Write acknowledges them too). The files of their partition wait
// for that, and then publish on their usual schedule, with or without
// later records.
//
// # Memory
//
// Bounded by configuration, not by load: at most MaxOpenFiles files are
// open (default 32; one more first publishes the least recently written
// partition). A JSON-lines file holds a gzip compressor and a 64 KiB buffer,
// about 1.2 MiB in all. A Parquet file holds its current row group, flushed
// once parquet-go's estimate of it reaches RowGroupBytes (default 8 MiB;
// about 6 MiB per file measured). Add one batch of decoded records and one
// Parquet schema per schema version seen.
//
// # Running it
//
// One process owns a root (Open locks it): run one sink process — one
// consumer group member — per root. With several members writing separate
// roots, a partition moving between them would be duplicated or lost.
//
// sink.Run drives a Sink (a sink.Sink, sink.Resumer and sink.Maintainer):
//
//   - it passes Sink.StartOffsets as kafka.BatchConfig.StartOffsets (it
//     returns an offset for every assigned partition, so the group's
//     committed offsets are never used);
//   - in the batch handler it calls WriteRecords (Write); an error wrapping
//     ErrBroken also wraps sink.ErrFatal, so it stops consuming, and the
//     process starts again from StartOffsets after Close and Open; other
//     errors retry the batch; it produces the poison records to the error
//     topic, and waits for the acknowledgement, before the batch is done,
//     then calls AcknowledgePoison;
//   - it calls Maintain (CloseHours) on a timer, about every minute (age
//     rotation and _SUCCESS markers depend on it), and stops too when that
//     returns ErrBroken;
//   - it calls Close after ConsumeBatches returned.
//
// Purge (internal/purge) reads and changes the same layout through Hours,
// RemoveHour, PublishFile, WriteFileAtomic and SyncDir.
//
// Limitation: idleness is judged by the wall clock, since batches carry no
// high watermarks. If consumption stalls for longer than IdleAfter (Kafka
// unreachable), hours close on the wall clock alone, and records that
// arrive afterwards for them are published late, into hours that already
// have their _SUCCESS.
package filesink
