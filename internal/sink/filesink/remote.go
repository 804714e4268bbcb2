package filesink

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/eventlogging/eventlogging/internal/objstore"
	"github.com/eventlogging/eventlogging/internal/vfs"
)

// Publishing to a distributed store (Config.Root an s3:// or hdfs:// URL,
// or Config.Store): temp files are written and finished on local disk (the
// staging directory, Config.Staging), then uploaded under their final
// names; the manifests, the hours state and the _SUCCESS markers live in
// the store under the same keys as in a local root. There is no rename
// across the store, so a checkpoint is a two-phase publish:
//
//  1. finish and fsync each temp file (as locally);
//  2. put the manifest with the checkpoint pending: {last_offset: the
//     previous one, pending: {last_offset, files: [{tmp, final}]}};
//  3. upload each file to its final key (one PUT or a multipart upload,
//     atomic for readers; the key is named by what it covers, so repeating
//     an upload writes the same object);
//  4. put the manifest with the checkpoint done: {last_offset, files};
//  5. delete the temp files.
//
// Open resolves a pending manifest: when every file is either still in the
// staging directory (it is uploaded again) or already in the store, the
// checkpoint is rolled forward; otherwise (the staging directory was lost
// with files not yet uploaded) it is rolled back: the uploaded files of it
// are deleted and consumption resumes after the previous last_offset.
// Either way every record at or below last_offset is in exactly one
// published object, and no object holds a record above it. Multipart
// uploads a killed process left are aborted at Open.
//
// Several sinks may share one store (two hosts running the same unit, a
// second `eventlogging sink` by hand, a consumer group of several): each
// partition has one writer at a time, and the store enforces it. A sink
// claims a partition when Kafka assigns it (StartOffsets): it reads the
// manifest with its version, resolves a checkpoint the previous writer left
// pending, and writes the manifest back naming itself as writer at the next
// epoch, with a conditional write (objstore's PutIf: S3 If-Match or
// If-None-Match; HDFS and Dir under a lock file created exclusively). Every
// later manifest write of the partition (steps 2 and 4) is conditional on
// the version this sink wrote last, so another sink's claim fences this one
// off: its next step 2 is refused before anything is uploaded, or its step
// 4 after; it then drops what it holds of the partition and skips its
// records until Kafka assigns it again (the new writer consumes them from
// the manifest's last_offset). It resumes from the manifest read at the
// claim, never from offsets loaded earlier.
//
// A fenced writer may have been uploading when its successor rolled its
// pending checkpoint back: the successor deletes those files at the claim
// and keeps their keys in the manifest (Fenced), deleting them again after
// each of its own checkpoints for fenceGrace (a fenced upload ends within
// storeTimeout), unless it publishes the same key itself (the same name is
// the same records). A revoked partition's files are published first when
// the rebalance allows (nobody consumes it before), dropped when the
// session was lost. Unfinished uploads are aborted only for the partitions
// a sink claims.
//
// A store that fails (unreachable, throttling) does not break the sink: the
// checkpoint stays pending in memory, Write and CloseHours return the
// error (the runner retries the batch with backoff, so nothing more is
// consumed), and the next call goes on from the step that failed.

// storeError marks a failure of the distributed store: transient, retried
// from where it stopped, never ErrBroken.
type storeError struct{ err error }

