package filesink

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/objstore"
	"github.com/eventlogging/eventlogging/internal/sink"
	"github.com/eventlogging/eventlogging/internal/vfs"
)

// Format is the file format a Sink writes.
type Format string

// The formats.
const (
	// JSONLines writes one JSON object per line, gzip-compressed
	// (part-….jsonl.gz): the record value as consumed, re-encoded compactly
	// only when it spans several lines.
	JSONLines Format = "jsonl.gz"
	// Parquet writes one Parquet file per schema version (part-….<schema>.parquet)
	// with a schema built from the registry's JSON Schema.
	Parquet Format = "parquet"
)

// Defaults of the Config fields.
const (
	DefaultMaxFileBytes  = 128 << 20
	DefaultMaxFileAge    = 10 * time.Minute
	DefaultLateness      = time.Hour
	DefaultMaxOpenFiles  = 32
	DefaultRowGroupBytes = 8 << 20
)

// Schemas resolves the schema of an event for the Parquet format
// (sink.Schemas); a transient error fails Write, which is retried.
type Schemas = sink.Schemas

// AvroDecoder decodes a record in the Avro wire format back to the event
// it encoded (sink.AvroDecoder).
type AvroDecoder = sink.AvroDecoder

// Config configures a Sink. Zero values take the documented defaults.
type Config struct {
	// Root is where the sink publishes; required: a local directory (a
	// path or file:///path) the sink owns, or a distributed store,
	// s3://BUCKET/PREFIX?endpoint=…&region=…&use_path_style=true or
	// hdfs://NAMENODE:PORT/PATH (see objstore.Open). The layout, described
	// in the package documentation, is the same on all of them.
	Root string
	// Staging is the local directory where a distributed target's files
	// are written before they are uploaded; default DefaultStaging(Root).
	// One sink process per staging directory (it is locked). Unused for a
	// local root.
	Staging string
	// Store, if set, is the distributed store to publish to (Root then
	// only names it in messages); for tests with objstore.Dir.
	Store objstore.Store
	// Format of the data files; required.
	Format Format
	// MaxFileBytes rotates (publishes) a Kafka partition's files once one of
	// them holds this many bytes; default 128 MiB. Checked after each
	// batch, so a file may exceed it by one batch. For JSON lines it counts
	// compressed bytes as the compressor emits them (it emits nothing until
	// about 64 KiB of uncompressed input); for Parquet it is parquet-go's estimate (uncompressed
	// for the current row group).
	MaxFileBytes int64
	// MaxFileAge publishes a Kafka partition's files this long after the
	// first of them was opened; default 10 minutes. It bounds how late data
	// becomes visible (and how much is consumed again after a crash).
	MaxFileAge time.Duration
	// Lateness is how long after an hour ends records of that hour are still
	// expected; default 1 hour. See CloseHours.
	Lateness time.Duration
	// IdleAfter: a Kafka partition that delivered no record for this long
	// does not hold back closing hours; default Lateness.
	IdleAfter time.Duration
	// MaxOpenFiles bounds the files open at once (and so memory); opening
	// one more first publishes the least recently written partition's
	// files. Default 32. See the package documentation for memory.
	MaxOpenFiles int
	// RowGroupBytes (Parquet) flushes a row group once the rows buffered in
	// memory for a file reach about this size (uncompressed); default 8 MiB.
	RowGroupBytes int64
	// Schemas resolves event schemas; required for Parquet, unused for JSON
	// lines.
	Schemas Schemas
	// Avro decodes records in the Avro wire format (Event Platform
	// streams with format avro), which are then written exactly as the
	// same event from a JSON stream. Nil: such records are poison.
	Avro AvroDecoder
	// Logger; default slog.Default().
	Logger *slog.Logger
	// Published, if set, is called with the records of a topic that a
	// checkpoint (or Open, finishing a crashed checkpoint's renames) made
	// visible to readers, once per checkpoint of a Kafka partition, with
	// the Sink's lock held: it must not call the Sink. For metrics
	// (sink.Metrics.Published).
	Published func(topic string, records int)
	// Now is the clock for file age, idleness and closing hours; default
	// time.Now.
	Now func() time.Time
	// FS is the file system of the local root, or of the staging
	// directory of a distributed target (whose store is written through
	// objstore, not FS); default vfs.OS. Tests pass a vfs.Mem to simulate
	// power losses. Staged files are uploaded by their path on vfs.OS, read
	// whole into memory on any other FS.
	FS vfs.FS

	// hook, set by tests, is called at the crash points of a checkpoint
	// (see crashPoint); a non-nil error aborts the checkpoint there.
	hook func(point string) error
}

