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
const storeTimeout = 5 * time.Minute

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
	if st.publishing != nil {
		if err := s.publishRemote(st); err != nil {
			return err
		}
	}
	if len(st.files) == 0 && st.last == st.published {
		return nil
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
		if err := SyncDir(s.abs(path.Dir(files[0].tmp))); err != nil {
			st.failed = true
			return err
		}
	}
	pub.m.Pending = pend
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
		if err := s.putManifest(&pub.m); err != nil {
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
		err := s.store.PutFile(ctx, e.Final, s.abs(e.Tmp))
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
	if err := s.putManifest(&done); err != nil {
		return err
	}
	if err := s.hookAt(pointPublished); err != nil {
		return err
	}
	for _, e := range done.Files {
		if err := os.Remove(s.abs(e.Tmp)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("cannot delete uploaded temp file; the next Open does", "file", e.Tmp, "err", err)
		}
	}
	s.notePublished(st.topic, done.Files)
	st.published = done.LastOffset
	st.publishing = nil
	return nil
}

// putManifest writes a partition's manifest to the store.
func (s *Sink) putManifest(m *manifest) error {
	m.Written = s.cfg.Now().UTC()
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	ctx, cancel := storeCtx()
	defer cancel()
	if err := s.store.Put(ctx, manifestPath(m.Topic, m.Partition), append(b, '\n')); err != nil {
		return &storeError{err}
	}
	return nil
}

// recoverRemote resolves the manifests a crash left pending, deletes the
// staging directory's temp files, aborts unfinished uploads and loads the
// offsets and hours.
func (s *Sink) recoverRemote() error {
	ctx, cancel := storeCtx()
	defer cancel()
	objs, err := s.store.List(ctx, manifestDir+"/")
	if err != nil {
		return err
	}
	forward, back := 0, 0
	for _, o := range objs {
		if !strings.HasSuffix(o.Key, ".json") {
			continue
		}
		b, err := s.store.Get(ctx, o.Key)
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
		if m.Pending != nil {
			rolled, err := s.resolvePending(ctx, m)
			if err != nil {
				return err
			}
			if rolled {
				forward++
			} else {
				back++
			}
		}
		st := s.part(tp{m.Topic, m.Partition})
		st.published, st.last = m.LastOffset, m.LastOffset
	}
	orphans, err := s.clearInprogress()
	if err != nil {
		return err
	}
	aborted, err := s.store.AbortUploads(ctx)
	if err != nil {
		return err
	}
	if err := s.loadHoursRemote(ctx); err != nil {
		return err
	}
	if forward > 0 || back > 0 || orphans > 0 || aborted > 0 {
		s.log.Info("recovered", "store", s.store.String(), "checkpoints_rolled_forward", forward, "checkpoints_rolled_back", back,
			"orphan_temp_files_deleted", orphans, "unfinished_uploads_aborted", aborted)
	}
	return nil
}

// resolvePending finishes (true) or undoes (false) the checkpoint a
// manifest holds pending, and rewrites the manifest without it.
func (s *Sink) resolvePending(ctx context.Context, m *manifest) (bool, error) {
	var missing []string
	for _, e := range m.Pending.Files {
		if _, err := os.Stat(s.abs(e.Tmp)); err == nil {
			if err := s.store.PutFile(ctx, e.Final, s.abs(e.Tmp)); err != nil {
				return false, err
			}
			s.countPublished(m.Topic, e.Records)
			continue
		}
		ok, err := s.store.Exists(ctx, e.Final)
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
		s.log.Warn("staging directory lost files of a checkpoint not yet uploaded: undoing it, its records are consumed again",
			"topic", m.Topic, "partition", m.Partition, "missing", missing, "from_offset", m.LastOffset+1)
		for _, e := range m.Pending.Files {
			if err := s.store.Delete(ctx, e.Final); err != nil {
				return false, err
			}
		}
		m.Files = nil
	}
	m.Pending = nil
	m.Written = s.cfg.Now().UTC()
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return false, err
	}
	return forward, s.store.Put(ctx, manifestPath(m.Topic, m.Partition), append(b, '\n'))
}

// clearInprogress deletes every temp file of the in-progress directory
// (of the root, or of the staging directory) and returns how many there
// were.
func (s *Sink) clearInprogress() (int, error) {
	orphans := 0
	err := filepath.WalkDir(s.abs(inprogressDir), func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			orphans++
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if err := os.RemoveAll(s.abs(inprogressDir)); err != nil {
		return 0, err
	}
	return orphans, mkdirAllSync(s.root, inprogressDir)
}

// loadHoursRemote reads every topic's closing state from the store.
func (s *Sink) loadHoursRemote(ctx context.Context) error {
	objs, err := s.store.List(ctx, hoursDir+"/")
	if err != nil {
		return err
	}
	for _, o := range objs {
		name := path.Base(o.Key)
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		b, err := s.store.Get(ctx, o.Key)
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
	ctx, cancel := storeCtx()
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