func (e *storeError) Error() string { return "file sink store: " + e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

// storeTimeout bounds one call to the store (an upload is one call).
var storeTimeout = 5 * time.Minute

// callTimeout bounds one small call to the store (a manifest read or
// conditional write, an existence check, a delete): each has its own
// deadline, so a slow store fails one call, not a whole recovery.
var callTimeout = 30 * time.Second

// call runs fn under its own deadline d within ctx.
func call(ctx context.Context, d time.Duration, fn func(context.Context) error) error {
	c, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return fn(c)
}

// fenceGrace is how long a rolled-back file of a fenced writer is deleted
// again: longer than an upload it may have had in flight (storeTimeout).
const fenceGrace = 10 * time.Minute

// claimAttempts bounds a claim's rounds of read and conditional write when
// other sinks keep changing the manifest.
const claimAttempts = 10

// errFenced is returned inside a checkpoint when another sink's claim
// refused its manifest write: the partition was dropped, not published.
var errFenced = errors.New("partition fenced off by another sink")

// writerMark names a partition's writer in its manifest.
type writerMark struct {
	ID    string `json:"id"`    // the sink's nonce, one per process
	Epoch int64  `json:"epoch"` // raised by every claim
}

// fencedFile is a rolled-back file of a fenced-off writer.
type fencedFile struct {
	Key   string    `json:"key"`
	Until time.Time `json:"until"`
}

// remotePub is a checkpoint of a partition being published to the store.
type remotePub struct {
	m        manifest // Pending set until step 4
	files    []*openFile
	put      bool // step 2 done
	uploaded int  // files of m.Pending.Files uploaded
}

// pendingCheckpoint is what a manifest holds while its checkpoint is
// being uploaded.
type pendingCheckpoint struct {
	LastOffset int64           `json:"last_offset"`
	Files      []manifestEntry `json:"files"`
}

// DefaultStaging returns the staging directory of a target when
// Config.Staging is empty: a directory of the system's temp directory named
// after the target. Losing it (a reboot that clears /tmp) costs only
// records consumed again.
func DefaultStaging(target string) string {
	sum := sha256.Sum256([]byte(target))
	return filepath.Join(os.TempDir(), "eventlogging-filesink-"+hex.EncodeToString(sum[:6]))
}

// openStore connects to the store of a remote target and checks it.
func openStore(cfg *Config) (objstore.Store, error) {
	if cfg.Store != nil {
		return cfg.Store, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := objstore.Open(ctx, cfg.Root)
	if err != nil {
		return nil, err
	}
	if err := st.Check(ctx); err != nil {
		_ = st.Close()
		return nil, err
	}
	return st, nil
}

// storeCtx returns the context of one store call.
func storeCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), storeTimeout)
}

// checkpointRemote publishes a partition's files to the store, first
// finishing a checkpoint left pending by a failed call.
func (s *Sink) checkpointRemote(st *partState) error {
	err := s.publishFenced(st)
	if errors.Is(err, errFenced) {
		return nil // dropped; its new writer publishes its records
	}
	return err
}

// publishFenced is checkpointRemote; errFenced means the partition was
// dropped.
func (s *Sink) publishFenced(st *partState) error {
	if st.fenced {
		return errFenced
	}
	if st.publishing != nil {
		if err := s.publishRemote(st); err != nil {
			return err
		}
	}
	if len(st.files) == 0 && st.last == st.published {
		return nil
	}
	if !st.claimed {
		// Written without an assignment (StartOffsets), or with files a
		// claim at Open found: claim now, refusing a manifest that moved
		// since Open.
		if err := s.claim(context.Background(), st, true); err != nil {
			return err
		}
	}
	files := make([]*openFile, 0, len(st.files))
	for _, f := range st.files {
		files = append(files, f)
	}
	slices.SortFunc(files, func(a, b *openFile) int {
		return cmp.Or(cmp.Compare(a.first, b.first), strings.Compare(a.key.schema, b.key.schema))
	})
	pub := &remotePub{
		m:     manifest{Version: 1, Topic: st.topic, Partition: st.partition, LastOffset: st.published},
		files: files,
	}
	pend := &pendingCheckpoint{LastOffset: st.last}
	for _, f := range files {
		f.done = true
		if err := f.w.finish(); err != nil {
			st.failed = true
			return fmt.Errorf("finish %s: %w", f.tmp, err)
		}
		if err := f.f.Sync(); err != nil {
			st.failed = true
			return fmt.Errorf("fsync %s: %w", f.tmp, err)
		}
		if err := f.f.Close(); err != nil {
			st.failed = true
			return fmt.Errorf("close %s: %w", f.tmp, err)
		}
		pend.Files = append(pend.Files, manifestEntry{Tmp: f.tmp, Final: s.finalName(f), First: f.first, Last: f.last, Records: f.records})
	}
	if len(files) > 0 {
		if err := syncDir(s.fs, s.abs(path.Dir(files[0].tmp))); err != nil {
			st.failed = true
			return err
		}
	}
	pub.m.Pending = pend
	// A key this sink publishes is its own, even if a fenced writer
	// uploaded it too (the same name holds the same records).
	st.tomb = slices.DeleteFunc(st.tomb, func(t fencedFile) bool {
		return slices.ContainsFunc(pend.Files, func(e manifestEntry) bool { return e.Final == t.Key })
	})
	// The files are the checkpoint's now.
	s.releaseFiles(st)
	st.publishing = pub
	if err := s.hookAt(pointSynced); err != nil {
		return err
	}
	return s.publishRemote(st)
}

