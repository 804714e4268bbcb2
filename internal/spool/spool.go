package spool

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/eventlogging/eventlogging/internal/record"
	"github.com/eventlogging/eventlogging/internal/vfs"
)

// Record is one spooled Kafka record (the pipeline's one record shape): the
// topic it is for (at most 65535 bytes) and its value. Keys and headers are
// not spooled: Append refuses a record that has them.
type Record = record.Message

// Header is a record header (never spooled).
type Header = record.Header

// Defaults for the zero values of Config.
const (
	DefaultMaxBytes     = 1 << 30  // 1 GiB
	DefaultSegmentBytes = 64 << 20 // 64 MiB
)

// The default free-space reserve (Config.MinFreeBytes) is
// defaultMinFreePercent of the filesystem, at most defaultMinFreeCap.
const (
	defaultMinFreeCap     = 64 << 20 // 64 MiB
	defaultMinFreePercent = 5
)

// readBufSize is the read-ahead of Peek and the buffer of Open's scan.
const readBufSize = 64 << 10

// maxKeptWriteBuf is the largest encoding buffer Append keeps for reuse.
const maxKeptWriteBuf = 4 << 20

// Config tunes a Queue. The zero value is usable.
type Config struct {
	// MaxBytes is the total size of the segment files allowed; an Append
	// that would pass it returns ErrFull. Zero means DefaultMaxBytes.
	MaxBytes int64
	// SegmentBytes is the segment file size after which Append starts a new
	// file. Space is reclaimed a whole segment at a time. Zero means
	// DefaultSegmentBytes.
	SegmentBytes int64
	// MinFreeBytes is the free space Append keeps on the filesystem that
	// holds the spool: Append returns ErrFull rather than let the
	// filesystem's free space (as available to an unprivileged user) fall
	// below it, so that other writers, and a filesystem that needs space
	// to overwrite in place, still have room. Zero means the default,
	// min(64 MiB, 5% of the filesystem's size); a negative value disables
	// the check. On platforms without statfs (not Linux, macOS, FreeBSD or
	// DragonFly) there is no check.
	MinFreeBytes int64
	// Logger receives warnings (a torn tail dropped at Open, a file that
	// could not be deleted). Nil discards.
	Logger *slog.Logger
	// FS is the file system the spool reads and writes through. Nil means
	// vfs.OS; tests pass a vfs.Mem to simulate power losses.
	FS vfs.FS
}

// segment is one segment file.
type segment struct {
	base uint64 // sequence number of the first record
	path string

	// Guarded by Queue.mu; changed only by the appender, which also holds
	// Queue.wmu and so may read them without mu.
	count int64 // committed records
	size  int64 // committed bytes

	// wf is the appender's handle, set only on the last (active) segment.
	// It is used only by the appender while Queue.inflight is set; removal
	// takes it under Queue.mu when inflight is not set.
	wf vfs.File
	// dirty: wf has bytes past size that Truncate failed to remove. Guarded
	// by Queue.wmu.
	dirty bool
}

// position is a byte offset in a segment.
type position struct {
	seg *segment
	off int64
}

// segSnap is a segment and its committed size when Peek or Ack looked.
type segSnap struct {
	seg  *segment
	size int64
}

// Queue is a durable FIFO of Records in a directory. It is safe for
// concurrent use; see the package documentation for the contract.
type Queue struct {
	fs       vfs.FS
	dir      string
	dirF     vfs.File // the directory, for fsync
	lockF    io.Closer
	log      *slog.Logger
	maxBytes int64
	segBytes int64
	minFree  int64 // free space Append keeps on the filesystem; < 0: no check

	// Lock order: wmu, then rmu, then mu.

	wmu  sync.Mutex // serialises Append; guards wbuf and segment.dirty
	wbuf []byte

	rmu      sync.Mutex  // serialises Peek, Ack and segment removal; guards the fields below
	cur      *cursorFile // the cursor file, written by Ack
	rseg     *segment    // the segment rf reads
	rf       vfs.File
	br       *bufio.Reader
	snap     []segSnap
	peekEnds []position // position after each record of the last Peek; reset by Ack
	topic    string     // last topic read, reused to save allocations

	mu       sync.Mutex // guards the fields below and segment.count/size/wf
	segs     []*segment // in sequence order; the last one is the active one
	headOff  int64      // offset of the oldest un-acked record in segs[0]
	headSeq  uint64     // its sequence number; nextSeq if none
	nextSeq  uint64     // sequence number of the next record appended
	bytes    int64      // sum of the segments' committed sizes
	inflight bool       // an Append is writing to the last segment
	closed   bool
}