// Crash points at which tests stop a checkpoint (Config.hook).
const (
	pointWritten   = "written"   // records appended to temp files, nothing published
	pointSynced    = "synced"    // temp files complete and fsynced, no manifest
	pointManifest  = "manifest"  // manifest durable, no file renamed
	pointRenamed   = "renamed"   // after each rename (so also mid-rename)
	pointPublished = "published" // renamed and directories fsynced
)

// Poison is a record that cannot be placed in any file, with the reason.
// The caller (sink.Run) sends it to the error topic.
type Poison = sink.Poison

// Result is the outcome of one Write.
type Result struct {
	// Written counts the records appended to files (not yet published).
	Written int
	// Poison lists the records that cannot be written, in batch order.
	Poison []Poison
}

// Errors callers branch on.
var (
	// ErrBroken is wrapped by every error after a file could not be written
	// or published: records accepted earlier may be lost from the temp
	// files, so the sink refuses further writes. The runner must stop
	// consuming, Close the sink and Open it again: the new sink's
	// StartOffsets resumes after the last published record, so nothing is
	// lost or duplicated.
	ErrBroken = errors.New("filesink: broken by an I/O error (reopen to recover)")
	// ErrClosed is returned by calls after Close.
	ErrClosed = errors.New("filesink: closed")
)

// tp names a Kafka partition.
type tp struct {
	topic     string
	partition int32
}

// Sink writes Kafka records to hour-partitioned files and publishes them
// exactly once in effect (see the package documentation). Its methods are
// safe for concurrent use; they serialise on one mutex.
type Sink struct {
	cfg   Config
	log   *slog.Logger
	root  string
	nonce string // distinguishes this process's temp files

	mu    sync.Mutex
	parts map[tp]*partState
	hours map[string]*hourState // per topic
	open  int                   // files open
	seq   uint64                // temp file and LRU sequence
	pq    map[string]*pqSchema
	// pqDirect caches the direct path's schemas by header bytes
	// (directSchema); directKey is its lookup buffer.
	pqDirect  map[string]*pqSchema
	directKey []byte
	// mapPathOnly: tests, every record takes the map path.
	mapPathOnly bool
	// badTopic caches reservedTopic per topic seen.
	badTopic map[string]bool
	broken   error
	closed   bool
	lock     io.Closer
	fs       vfs.FS // Config.FS
	// store is the distributed store the files are published to; nil for
	// a local root. root is then the staging directory.
	store     objstore.Store
	ownsStore bool
}

// partState is the sink's state of one Kafka partition.
type partState struct {
	tp
	published int64 // last offset of the manifest; -1 when there is none
	last      int64 // last offset appended or reported as poison; >= published
	files     map[fileKey]*openFile
	openedAt  time.Time // when the first of files was opened
	lastUse   uint64    // s.seq at the last append, for LRU eviction
	due       bool      // a file reached MaxFileBytes
	pending   []Poison  // poison reported but not yet acknowledged
	failed    bool      // a file of the partition could not be written or published
	// publishing is a checkpoint still being uploaded to the store (a
	// distributed target only).
	publishing *remotePub
	// The fence of a distributed store (see claim): the version of the
	// partition's manifest this sink wrote last and the epoch of its
	// claim; claimed is false before a claim and after a revocation;
	// fenced is set once another sink's claim refused a manifest write
	// (the partition's records are skipped until it is assigned again).
	version string
	epoch   int64
	claimed bool
	fenced  bool
	// tomb are files of a fenced-off writer to delete again (manifest's
	// Fenced).
	tomb      []fencedFile
	watermark time.Time // greatest receive time seen
	seenAt    time.Time // wall time of the last record or of the assignment
}