// publishRemote runs steps 2 to 5 of st's pending checkpoint, from the one
// a failed call stopped at.
func (s *Sink) publishRemote(st *partState) error {
	pub := st.publishing
	if !pub.put {
		if err := s.noteHours(st.topic, pub.files); err != nil {
			return err
		}
		if err := s.putManifest(st, &pub.m); err != nil {
			return err
		}
		pub.put = true
		if err := s.hookAt(pointManifest); err != nil {
			return err
		}
	}
	for pub.uploaded < len(pub.m.Pending.Files) {
		e := pub.m.Pending.Files[pub.uploaded]
		ctx, cancel := storeCtx()
		err := s.upload(ctx, e.Final, e.Tmp)
		cancel()
		if err != nil {
			return &storeError{fmt.Errorf("publish %s: %w", e.Final, err)}
		}
		pub.uploaded++
		if err := s.hookAt(pointRenamed); err != nil {
			return err
		}
	}
	done := manifest{Version: 1, Topic: st.topic, Partition: st.partition, LastOffset: pub.m.Pending.LastOffset,
		Files: pub.m.Pending.Files, Written: s.cfg.Now().UTC()}
	if err := s.putManifest(st, &done); err != nil {
		return err
	}
	if err := s.hookAt(pointPublished); err != nil {
		return err
	}
	s.sweepFenced(st)
	for _, e := range done.Files {
		if err := s.fs.Remove(s.abs(e.Tmp)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("cannot delete uploaded temp file; the next Open does", "file", e.Tmp, "err", err)
		}
	}
	s.notePublished(st.topic, done.Files)
	st.published = done.LastOffset
	st.publishing = nil
	return nil
}

// upload puts the staged temp file tmp (relative to the staging
// directory) under key: by its path (objstore streams it) when the staging
// directory is on the operating system's file system, else read whole
// through Config.FS.
func (s *Sink) upload(ctx context.Context, key, tmp string) error {
	if s.fs == vfs.OS {
		return s.store.PutFile(ctx, key, s.abs(tmp))
	}
	b, err := vfs.ReadFile(s.fs, s.abs(tmp))
	if err != nil {
		return err
	}
	return s.store.Put(ctx, key, b)
}

// putManifest writes st's manifest to the store if it is still the
// version this sink wrote last; errFenced (the partition dropped) when
// another sink claimed it since.
func (s *Sink) putManifest(st *partState, m *manifest) error {
	m.Written = s.cfg.Now().UTC()
	m.Writer = &writerMark{ID: s.nonce, Epoch: st.epoch}
	m.Fenced = st.tomb
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	v, err := s.store.PutIf(ctx, manifestPath(m.Topic, m.Partition), append(b, '\n'), st.version)
	if errors.Is(err, objstore.ErrPrecondition) {
		s.fenceOff(st, err)
		return errFenced
	}
	if err != nil {
		return &storeError{err}
	}
	st.version = v
	return nil
}