// Open opens the spool in dir, creating dir and its parents if needed
// (and fsyncing the directories that hold them), and recovers its state:
// it validates the segments, truncates a torn tail of the last one
// (logging the bytes dropped) and resumes at the cursor. Corruption
// anywhere else is an error (a *CorruptError for a bad frame) rather than
// silent loss.
func Open(dir string, cfg Config) (*Queue, error) {
	if cfg.MaxBytes < 0 || cfg.SegmentBytes < 0 {
		return nil, fmt.Errorf("spool: MaxBytes %d and SegmentBytes %d must not be negative", cfg.MaxBytes, cfg.SegmentBytes)
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.SegmentBytes == 0 {
		cfg.SegmentBytes = DefaultSegmentBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.FS == nil {
		cfg.FS = vfs.OS
	}
	if err := makeDir(cfg.FS, dir); err != nil {
		return nil, err
	}
	dirF, err := cfg.FS.OpenFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	lockF, err := lockDir(cfg.FS, dir)
	if err != nil {
		dirF.Close()
		return nil, err
	}
	q := &Queue{
		fs:       cfg.FS,
		dir:      dir,
		dirF:     dirF,
		lockF:    lockF,
		log:      cfg.Logger.With("component", "spool", "dir", dir),
		maxBytes: cfg.MaxBytes,
		segBytes: cfg.SegmentBytes,
		minFree:  -1,
		br:       bufio.NewReaderSize(nil, readBufSize),
	}
	err = q.setMinFree(cfg.MinFreeBytes)
	if err == nil {
		err = q.recover()
	}
	if err != nil {
		for _, s := range q.segs {
			if s.wf != nil {
				s.wf.Close()
			}
		}
		if q.cur != nil {
			q.cur.f.Close()
		}
		lockF.Close()
		dirF.Close()
		return nil, err
	}
	return q, nil
}

// setMinFree sets the free-space reserve from Config.MinFreeBytes, reading
// the filesystem's size for the default.
func (q *Queue) setMinFree(cfg int64) error {
	if cfg < 0 {
		return nil
	}
	_, size, err := q.diskSpace()
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		return nil
	case err != nil:
		return err
	case cfg == 0:
		q.minFree = defaultMinFree(size)
	default:
		q.minFree = cfg
	}
	return nil
}

// diskSpace returns the bytes free to an unprivileged user on the
// filesystem holding the spool, and its size; errors.ErrUnsupported where
// that cannot be known.
func (q *Queue) diskSpace() (avail, size int64, err error) {
	avail, size, err = q.fs.DiskSpace(q.dirF)
	if err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return 0, 0, fmt.Errorf("spool: %w", err)
	}
	return avail, size, err
}

// defaultMinFree is the default reserve on a filesystem of size bytes.
func defaultMinFree(size int64) int64 {
	return min(defaultMinFreeCap, size/100*defaultMinFreePercent)
}