// fileKey identifies one open file of a partition.
type fileKey struct {
	hour   int64  // unix seconds of the hour
	schema string // schema tag (Parquet); "" for JSON lines
}

// Open creates the sink over cfg.Root, after recovering from a crash: it
// finishes the renames of every manifest, deletes the temp files no
// manifest names (their records are consumed again) and loads the offsets
// for StartOffsets. It takes an exclusive lock on the root: one process per
// root.
func Open(cfg Config) (*Sink, error) {
	if cfg.Root == "" {
		return nil, errors.New("filesink: Root is required")
	}
	switch cfg.Format {
	case JSONLines:
	case Parquet:
		if cfg.Schemas == nil {
			return nil, errors.New("filesink: Schemas is required for the Parquet format")
		}
	default:
		return nil, fmt.Errorf("filesink: unknown format %q (want %q or %q)", cfg.Format, JSONLines, Parquet)
	}
	if cfg.MaxFileBytes <= 0 {
		cfg.MaxFileBytes = DefaultMaxFileBytes
	}
	if cfg.MaxFileAge <= 0 {
		cfg.MaxFileAge = DefaultMaxFileAge
	}
	if cfg.Lateness <= 0 {
		cfg.Lateness = DefaultLateness
	}
	if cfg.IdleAfter <= 0 {
		cfg.IdleAfter = cfg.Lateness
	}
	if cfg.MaxOpenFiles <= 0 {
		cfg.MaxOpenFiles = DefaultMaxOpenFiles
	}
	if cfg.RowGroupBytes <= 0 {
		cfg.RowGroupBytes = DefaultRowGroupBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.FS == nil {
		cfg.FS = vfs.OS
	}
	var store objstore.Store
	var local string
	if cfg.Store != nil || objstore.IsRemote(cfg.Root) {
		var err error
		if store, err = openStore(&cfg); err != nil {
			return nil, fmt.Errorf("filesink: %w", err)
		}
		local = cfg.Staging
		if local == "" {
			local = DefaultStaging(cfg.Root)
		}
	} else {
		var err error
		if local, err = objstore.LocalPath(cfg.Root); err != nil {
			return nil, fmt.Errorf("filesink: %w", err)
		}
	}
	root, err := filepath.Abs(local)
	if err != nil {
		return nil, fmt.Errorf("filesink: root: %w", err)
	}
	var nonce [6]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, fmt.Errorf("filesink: nonce: %w", err)
	}
	s := &Sink{
		cfg:       cfg,
		log:       cfg.Logger.With("component", "filesink", "format", string(cfg.Format)),
		root:      root,
		nonce:     hex.EncodeToString(nonce[:]),
		parts:     map[tp]*partState{},
		hours:     map[string]*hourState{},
		pq:        map[string]*pqSchema{},
		pqDirect:  map[string]*pqSchema{},
		badTopic:  map[string]bool{},
		store:     store,
		ownsStore: store != nil && cfg.Store == nil,
		fs:        cfg.FS,
	}
	fail := func(err error) (*Sink, error) {
		if s.ownsStore {
			_ = s.store.Close()
		}
		return nil, fmt.Errorf("filesink: open: %w", err)
	}
	if err := s.fs.MkdirAll(root, 0o755); err != nil {
		return fail(err)
	}
	for _, d := range []string{manifestDir, inprogressDir, hoursDir} {
		if err := mkdirAllSync(s.fs, root, d); err != nil {
			return fail(err)
		}
	}
	s.lock, err = lockRoot(s.fs, filepath.Join(root, lockFile))
	if err != nil {
		return fail(err)
	}
	if store != nil {
		err = s.recoverRemote()
	} else {
		err = s.recover()
	}
	if err != nil {
		s.lock.Close()
		if s.ownsStore {
			_ = s.store.Close()
		}
		return nil, fmt.Errorf("filesink: recover: %w", err)
	}
	return s, nil
}