// claim makes this sink the writer of st's partition (see the comment at
// the top of this file): it reads the manifest and its version, resolves
// a pending checkpoint, and writes the manifest back with this sink as
// writer at the next epoch, on the condition that nobody wrote it in
// between (else it reads again). Only once that write won does it delete
// the rolled-back files and abort the partition's unfinished uploads. st
// resumes from the manifest's last_offset.
//
// lazy is a claim without an assignment (the first checkpoint of a
// partition written without StartOffsets): it fences st off instead when
// the manifest moved since Open, since st's files may then repeat what
// another sink published.
func (s *Sink) claim(ctx context.Context, st *partState, lazy bool) error {
	key := manifestPath(st.topic, st.partition)
	for attempt := 1; ; attempt++ {
		var b []byte
		var ver string
		err := call(ctx, callTimeout, func(c context.Context) (err error) {
			b, ver, err = s.store.GetVersion(c, key)
			return err
		})
		m := &manifest{Version: 1, Topic: st.topic, Partition: st.partition, LastOffset: -1}
		switch {
		case objstore.IsNotExist(err):
			ver = ""
		case err != nil:
			return &storeError{err}
		default:
			if m, err = parseManifest(key, b); err != nil {
				return err
			}
		}
		if lazy && (m.LastOffset != st.published || m.Pending != nil) {
			return fmt.Errorf("%s/%d was written without an assignment (StartOffsets) and its manifest moved since Open (last offset %d, now %d; pending checkpoint: %v): call StartOffsets first",
				st.topic, st.partition, st.published, m.LastOffset, m.Pending != nil)
		}
		var staged []string
		if m.Pending != nil {
			for _, e := range m.Pending.Files {
				staged = append(staged, s.abs(e.Tmp))
			}
		}
		var undo []string
		resolved := ""
		if m.Pending != nil {
			forward, err := s.resolvePending(ctx, m)
			if err != nil {
				return &storeError{err}
			}
			if forward {
				resolved = "rolled forward"
			} else {
				resolved = "rolled back"
				for _, e := range m.Files {
					undo = append(undo, e.Final)
				}
				m.Files = nil
			}
		}
		epoch, prev := int64(1), "none"
		if m.Writer != nil {
			epoch, prev = m.Writer.Epoch+1, fmt.Sprintf("%s at epoch %d", m.Writer.ID, m.Writer.Epoch)
		}
		m.Writer = &writerMark{ID: s.nonce, Epoch: epoch}
		m.Fenced = s.expireFenced(m.Fenced)
		until := s.cfg.Now().UTC().Add(fenceGrace)
		for _, k := range undo {
			m.Fenced = append(m.Fenced, fencedFile{Key: k, Until: until})
		}
		m.Written = s.cfg.Now().UTC()
		out, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			return err
		}
		var v string
		err = call(ctx, callTimeout, func(c context.Context) (err error) {
			v, err = s.store.PutIf(c, key, append(out, '\n'), ver)
			return err
		})
		if errors.Is(err, objstore.ErrPrecondition) && attempt < claimAttempts {
			continue // another sink wrote it meanwhile: read it again
		}
		if err != nil {
			return &storeError{fmt.Errorf("claim %s: %w", key, err)}
		}
		st.version, st.epoch, st.claimed, st.fenced = v, epoch, true, false
		st.published, st.last = m.LastOffset, m.LastOffset
		st.tomb = m.Fenced
		if resolved == "rolled forward" {
			for _, e := range m.Files {
				s.countPublished(m.Topic, e.Records)
			}
		}
		for _, k := range undo {
			if err := call(ctx, callTimeout, func(c context.Context) error { return s.store.Delete(c, k) }); err != nil {
				s.log.Warn("cannot delete a rolled-back file yet; deleted again after the next checkpoint", "file", k, "err", err)
			}
		}
		for _, p := range staged {
			if err := s.fs.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				s.log.Warn("cannot delete temp file; the next Open does", "file", p, "err", err)
			}
		}
		var aborted int
		err = call(ctx, storeTimeout, func(c context.Context) (err error) {
			aborted, err = s.store.AbortUploads(c, partitionUploads(st.topic, st.partition))
			return err
		})
		if err != nil {
			s.log.Warn("cannot abort the partition's unfinished uploads", "topic", st.topic, "partition", st.partition, "err", err)
		}
		s.log.Info("partition claimed", "store", s.store.String(), "topic", st.topic, "partition", st.partition,
			"epoch", epoch, "previous_writer", prev, "resume_offset", m.LastOffset+1, "pending_checkpoint", cmp.Or(resolved, "none"),
			"unfinished_uploads_aborted", aborted)
		return nil
	}
}

// partitionUploads matches the keys of a partition's published files:
// <topic>/<hour>/part-<partition>-...
func partitionUploads(topic string, partition int32) func(string) bool {
	prefix := fmt.Sprintf("part-%d-", partition)
	return func(key string) bool {
		dir, _, ok := HourOfKey(key)
		return ok && strings.HasPrefix(dir, topic+"/") && strings.Count(dir, "/") == 4 &&
			strings.HasPrefix(path.Base(key), prefix)
	}
}

// fenceOff drops what this sink holds of st's partition after another
// sink claimed it: its open files, its checkpoint in flight and their temp
// files. Its records are skipped until Kafka assigns it here again.
func (s *Sink) fenceOff(st *partState, why error) {
	s.log.Warn("another sink claimed this partition: dropping what this one holds of it; its new writer consumes those records again",
		"topic", st.topic, "partition", st.partition, "epoch", st.epoch, "dropped_offsets_after", st.published, "reason", why)
	s.dropPart(st)
	st.fenced = true
}