// recover rebuilds the in-memory state from the directory.
func (q *Queue) recover() error {
	if err := q.fs.Remove(filepath.Join(q.dir, cursorTmpName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("spool: %w", err)
	}
	cursorPath := filepath.Join(q.dir, cursorName)
	cur, err := readCursor(q.fs, cursorPath, q.log)
	if err != nil {
		return err
	}
	cursor := cur.seq
	files, err := listSegments(q.fs, q.dir)
	if err != nil {
		return err
	}
	if cur.kind == cursorNone && len(files) > 0 {
		cursor = files[0].base
	}
	changed := false // files removed or truncated: sync the directory

	// Segments followed by one starting at or before the cursor hold only
	// acked records; Ack deletes them, and a crash may have left some.
	for len(files) > 1 && files[1].base <= cursor {
		if err := q.fs.Remove(files[0].path); err != nil {
			return fmt.Errorf("spool: remove acked segment: %w", err)
		}
		files, changed = files[1:], true
	}

	var segs []*segment
	headOff := int64(-1)
	for i, sf := range files {
		s, wantOff, err := q.recoverSegment(sf, cursor, i == len(files)-1, &changed)
		if err != nil {
			return err
		}
		if i > 0 {
			prev := segs[i-1]
			if want := prev.base + uint64(prev.count); sf.base != want {
				return fmt.Errorf("spool: %s starts at record %d but %s ends before record %d: records missing or duplicated",
					sf.path, sf.base, prev.path, want)
			}
		}
		if i == 0 {
			headOff = wantOff
		}
		segs = append(segs, s)
	}

	// Drop what is wholly acked, even the last segment: a segment the
	// cursor has passed is never appended to again. (Only the last one can
	// be left here: an earlier one is followed by a segment starting at or
	// before the cursor, and was deleted above.)
	end := cursor
	for len(segs) > 0 && segs[0].base+uint64(segs[0].count) <= cursor {
		end = segs[0].base + uint64(segs[0].count)
		if err := q.fs.Remove(segs[0].path); err != nil {
			return fmt.Errorf("spool: remove acked segment: %w", err)
		}
		segs, changed, headOff = segs[1:], true, -1
	}
	switch {
	case len(segs) == 0:
		if end < cursor {
			q.log.Warn("spool cursor is past the last record", "cursor", cursor, "end", end)
		}
		q.headSeq, q.nextSeq = cursor, cursor
	case headOff >= 0:
		q.headSeq, q.headOff = cursor, headOff
	default:
		// The cursor precedes the first segment: Ack deleted the segments
		// before it and the process stopped before the cursor was written.
		q.headSeq, q.headOff = segs[0].base, 0
	}
	if len(segs) > 0 {
		act := segs[len(segs)-1]
		q.nextSeq = act.base + uint64(act.count)
		f, err := q.fs.OpenFile(act.path, os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("spool: %w", err)
		}
		act.wf = f
	}
	for _, s := range segs {
		q.bytes += s.size
	}
	q.segs = segs
	if changed {
		if err := q.dirF.Sync(); err != nil {
			return fmt.Errorf("spool: sync %s: %w", q.dir, err)
		}
	}

	// Ack writes the cursor in place, in blocks allocated here, so that it
	// needs no free space: a text cursor (an older version's), or none, is
	// replaced by a slotted file now.
	switch cur.kind {
	case cursorSlots:
		q.cur, err = openCursor(q.fs, cursorPath, cur.gen)
	case cursorText:
		if q.cur, err = createCursor(q.fs, q.dir, q.dirF, q.headSeq); err != nil {
			return fmt.Errorf("spool: convert the text cursor file %s (sequence number %d) to the slotted format: %w", cursorPath, cur.seq, err)
		}
		q.log.Info("spool converted the cursor file to the slotted format", "file", cursorPath, "seq", q.headSeq)
	default:
		q.cur, err = createCursor(q.fs, q.dir, q.dirF, q.headSeq)
	}
	if err != nil {
		return err
	}
	if n := q.nextSeq - q.headSeq; n > 0 {
		q.log.Info("spool holds un-acked records", "records", n, "bytes", q.bytes, "segments", len(segs))
	}
	return nil
}

// recoverSegment scans one segment file and returns it, with the offset of
// the record numbered cursor (-1 if it is not in the file). A bad frame is
// an error unless the file is the last one, whose torn tail is truncated.
func (q *Queue) recoverSegment(sf segmentFile, cursor uint64, last bool, changed *bool) (*segment, int64, error) {
	flag := os.O_RDONLY
	if last {
		flag = os.O_RDWR // to truncate a torn tail
	}
	f, err := q.fs.OpenFile(sf.path, flag, 0)
	if err != nil {
		return nil, 0, fmt.Errorf("spool: %w", err)
	}
	defer f.Close()
	res, err := scanSegment(f, sf.path, sf.base, cursor, q.br)
	if err != nil {
		return nil, 0, err
	}
	if res.bad != nil {
		if !last {
			return nil, 0, res.bad
		}
		if err := q.dropTornTail(f, res); err != nil {
			return nil, 0, err
		}
		*changed = true
	}
	return &segment{base: sf.base, path: sf.path, count: res.count, size: res.end}, res.wantOff, nil
}

// dropTornTail truncates the last segment after its last valid record.
func (q *Queue) dropTornTail(f vfs.File, res scanResult) error {
	if err := f.Truncate(res.end); err != nil {
		return fmt.Errorf("spool: truncate torn tail of %s: %w", res.bad.Path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("spool: truncate torn tail of %s: %w", res.bad.Path, err)
	}
	q.log.Warn("spool dropped a torn tail",
		"file", res.bad.Path, "offset", res.end, "bytes_dropped", res.fileSize-res.end,
		"records_kept", res.count, "reason", res.bad.Reason)
	return nil
}

// Append writes recs to the end of the spool with one write and one fsync
// (and an fsync of the directory when it starts a new segment file). It
// returns nil only once all of recs are durable; on any error none of them
// were added. It returns ErrFull if the segment files would pass
// Config.MaxBytes or the filesystem's free space would fall below
// Config.MinFreeBytes (checked with one statfs), and an error wrapping the
// OS error if the write or the fsync fails (ENOSPC included), after which
// the spool is as before and later Appends may succeed. Append does not
// keep recs.
func (q *Queue) Append(recs []Record) error {
	size, err := batchSize(recs)
	if err != nil {
		return err
	}
	q.wmu.Lock()
	defer q.wmu.Unlock()
	if err := q.reclaimDrained(); err != nil {
		return err
	}

	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return ErrClosed
	}
	if len(recs) == 0 {
		q.mu.Unlock()
		return nil
	}
	if q.bytes+size > q.maxBytes {
		q.mu.Unlock()
		return ErrFull
	}
	var act *segment
	if len(q.segs) > 0 {
		act = q.segs[len(q.segs)-1]
	}
	// From here until inflight is cleared, Ack leaves act in place.
	q.inflight = true
	q.mu.Unlock()

	committed := false
	defer func() {
		q.mu.Lock()
		if committed {
			act.size += size
			act.count += int64(len(recs))
			q.bytes += size
			q.nextSeq += uint64(len(recs))
		}
		q.inflight = false
		q.mu.Unlock()
	}()

	if err := q.checkFree(size); err != nil {
		return err
	}
	if act == nil || (act.size > 0 && act.size+size > q.segBytes) {
		if act, err = q.roll(act); err != nil {
			return err
		}
	}
	if err := q.clean(act); err != nil {
		return err
	}
	q.wbuf = appendFrames(q.wbuf[:0], recs, size)
	_, err = act.wf.WriteAt(q.wbuf, act.size)
	if err == nil {
		err = act.wf.Sync()
	}
	if cap(q.wbuf) > maxKeptWriteBuf {
		q.wbuf = nil
	}
	if err != nil {
		// Take back whatever part of the batch reached the file, so the
		// next Append writes after the last committed record.
		// The truncation is made durable too: the next Append may start
		// a new segment and never sync this one again, and bytes of the
		// failed write the kernel already wrote back would then end a
		// segment that is not the last (Open refuses that as corrupt).
		terr := act.wf.Truncate(act.size)
		if terr == nil {
			terr = act.wf.Sync()
		}
		if terr != nil {
			act.dirty = true
			q.log.Warn("spool could not truncate a failed append", "file", act.path, "offset", act.size, "err", terr)
		}
		return fmt.Errorf("spool: append to %s: %w", act.path, err)
	}
	committed = true
	return nil
}

// checkFree returns ErrFull if writing size bytes would leave less than
// the reserve free on the filesystem. The caller holds wmu.
func (q *Queue) checkFree(size int64) error {
	if q.minFree < 0 {
		return nil
	}
	free, _, err := q.diskSpace()
	if err != nil {
		return err
	}
	if free-size < q.minFree {
		return fmt.Errorf("%w: %d bytes free on the filesystem, and %d to write would leave less than the %d kept free (Config.MinFreeBytes)",
			ErrFull, free, size, q.minFree)
	}
	return nil
}

// roll starts a new segment file after old (nil if there is none) and
// makes it the active one. The caller holds wmu and has set inflight.
func (q *Queue) roll(old *segment) (*segment, error) {
	if old != nil {
		// old is frozen from now on: no garbage may follow its records.
		if err := q.clean(old); err != nil {
			return nil, err
		}
	}
	path := segmentPath(q.dir, q.nextSeq)
	f, err := q.fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, filePerm)
	if err != nil {
		return nil, fmt.Errorf("spool: new segment: %w", err)
	}
	if err := q.dirF.Sync(); err != nil {
		f.Close()
		_ = q.fs.Remove(path)
		return nil, fmt.Errorf("spool: new segment: sync %s: %w", q.dir, err)
	}
	s := &segment{base: q.nextSeq, path: path, wf: f}
	q.mu.Lock()
	var oldWF vfs.File
	if old != nil {
		oldWF, old.wf = old.wf, nil
	}
	q.segs = append(q.segs, s)
	q.mu.Unlock()
	if oldWF != nil {
		oldWF.Close()
	}
	return s, nil
}