// StartOffsets returns, for every assigned partition, the offset to resume
// from: one past the last offset published in this root, or 0 (the start of
// the log, as far as retention kept it) when nothing was ever published
// here. Plug it into kafka.BatchConfig.StartOffsets: the group's committed
// offsets must not be used, since a committed record may sit in a temp file
// that a crash discarded.
//
// Files still open for an assigned partition (a rebalance gave it back) are
// published first. Call it only between batches (ConsumeBatches does: a
// rebalance never happens while a batch is in hand), so every earlier Write
// has been acknowledged.
func (s *Sink) StartOffsets(ctx context.Context, assigned map[string][]int32) (map[string]map[int32]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return nil, err
	}
	now := s.cfg.Now()
	// Between batches every poison record has been handled.
	for _, st := range s.parts {
		st.pending = nil
	}
	out := make(map[string]map[int32]int64, len(assigned))
	for topic, ps := range assigned {
		out[topic] = make(map[int32]int64, len(ps))
		for _, p := range ps {
			key := tp{topic, p}
			st := s.part(key)
			// A store that fails is waited for: resuming elsewhere than
			// after the last published record could leave a gap.
			if err := retryStore(ctx, func() error { return s.checkpoint(st) }); err != nil {
				return nil, s.fail(err)
			}
			if s.store != nil {
				// Claim it: the manifest decides where it resumes, and
				// whoever wrote it before is fenced off.
				s.dropPart(st)
				err := retryStore(ctx, func() error { return s.claim(ctx, st, false) })
				if err != nil {
					return nil, s.fail(err)
				}
			}
			st.seenAt = now
			out[topic][p] = st.published + 1
		}
	}
	return out, nil
}

// Write appends the batch's records to the open temp files of their
// (topic, hour, Kafka partition[, schema]) and publishes the files of the
// partitions due for rotation. Records must come in offset order per
// partition, as Kafka delivers them; records at or below an offset already
// written are skipped, so retrying a batch is safe.
//
// A nil error does not mean the records are published: StartOffsets, not
// the group's committed offsets, decides where a restart resumes. Records
// that can never be written are returned in Result.Poison: the caller must
// hand them to the error topic, then acknowledge them with AcknowledgePoison
// (or with its next call to Write or StartOffsets). Until then no checkpoint
// covers them, so a crash re-delivers them rather than losing them, and the
// files of their partitions wait. A batch retried after an error reports its
// poison again.
//
// ctx bounds schema lookups; an error before anything was written (a
// transient schema registry failure) leaves the sink unchanged. An error
// wrapping ErrBroken is fatal to this Sink.
func (s *Sink) Write(ctx context.Context, batch []kafka.Record) (Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return Result{}, err
	}
	now := s.cfg.Now()
	s.acknowledge(batch)
	if err := s.rotate(now, false); err != nil {
		return Result{}, s.fail(err)
	}

	// Plan: decode, place and convert every record without touching a file,
	// so that a transient error leaves nothing half-done.
	var res Result
	plan := make([]placed, 0, len(batch))
	for i := range batch {
		r := &batch[i]
		st := s.part(tp{r.Topic, r.Partition})
		if st.fenced {
			continue // another sink writes it now
		}
		if r.Offset <= st.last {
			if p, ok := st.pendingAt(r.Offset); ok {
				res.Poison = append(res.Poison, p)
			}
			continue
		}
		pl, err := s.place(ctx, r)
		if err != nil {
			return Result{}, err
		}
		pl.st = st
		plan = append(plan, pl)
	}

	// Apply.
	touched := map[*openFile]bool{}
	for i := range plan {
		pl := &plan[i]
		st := pl.st
		if pl.reason != "" {
			p := Poison{Record: *pl.rec, Reason: pl.reason}
			st.pending = append(st.pending, p)
			res.Poison = append(res.Poison, p)
			st.last = pl.rec.Offset
			continue
		}
		f, err := s.file(st, fileKey{hour: pl.hour, schema: pl.tag}, pl, now)
		if err != nil {
			return Result{}, s.fail(err)
		}
		if err := f.w.append(pl); err != nil {
			st.failed = true
			return Result{}, s.fail(fmt.Errorf("append to %s: %w", f.tmp, err))
		}
		if f.first < 0 {
			f.first = pl.rec.Offset
		}
		f.last = pl.rec.Offset
		f.records++
		touched[f] = true
		st.last = pl.rec.Offset
		s.seq++
		st.lastUse = s.seq
		st.seenAt = now
		if pl.dt.After(st.watermark) {
			st.watermark = pl.dt
		}
		res.Written++
	}
	for f := range touched {
		if f.done {
			continue // published by an eviction during this batch
		}
		if err := f.w.flush(); err != nil {
			f.st.failed = true
			return Result{}, s.fail(fmt.Errorf("write %s: %w", f.tmp, err))
		}
		if f.w.size() >= s.cfg.MaxFileBytes {
			f.st.due = true
		}
	}
	if err := s.hookAt(pointWritten); err != nil {
		return Result{}, s.fail(err)
	}
	if err := s.rotate(now, false); err != nil {
		return Result{}, s.fail(err)
	}
	return res, nil
}