// dropPart forgets st's open files and checkpoint in flight, deleting
// their temp files, and its claim.
func (s *Sink) dropPart(st *partState) {
	st.failed = false // the temp files are nobody's now
	s.discard(st)
	if pub := st.publishing; pub != nil {
		for _, f := range pub.files {
			if err := s.fs.Remove(s.abs(f.tmp)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				s.log.Warn("cannot delete temp file; the next Open does", "file", f.tmp, "err", err)
			}
		}
		st.publishing = nil
	}
	st.pending = nil
	st.due = false
	st.claimed, st.version = false, ""
	st.last = st.published
}

// Revoked hands over the partitions taken from this sink when its target
// is a distributed store (sink.Revoker): a revoked partition's files are
// published first (nobody consumes it before Revoked returns), a lost
// one's dropped (another sink may own it already; its fence would refuse
// the publish anyway). Either way the partition is forgotten: a later
// assignment claims it again. A local root is one sink's alone: its
// partitions stay as they are.
func (s *Sink) Revoked(_ context.Context, revoked map[string][]int32, lost bool) {
	if s.store == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for topic, ps := range revoked {
		for _, p := range ps {
			key := tp{topic, p}
			st, ok := s.parts[key]
			if !ok {
				continue
			}
			if !lost && s.usable() == nil && len(st.pending) == 0 {
				if err := s.checkpoint(st); err != nil {
					s.log.Warn("cannot publish a revoked partition's files: dropping them; its new writer consumes those records again",
						"topic", topic, "partition", p, "err", err)
				}
			}
			s.dropPart(st)
			delete(s.parts, key)
		}
	}
}

// sweepFenced deletes again the rolled-back files of a fenced-off writer
// that have not expired, after a checkpoint of st; failures wait for the
// next one.
func (s *Sink) sweepFenced(st *partState) {
	st.tomb = s.expireFenced(st.tomb)
	if len(st.tomb) == 0 {
		return
	}
	for _, t := range st.tomb {
		if err := call(context.Background(), callTimeout, func(c context.Context) error { return s.store.Delete(c, t.Key) }); err != nil {
			s.log.Warn("cannot delete a fenced writer's rolled-back file yet", "file", t.Key, "err", err)
			return
		}
	}
}

// expireFenced drops the entries past their time.
func (s *Sink) expireFenced(files []fencedFile) []fencedFile {
	now := s.cfg.Now()
	return slices.DeleteFunc(slices.Clone(files), func(t fencedFile) bool { return !now.Before(t.Until) })
}

// recoverRemote loads the published offsets and hours, and deletes the
// staging directory's temp files, but for those of checkpoints left
// pending: the claim of whichever sink Kafka assigns the partition to
// resolves them (this one rolls a checkpoint forward from them; another
// one rolls it back). Nothing is claimed here: only an assignment claims,
// so a restarted sink never fences the partition's current writer off.
func (s *Sink) recoverRemote() error {
	ctx := context.Background()
	var objs []objstore.Object
	err := call(ctx, storeTimeout, func(c context.Context) (err error) {
		objs, err = s.store.List(c, manifestDir+"/")
		return err
	})
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, o := range objs {
		if !strings.HasSuffix(o.Key, ".json") {
			continue
		}
		var b []byte
		err := call(ctx, callTimeout, func(c context.Context) (err error) {
			b, err = s.store.Get(c, o.Key)
			return err
		})
		if err != nil {
			return err
		}
		m, err := parseManifest(o.Key, b)
		if err != nil {
			return err
		}
		if want := manifestPath(m.Topic, m.Partition); want != o.Key {
			return fmt.Errorf("manifest %s names %s/%d", o.Key, m.Topic, m.Partition)
		}
		st := s.part(tp{m.Topic, m.Partition})
		st.published, st.last = m.LastOffset, m.LastOffset
		if m.Pending != nil {
			for _, e := range m.Pending.Files {
				keep[filepath.Clean(s.abs(e.Tmp))] = true
			}
		}
	}
	orphans, err := s.clearInprogress(keep)
	if err != nil {
		return err
	}
	// Small state writes a killed sink left unfinished: hours, markers
	// and manifests (a live sink whose write this aborts retries it).
	var aborted int
	err = call(ctx, storeTimeout, func(c context.Context) (err error) {
		aborted, err = s.store.AbortUploads(c, stateUpload)
		return err
	})
	if err != nil {
		return err
	}
	if err := s.loadHoursRemote(ctx); err != nil {
		return err
	}
	if orphans > 0 || aborted > 0 {
		s.log.Info("recovered", "store", s.store.String(), "orphan_temp_files_deleted", orphans,
			"unfinished_state_writes_aborted", aborted)
	}
	return nil
}