// clean removes bytes a failed Append left after s's committed records.
func (q *Queue) clean(s *segment) error {
	if !s.dirty {
		return nil
	}
	if err := s.wf.Truncate(s.size); err != nil {
		return fmt.Errorf("spool: truncate %s after a failed append: %w", s.path, err)
	}
	if err := s.wf.Sync(); err != nil {
		return fmt.Errorf("spool: fsync %s after a failed append: %w", s.path, err)
	}
	s.dirty = false
	return nil
}

// reclaimDrained deletes the active segment if every record in it is
// acked, so that a drained spool takes no space. Ack does this too, but
// not while an Append is writing, which may then have failed. The caller
// holds wmu.
func (q *Queue) reclaimDrained() error {
	q.mu.Lock()
	closed, drained := q.closed, q.drainedLocked()
	q.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if !drained {
		return nil
	}
	q.rmu.Lock()
	defer q.rmu.Unlock()
	q.mu.Lock()
	var drop []*segment
	if !q.closed && q.drainedLocked() {
		drop = q.detachHeadLocked()
	}
	q.mu.Unlock()
	q.removeFiles(drop)
	q.peekEnds = q.peekEnds[:0]
	return nil
}

// drainedLocked reports whether the only segment is non-empty and fully
// acked.
func (q *Queue) drainedLocked() bool {
	return len(q.segs) == 1 && q.segs[0].size > 0 && q.headOff == q.segs[0].size
}

