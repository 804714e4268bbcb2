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
// once the segment files would pass Config.MaxBytes, or the filesystem's
// free space would fall below Config.MinFreeBytes; the intake answers 503
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
//	uint32  n, the number of bytes that follow the checksum (2 + len(field) + len(value))
//	uint32  CRC-32C (Castagnoli) of those n bytes
//	uint16  len(field)
//	        field: the topic; for a record with a key, then a zero byte
//	        (no Kafka topic name holds one) and the key
//	        value
//
// (Spools written before keys were spooled have no zero byte in a field,
// and read as records without a key.)
//
// Records are numbered consecutively across segments; a segment rolls to a
// new file when a batch would take it past Config.SegmentBytes (a batch is
// never split, so one larger batch makes one larger file).
//
// The cursor file holds the sequence number of the oldest un-acked record.
// It is 8192 bytes: two 32-byte slots, at offsets 0 and 4096 (each in its
// own page and disk block), and zeros. A slot is
//
//	[4]byte "SPCR"
//	uint32  format version, 1
//	uint64  generation: even in slot 0, odd in slot 1
//	uint64  sequence number of the oldest un-acked record
//	uint32  zero
//	uint32  CRC-32C of the 28 bytes before it
//
// and the valid slot with the higher generation is the cursor. Open creates
// the file in full (temporary file, fsync, rename, fsync of the directory)
// if it is missing, with the position in both slots (generations 0 and 1);
// from then on Ack overwrites the older slot in place with the next
// generation and fsyncs, so a torn write spoils only that slot and Open
// falls back to the other (the records between are delivered again, with a
// warning). Open fails with a *CorruptError naming the cursor file if
// neither slot is valid; moving the file away replays from the oldest
// segment. A cursor in the older text format (the sequence number in
// decimal and a newline) is read and replaced by the slotted file at Open.
//
// Segment files wholly before the cursor are deleted; Ack deletes them
// before it writes the cursor, so Open reads a cursor older than the first
// segment as "everything before the first segment was acked".
//
// # Full disk
//
// Ack writes only into the cursor file's blocks, allocated at Open, and
// deletes files: it needs no free space, so a spool on a full filesystem
// still drains (on a copy-on-write filesystem such as btrfs or ZFS an
// overwrite needs new blocks, and only the free-space reserve helps).
// Append keeps Config.MinFreeBytes free (by default 5% of the filesystem,
// at most 64 MiB), checked with one statfs per Append, and returns ErrFull
// before it is reached; a write that fails with ENOSPC anyway (another
// writer took the space) leaves the spool as it was. Open needs free space
// only to create a missing cursor or lock file, or to convert a text
// cursor.
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