// resolvePending decides a pending checkpoint of m: forward (true) when
// every file is either in the staging directory (it is uploaded) or
// already in the store, else back. It changes m accordingly (forward:
// last_offset and files of the checkpoint; back: files are the ones to
// delete, which the caller does once its claim won) and deletes nothing.
func (s *Sink) resolvePending(ctx context.Context, m *manifest) (bool, error) {
	var missing []string
	for _, e := range m.Pending.Files {
		if _, err := s.fs.Stat(s.abs(e.Tmp)); err == nil {
			if err := call(ctx, storeTimeout, func(c context.Context) error { return s.upload(c, e.Final, e.Tmp) }); err != nil {
				return false, err
			}
			continue
		}
		var ok bool
		err := call(ctx, callTimeout, func(c context.Context) (err error) {
			ok, err = s.store.Exists(c, e.Final)
			return err
		})
		if err != nil {
			return false, err
		}
		if !ok {
			missing = append(missing, e.Final)
		}
	}
	forward := len(missing) == 0
	if forward {
		m.LastOffset, m.Files = m.Pending.LastOffset, m.Pending.Files
	} else {
		s.log.Warn("a pending checkpoint's files are neither staged here nor uploaded: undoing it, its records are consumed again",
			"topic", m.Topic, "partition", m.Partition, "missing", missing, "from_offset", m.LastOffset+1)
		m.Files = m.Pending.Files
	}
	m.Pending = nil
	return forward, nil
}

// clearInprogress deletes every temp file of the in-progress directory
// (of the root, or of the staging directory) but those in keep (cleaned
// absolute paths), and returns how many it deleted.
func (s *Sink) clearInprogress(keep map[string]bool) (int, error) {
	orphans := 0
	err := walkFiles(s.fs, s.abs(inprogressDir), func(p string) error {
		if keep[filepath.Clean(p)] {
			return nil
		}
		orphans++
		return s.fs.Remove(p)
	})
	if err != nil {
		return 0, err
	}
	return orphans, mkdirAllSync(s.fs, s.root, inprogressDir)
}

// loadHoursRemote reads every topic's closing state from the store.
func (s *Sink) loadHoursRemote(ctx context.Context) error {
	var objs []objstore.Object
	err := call(ctx, storeTimeout, func(c context.Context) (err error) {
		objs, err = s.store.List(c, hoursDir+"/")
		return err
	})
	if err != nil {
		return err
	}
	for _, o := range objs {
		name := path.Base(o.Key)
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		var b []byte
		err := call(ctx, callTimeout, func(c context.Context) (err error) {
			b, err = s.store.Get(c, o.Key)
			return err
		})
		if err != nil {
			return err
		}
		if err := s.addHours(name, b); err != nil {
			return err
		}
	}
	return nil
}

// putState writes a small state object (hours, _SUCCESS) to the store.
func (s *Sink) putState(key string, b []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if err := s.store.Put(ctx, key, b); err != nil {
		return &storeError{err}
	}
	return nil
}

// parseManifest decodes and checks a manifest read from p.
func parseManifest(p string, b []byte) (*manifest, error) {
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("manifest %s: %w", p, err)
	}
	if m.Version != 1 {
		return nil, fmt.Errorf("manifest %s: unknown version %d", p, m.Version)
	}
	entries := m.Files
	if m.Pending != nil {
		entries = append(slices.Clone(entries), m.Pending.Files...)
	}
	for _, e := range entries {
		if !localPath(e.Tmp) || !localPath(e.Final) {
			return nil, fmt.Errorf("manifest %s: path outside the root: %q -> %q", p, e.Tmp, e.Final)
		}
	}
	return &m, nil
}

// retryStore runs fn until it succeeds, fails other than by the store, or
// ctx ends, backing off between store failures.
func retryStore(ctx context.Context, fn func() error) error {
	wait := time.Second
	for {
		err := fn()
		var se *storeError
		if err == nil || !errors.As(err, &se) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 15*time.Second)
	}
}

// stateUpload matches the keys of the sink's state and markers, whose
// unfinished writes any sink may abort at Open (a live sink whose write
// this aborts retries it): not the data files, whose uploads only a
// partition's claim aborts, nor the probe objects of other sinks' start.
func stateUpload(key string) bool {
	return (strings.HasPrefix(key, stateDir+"/") || path.Base(key) == successFile) && !strings.HasPrefix(key, objstore.ProbePrefix)
}