// detachHeadLocked takes segs[0] out of the queue and moves the head to
// the next segment. The caller holds rmu and mu, and removes the files it
// returns with removeFiles after releasing mu.
func (q *Queue) detachHeadLocked() []*segment {
	s := q.segs[0]
	q.segs = q.segs[1:]
	q.bytes -= s.size
	q.headOff = 0
	q.headSeq = q.nextSeq
	if len(q.segs) > 0 {
		q.headSeq = q.segs[0].base
	}
	return []*segment{s}
}

// removeFiles closes and deletes segments already taken out of the queue.
// The caller holds rmu. A file that cannot be deleted is logged and left;
// Open deletes it later, as it is before the cursor.
func (q *Queue) removeFiles(segs []*segment) {
	for _, s := range segs {
		if s == q.rseg {
			q.rf.Close()
			q.rf, q.rseg = nil, nil
		}
		if s.wf != nil {
			s.wf.Close()
			s.wf = nil
		}
		if err := q.fs.Remove(s.path); err != nil {
			q.log.Warn("spool could not delete an acked segment", "file", s.path, "err", err)
		}
	}
}

// Peek returns up to max of the oldest un-acked records, in append order,
// without removing them. It reads them from disk; the records returned
// belong to the caller. Peek returns no records if max < 1 or the spool is
// empty.
func (q *Queue) Peek(max int) ([]Record, error) {
	q.rmu.Lock()
	defer q.rmu.Unlock()
	q.peekEnds = q.peekEnds[:0]
	n, head, err := q.snapshot(max)
	if err != nil || n == 0 {
		return nil, err
	}
	out := make([]Record, 0, min(n, 4096))
	err = q.walk(head, n, func(r *bufio.Reader, s segSnap, off int64) (int64, error) {
		rec, size, err := readFrame(r, s.size-off, q.topic)
		if err != nil {
			return 0, err
		}
		q.topic = rec.Topic
		out = append(out, rec)
		q.peekEnds = append(q.peekEnds, position{s.seg, off + size})
		return size, nil
	})
	if err != nil {
		q.peekEnds = q.peekEnds[:0]
		return nil, err
	}
	return out, nil
}

