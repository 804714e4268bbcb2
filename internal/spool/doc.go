// Package spool is the intake's durable local queue: when Kafka is
// unreachable the intake appends accepted events here, fsync'd, and a
// replayer sends them to Kafka in order when it returns, acknowledging them
// only after Kafka has.
//
// # Use
//
// Open a directory, Append batches of records (each Append is one write and
// one fsync, all or nothing), and from one replayer Peek the oldest records,
// produce them, and Ack as many as Kafka acknowledged. Append returns ErrFull
// once the segment files would pass Config.MaxBytes; the intake answers 503
// then. Acked records free space only when a whole segment file is acked
// (or the queue is drained), so MaxBytes should be several times
// Config.SegmentBytes.
//
// A Queue is safe for concurrent use: appenders are serialised on one
// write+fsync each (batch at the caller to go faster), while Peek, Ack, Len
// and Bytes do not wait for an appender's fsync. Peek reads from disk through
// a 64 KiB buffer and keeps no records in memory, so memory does not grow
// with the spool. Only one Queue (one process) may have a directory open at a
// time; Open takes an advisory lock on <dir>/lock.
//
// # Delivery semantics
//
// At least once. A record is durable when Append returns nil. It is dropped
// only by Ack, which durably advances the read position: a crash between
// Kafka's acknowledgement and Ack's cursor write replays those records after
// restart, and so does any record Peeked but not yet Acked. If the process
// crashes inside an Append, that Append's complete records may or may not
// survive (the caller was never told "accepted"); a torn last record never
// does. Consumers downstream must therefore tolerate duplicates, which they
// do by the event uuid.
//
// # On-disk format
//
// The directory holds segment files named <20-digit sequence number of the
// first record>.spool, a cursor file and a lock file. Every record is one
// frame, integers big-endian:
//
//	uint32  n, the number of bytes that follow the checksum (2 + len(topic) + len(value))
//	uint32  CRC-32C (Castagnoli) of those n bytes
//	uint16  len(topic)
//	        topic
//	        value
//
// Records are numbered consecutively across segments; a segment rolls to a
// new file when a batch would take it past Config.SegmentBytes (a batch is
// never split, so one larger batch makes one larger file). The cursor file
// holds the sequence number of the oldest un-acked record in decimal and a
// newline; it is replaced atomically (temporary file, fsync, rename, fsync of
// the directory). Segment files wholly before the cursor are deleted; Ack
// deletes them before it writes the cursor, so that space is freed even on a
// full disk, and Open therefore reads a cursor older than the first segment
// as "everything before the first segment was acked".
//
// # Recovery
//
// Open validates every frame of the segments still needed. A torn or corrupt
// tail of the last segment (a crash during a write) is truncated away with a
// warning that reports the bytes dropped. A bad frame in any other segment,
// or a gap in the numbering between segments, is an error from Open (a
// *CorruptError names the file and offset): the spool never silently skips
// records that were acknowledged to a client. Move the damaged file away to
// start anyway, knowingly losing its records.
package spool