// WriteRecords is Write as sink.Run calls it (sink.Sink): it returns the
// poison records, and an error wrapping ErrBroken also wraps sink.ErrFatal,
// which stops the runner; the next Open resumes from StartOffsets.
func (s *Sink) WriteRecords(ctx context.Context, batch []kafka.Record) ([]Poison, error) {
	res, err := s.Write(ctx, batch)
	return res.Poison, fatal(err)
}

// AcknowledgePoison tells the sink that the error topic acknowledged
// poison records Write returned (sink.Acknowledger; sink.Run calls it after
// sending them): checkpoints may now cover their offsets, so their
// partitions' files publish on schedule (MaxFileAge, hour close) even if
// no other record follows. Records not pending any more are ignored. It
// does no I/O: the next Write or CloseHours publishes what is due.
func (s *Sink) AcknowledgePoison(poison []Poison) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range poison {
		st, ok := s.parts[tp{p.Record.Topic, p.Record.Partition}]
		if !ok {
			continue
		}
		st.pending = slices.DeleteFunc(st.pending, func(q Poison) bool { return q.Record.Offset == p.Record.Offset })
	}
}

// Maintain is CloseHours as sink.Run calls it (sink.Maintainer), on a
// timer: an error wrapping ErrBroken also wraps sink.ErrFatal.
func (s *Sink) Maintain(ctx context.Context) error {
	return fatal(s.CloseHours(ctx))
}

// The runner's view of a Sink.
var (
	_ sink.Sink         = (*Sink)(nil)
	_ sink.Resumer      = (*Sink)(nil)
	_ sink.Maintainer   = (*Sink)(nil)
	_ sink.Acknowledger = (*Sink)(nil)
	_ sink.Revoker      = (*Sink)(nil)
)

// fatal marks an error wrapping ErrBroken as fatal to the runner.
func fatal(err error) error {
	if errors.Is(err, ErrBroken) {
		return fmt.Errorf("%w: %w", sink.ErrFatal, err)
	}
	return err
}

// Close publishes every open file and releases the root. Files of a
// partition whose last poison records were not acknowledged (the runner's
// last batch failed) are discarded instead: they are consumed again after
// the restart. After ErrBroken, Close publishes the partitions that are
// intact. Close is idempotent.
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for _, st := range s.sortedParts() {
		if len(st.pending) > 0 || st.failed {
			s.log.Warn("discarding unpublished files; they are consumed again after the restart",
				"topic", st.topic, "partition", st.partition, "from_offset", st.published+1, "to_offset", st.last)
			s.discard(st)
			continue
		}
		if err := s.checkpoint(st); err != nil {
			errs = append(errs, err)
			s.discard(st)
		}
	}
	if s.lock != nil {
		s.lock.Close()
	}
	if s.ownsStore {
		errs = append(errs, s.store.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("filesink: close: %w", err)
	}
	return nil
}