// Ack records that the first n un-acked records (those the last Peek
// returned, or the first n of them) were delivered. It deletes segment
// files that are now wholly acked and then durably moves the cursor past
// the n records, overwriting the cursor file in place: it needs no free
// space, so a full filesystem still drains. If it returns an error the
// cursor may not have moved, or moved only to the start of a segment: Peek
// again to see what remains; those records will be delivered again (at
// least once).
func (q *Queue) Ack(n int) error {
	q.rmu.Lock()
	defer q.rmu.Unlock()
	ends := q.peekEnds
	q.peekEnds = q.peekEnds[:0]
	if n < 0 {
		return fmt.Errorf("spool: ack %d records", n)
	}
	q.mu.Lock()
	closed, unacked, seq := q.closed, q.nextSeq-q.headSeq, q.headSeq
	q.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if uint64(n) > unacked {
		return fmt.Errorf("spool: ack %d records, only %d are un-acked", n, unacked)
	}
	if n == 0 {
		return nil
	}

	// Find where the n records end: from the last Peek if it went that
	// far, else by stepping over frame headers on disk.
	var to position
	if n <= len(ends) {
		to = ends[n-1]
	} else {
		_, head, err := q.snapshot(n)
		if err != nil {
			return err
		}
		skip := n
		if len(ends) > 0 {
			head, skip = ends[len(ends)-1], n-len(ends)
		}
		err = q.walk(head, skip, func(r *bufio.Reader, s segSnap, off int64) (int64, error) {
			size, err := skipFrame(r, s.size-off)
			to = position{s.seg, off + size}
			return size, err
		})
		if err != nil {
			return err
		}
	}
	newSeq := seq + uint64(n)

	// Delete the segments wholly acked first: their records are delivered,
	// and the space is free for Append as soon as may be. If we crash
	// before the cursor is written, Open finds a cursor older than the
	// first segment and starts at that segment.
	q.mu.Lock()
	var drop []*segment
	for len(q.segs) > 0 && q.segs[0] != to.seg {
		drop = append(drop, q.detachHeadLocked()...)
	}
	if len(q.segs) == 0 {
		q.mu.Unlock()
		q.removeFiles(drop)
		return fmt.Errorf("spool: ack: segment %s vanished", to.seg.path)
	}
	last := len(q.segs) == 1
	if to.off == to.seg.size && (!last || !q.inflight) {
		drop = append(drop, q.detachHeadLocked()...)
	}
	q.mu.Unlock()
	q.removeFiles(drop)

	// The n records are delivered (Kafka acknowledged them); once the
	// cursor is durable they are never replayed. A crash before this write
	// replays them: at least once.
	if err := q.cur.write(newSeq); err != nil {
		return err
	}

	q.mu.Lock()
	if len(q.segs) > 0 && q.segs[0] == to.seg {
		q.headOff, q.headSeq = to.off, newSeq
	}
	q.mu.Unlock()
	return nil
}

// snapshot returns how many of up to want records can be read and the
// head position, and fills q.snap with the segments and their committed
// sizes. The caller holds rmu.
func (q *Queue) snapshot(want int) (int, position, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return 0, position{}, ErrClosed
	}
	n := min(uint64(max(want, 0)), q.nextSeq-q.headSeq)
	q.snap = q.snap[:0]
	for _, s := range q.segs {
		q.snap = append(q.snap, segSnap{s, s.size})
	}
	if n == 0 {
		return 0, position{}, nil
	}
	return int(n), position{q.segs[0], q.headOff}, nil
}

// walk calls step for n consecutive frames from position from, across the
// segments in q.snap. step reads one frame from r, which is positioned at
// off in s, and returns its size. The caller holds rmu.
func (q *Queue) walk(from position, n int, step func(r *bufio.Reader, s segSnap, off int64) (int64, error)) error {
	i := 0
	for i < len(q.snap) && q.snap[i].seg != from.seg {
		i++
	}
	off := from.off
	for ; n > 0 && i < len(q.snap); i, off = i+1, 0 {
		s := q.snap[i]
		if off >= s.size {
			continue
		}
		if err := q.readAt(s, off); err != nil {
			return err
		}
		for n > 0 && off < s.size {
			size, err := step(q.br, s, off)
			if err != nil {
				var fe *frameError
				if errors.As(err, &fe) {
					return &CorruptError{Path: s.seg.path, Offset: off, Reason: fe.reason}
				}
				return fmt.Errorf("spool: read %s at offset %d: %w", s.seg.path, off, err)
			}
			off += size
			n--
		}
	}
	q.br.Reset(nil)
	if n > 0 {
		return fmt.Errorf("spool: %d records missing from the segment files", n)
	}
	return nil
}

// readAt points q.br at offset off of s, up to its committed size.
func (q *Queue) readAt(s segSnap, off int64) error {
	if q.rseg != s.seg {
		if q.rf != nil {
			q.rf.Close()
			q.rf, q.rseg = nil, nil
		}
		f, err := q.fs.OpenFile(s.seg.path, os.O_RDONLY, 0)
		if err != nil {
			return fmt.Errorf("spool: %w", err)
		}
		q.rf, q.rseg = f, s.seg
	}
	q.br.Reset(io.NewSectionReader(q.rf, off, s.size-off))
	return nil
}

// Len returns the number of un-acked records.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return int(q.nextSeq - q.headSeq)
}

// Bytes returns the bytes the segment files take on disk: the committed
// size of every segment not yet deleted, acked records included.
func (q *Queue) Bytes() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.bytes
}

// Close waits for running calls to finish, then closes the files and
// releases the directory lock. Everything appended stays on disk for the
// next Open. Later calls return ErrClosed; Close again returns nil.
func (q *Queue) Close() error {
	q.wmu.Lock()
	defer q.wmu.Unlock()
	q.rmu.Lock()
	defer q.rmu.Unlock()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil
	}
	q.closed = true
	var errs []error
	for _, s := range q.segs {
		if s.wf != nil {
			errs = append(errs, s.wf.Close())
			s.wf = nil
		}
	}
	if q.rf != nil {
		errs = append(errs, q.rf.Close())
		q.rf, q.rseg = nil, nil
	}
	errs = append(errs, q.cur.f.Close(), q.dirF.Close(), q.lockF.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("spool: close: %w", err)
	}
	return nil
}

// FrameSize is how many bytes r takes in the spool.
func FrameSize(r Record) int64 {
	return headerLen + topicLenSize + int64(fieldLen(r)) + int64(len(r.Value))
}

// Room returns how many bytes of frames (see FrameSize) Append could still
// take now: the smaller of what Config.MaxBytes and the filesystem's
// reserve (Config.MinFreeBytes) leave. Where free space cannot be read,
// only MaxBytes counts. Other writers to the filesystem can make it
// smaller at any time; the reserve is the margin for that.
func (q *Queue) Room() int64 {
	q.mu.Lock()
	room := q.maxBytes - q.bytes
	q.mu.Unlock()
	if q.minFree >= 0 {
		if free, _, err := q.diskSpace(); err == nil {
			room = min(room, free-q.minFree-roomSlack)
		}
	}
	return max(room, 0)
}

// roomSlack is what Room keeps back for the filesystem's block rounding:
// frames fill the active segment's last block and a new segment's first
// one, so the free space falls by up to a block more than the frames'
// bytes each time (64 KiB covers common block sizes).
const roomSlack = 64 << 10