// usable reports why the sink cannot be used, if it cannot.
func (s *Sink) usable() error {
	if s.closed {
		return ErrClosed
	}
	return s.broken
}

// fail marks the sink broken by err and returns the error to report.
func (s *Sink) fail(err error) error {
	var se *storeError
	if errors.As(err, &se) {
		// The store failed, not the sink: the checkpoint is retried.
		return err
	}
	if s.broken == nil {
		s.broken = fmt.Errorf("%w: %w", ErrBroken, err)
		s.log.Error("file sink broken; reopen it to recover", "err", err)
	}
	return s.broken
}

// hookAt runs the test hook at a crash point.
func (s *Sink) hookAt(point string) error {
	if s.cfg.hook == nil {
		return nil
	}
	return s.cfg.hook(point)
}

// part returns the state of a partition, creating it when new.
func (s *Sink) part(key tp) *partState {
	st, ok := s.parts[key]
	if !ok {
		st = &partState{tp: key, published: -1, last: -1}
		s.parts[key] = st
	}
	return st
}

// sortedParts returns the partitions in a stable order.
func (s *Sink) sortedParts() []*partState {
	out := make([]*partState, 0, len(s.parts))
	for _, st := range s.parts {
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b *partState) int {
		return cmp.Or(strings.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
	})
	return out
}

// acknowledge clears the poison reported by the previous Write and not yet
// acknowledged (AcknowledgePoison): the caller handled it, unless this
// batch retries the records that carried it.
func (s *Sink) acknowledge(batch []kafka.Record) {
	var retried map[tp]bool
	for i := range batch {
		r := &batch[i]
		st, ok := s.parts[tp{r.Topic, r.Partition}]
		if ok && len(st.pending) > 0 && r.Offset <= st.last {
			if retried == nil {
				retried = map[tp]bool{}
			}
			retried[st.tp] = true
		}
	}
	for key, st := range s.parts {
		if len(st.pending) > 0 && !retried[key] {
			st.pending = nil
		}
	}
}

// pendingAt returns the unacknowledged poison record at offset off.
func (st *partState) pendingAt(off int64) (Poison, bool) {
	for _, p := range st.pending {
		if p.Record.Offset == off {
			return p, true
		}
	}
	return Poison{}, false
}

// rotate publishes the partitions due for rotation: a file reached
// MaxFileBytes or the oldest is MaxFileAge old (or all of them, with all).
// Partitions with unacknowledged poison wait.
func (s *Sink) rotate(now time.Time, all bool) error {
	for _, st := range s.sortedParts() {
		if len(st.files) == 0 && st.last == st.published {
			continue
		}
		if len(st.pending) > 0 {
			continue
		}
		if all || st.due || len(st.files) == 0 || !now.Before(st.openedAt.Add(s.cfg.MaxFileAge)) {
			if err := s.checkpoint(st); err != nil {
				return err
			}
		}
	}
	return nil
}

// file returns the open file of st for key, opening it (and first making
// room under MaxOpenFiles) when needed.
func (s *Sink) file(st *partState, key fileKey, pl *placed, now time.Time) (*openFile, error) {
	if f, ok := st.files[key]; ok {
		return f, nil
	}
	if s.open >= s.cfg.MaxOpenFiles {
		if err := s.evict(); err != nil {
			return nil, err
		}
		// Publishing st itself is allowed: its records so far are complete.
	}
	f, err := s.create(st, key, pl)
	if err != nil {
		return nil, err
	}
	if st.files == nil {
		st.files = map[fileKey]*openFile{}
	}
	if len(st.files) == 0 {
		st.openedAt = now
	}
	st.files[key] = f
	s.open++
	return f, nil
}

// evict publishes the least recently written partition that may be
// published. When none may (all hold unacknowledged poison), the limit is
// exceeded until the next Write.
func (s *Sink) evict() error {
	var victim *partState
	for _, st := range s.parts {
		if len(st.files) == 0 || len(st.pending) > 0 {
			continue
		}
		if victim == nil || st.lastUse < victim.lastUse {
			victim = st
		}
	}
	if victim == nil {
		return nil
	}
	return s.checkpoint(victim)
}
