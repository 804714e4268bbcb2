package filesink

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/eventlogging/eventlogging/internal/vfs"
)

// The sink's own directories under the root. Their "_" prefix makes Hive,
// Spark and DuckDB skip them, and no Kafka topic may be named like the top
// one (see reservedTopic).
const (
	stateDir      = "_filesink"
	manifestDir   = stateDir + "/manifests"  // <topic>/<partition>.json
	inprogressDir = stateDir + "/inprogress" // <topic>/<partition>/<nonce>-<seq>.tmp
	hoursDir      = stateDir + "/hours"      // <topic>.json
	lockFile      = stateDir + "/lock"
	successFile   = SuccessFile
)

// SuccessFile is the marker of a closed hour partition.
const SuccessFile = "_SUCCESS"

// manifest is the durable record of a Kafka partition's last checkpoint:
// every record up to LastOffset is in exactly one published file, and Files
// are the renames that publish the last checkpoint's files (idempotent, so
// redone on recovery). Paths are slash-separated and relative to the root.
type manifest struct {
	Version    int             `json:"version"`
	Topic      string          `json:"topic"`
	Partition  int32           `json:"partition"`
	LastOffset int64           `json:"last_offset"`
	Files      []manifestEntry `json:"files"`
	Written    time.Time       `json:"written"`
	// Pending is a checkpoint being uploaded to a distributed store (see
	// remote.go); never set in a local root.
	Pending *pendingCheckpoint `json:"pending,omitempty"`
	// Writer is the sink that owns the partition in a distributed store,
	// at the epoch of its claim (see remote.go); never set in a local root.
	Writer *writerMark `json:"writer,omitempty"`
	// Fenced are the files of a fenced-off writer's checkpoint that its
	// successor rolled back and deletes again until they expire (the
	// fenced writer may still be uploading them).
	Fenced []fencedFile `json:"fenced,omitempty"`
}

// manifestEntry is one file of a checkpoint.
type manifestEntry struct {
	Tmp     string `json:"tmp"`
	Final   string `json:"final"`
	First   int64  `json:"first_offset"`
	Last    int64  `json:"last_offset"`
	Records int    `json:"records"`
}

// openFile is a temp file being written.
type openFile struct {
	st      *partState
	key     fileKey
	tmp     string // relative to the root
	f       vfs.File
	w       formatWriter
	first   int64 // -1 until the first record
	last    int64
	records int
	done    bool // finished by a checkpoint
}

// formatWriter encodes records into one file.
type formatWriter interface {
	// append encodes one record (possibly buffering it).
	append(pl *placed) error
	// flush hands buffered records to the encoder.
	flush() error
	// size estimates the file's size in bytes so far.
	size() int64
	// finish writes the trailer (gzip) or footer (Parquet) and flushes
	// everything to the file; the file stays open.
	finish() error
}

// finalName returns the published path of f, relative to the root.
func (s *Sink) finalName(f *openFile) string {
	name := fmt.Sprintf("part-%d-%d-%d", f.st.partition, f.first, f.last)
	if s.cfg.Format == Parquet {
		name += "." + fileTag(f.key.schema) + ".parquet"
	} else {
		name += ".jsonl.gz"
	}
	return hourDir(f.st.topic, f.key.hour) + "/" + name
}

// create opens a new temp file for st and key.
func (s *Sink) create(st *partState, key fileKey, pl *placed) (*openFile, error) {
	dir := path.Join(inprogressDir, st.topic, strconv.Itoa(int(st.partition)))
	if err := mkdirAllSync(s.fs, s.root, dir); err != nil {
		return nil, err
	}
	s.seq++
	rel := fmt.Sprintf("%s/%s-%d.tmp", dir, s.nonce, s.seq)
	fh, err := s.fs.OpenFile(s.abs(rel), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	f := &openFile{st: st, key: key, tmp: rel, f: fh, first: -1}
	if s.cfg.Format == Parquet {
		f.w = newParquetWriter(fh, pl.pq, st.topic, s.cfg.RowGroupBytes)
	} else {
		f.w = newJSONLWriter(fh)
	}
	return f, nil
}

// abs turns a root-relative slash path into an absolute one.
func (s *Sink) abs(rel string) string {
	return filepath.Join(s.root, filepath.FromSlash(rel))
}

// checkpoint publishes every open file of st together with its offsets:
//
//  1. finish and fsync each temp file (and the temp directory);
//  2. write the manifest {last_offset, files: [{tmp, final}]} atomically
//     (temp, fsync, rename, directory fsync);
//  3. rename each temp file to its final name;
//  4. fsync the final directories.
//
// A crash before 2 leaves temp files no manifest names: recovery deletes
// them and the records are consumed again from the previous last_offset+1.
// A crash after 2 leaves renames to finish: recovery finishes them and
// consumption resumes at last_offset+1. Either way every record ends up in
// exactly one published file.
func (s *Sink) checkpoint(st *partState) (err error) {
	if s.store != nil {
		return s.checkpointRemote(st)
	}
	if len(st.files) == 0 && st.last == st.published {
		return nil
	}
	defer func() {
		if err != nil {
			st.failed = true
		}
	}()
	files := make([]*openFile, 0, len(st.files))
	for _, f := range st.files {
		files = append(files, f)
	}
	slices.SortFunc(files, func(a, b *openFile) int {
		return cmp.Or(cmp.Compare(a.first, b.first), strings.Compare(a.key.schema, b.key.schema))
	})

	m := manifest{Version: 1, Topic: st.topic, Partition: st.partition, LastOffset: st.last, Written: s.cfg.Now().UTC()}
	var finalDirs []string
	for _, f := range files {
		f.done = true
		if err := f.w.finish(); err != nil {
			return fmt.Errorf("finish %s: %w", f.tmp, err)
		}
		if err := f.f.Sync(); err != nil {
			return fmt.Errorf("fsync %s: %w", f.tmp, err)
		}
		if err := f.f.Close(); err != nil {
			return fmt.Errorf("close %s: %w", f.tmp, err)
		}
		final := s.finalName(f)
		dir := path.Dir(final)
		if !slices.Contains(finalDirs, dir) {
			if err := mkdirAllSync(s.fs, s.root, dir); err != nil {
				return err
			}
			finalDirs = append(finalDirs, dir)
		}
		m.Files = append(m.Files, manifestEntry{Tmp: f.tmp, Final: final, First: f.first, Last: f.last, Records: f.records})
	}
	if len(files) > 0 {
		if err := syncDir(s.fs, s.abs(path.Dir(files[0].tmp))); err != nil {
			return err
		}
	}
	if err := s.hookAt(pointSynced); err != nil {
		return err
	}
	if err := s.noteHours(st.topic, files); err != nil {
		return err
	}
	if err := s.writeManifest(&m); err != nil {
		return err
	}
	if err := s.hookAt(pointManifest); err != nil {
		return err
	}
	for _, e := range m.Files {
		if err := s.fs.Rename(s.abs(e.Tmp), s.abs(e.Final)); err != nil {
			return fmt.Errorf("publish: %w", err)
		}
		if err := s.hookAt(pointRenamed); err != nil {
			return err
		}
	}
	// The renames are durable once the final directories are synced (the
	// temp directory's side of a rename needs no sync: recovery redoes a
	// rename whose temp file is still there).
	for _, d := range finalDirs {
		if err := syncDir(s.fs, s.abs(d)); err != nil {
			return err
		}
	}
	if err := s.hookAt(pointPublished); err != nil {
		return err
	}

	s.notePublished(st.topic, m.Files)
	s.releaseFiles(st)
	st.published = st.last
	return nil
}

// notePublished logs the files of topic a checkpoint made visible and
// reports their records to Config.Published.
func (s *Sink) notePublished(topic string, files []manifestEntry) {
	records := 0
	for _, e := range files {
		s.log.Debug("published", "file", e.Final, "records", e.Records)
		records += e.Records
	}
	s.countPublished(topic, records)
}

// countPublished reports records of topic made visible to Config.Published.
func (s *Sink) countPublished(topic string, records int) {
	if s.cfg.Published != nil && records > 0 {
		s.cfg.Published(topic, records)
	}
}

// releaseFiles forgets the open files of st, which a checkpoint took:
// new records open new files.
func (s *Sink) releaseFiles(st *partState) {
	s.open -= len(st.files)
	clear(st.files)
	st.due = false
	st.openedAt = time.Time{}
}

// discard drops the open files of st without publishing them; its records
// are consumed again after a restart. The temp files of a failed partition
// are left for the next Open: a failed checkpoint may have made its
// manifest durable, and then they must be published, not deleted.
func (s *Sink) discard(st *partState) {
	for _, f := range st.files {
		f.f.Close()
		if st.failed {
			continue
		}
		if err := s.fs.Remove(s.abs(f.tmp)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("cannot delete temp file; the next Open does", "file", f.tmp, "err", err)
		}
	}
	s.open -= len(st.files)
	clear(st.files)
}

// manifestPath returns the manifest of a partition, relative to the root.
func manifestPath(topic string, partition int32) string {
	return fmt.Sprintf("%s/%s/%d.json", manifestDir, topic, partition)
}

// writeManifest replaces the partition's manifest atomically and durably.
func (s *Sink) writeManifest(m *manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	rel := manifestPath(m.Topic, m.Partition)
	if err := mkdirAllSync(s.fs, s.root, path.Dir(rel)); err != nil {
		return err
	}
	return writeFileAtomic(s.fs, s.abs(rel), append(b, '\n'))
}

// recover finishes the renames of every manifest, deletes orphan temp
// files and loads the published offsets.
func (s *Sink) recover() error {
	topics, err := s.fs.ReadDir(s.abs(manifestDir))
	if err != nil {
		return err
	}
	finished := 0
	for _, td := range topics {
		if !td.IsDir() {
			continue
		}
		dir := path.Join(manifestDir, td.Name())
		// A manifest left being written (.tmp) when the process died: the
		// checkpoint never happened.
		err := s.eachStateFile(dir, func(name string) error {
			m, err := readManifest(s.fs, s.abs(path.Join(dir, name)))
			if err != nil {
				return err
			}
			if m.Topic != td.Name() || name != strconv.Itoa(int(m.Partition))+".json" {
				return fmt.Errorf("manifest %s/%s names %s/%d", dir, name, m.Topic, m.Partition)
			}
			n, err := s.finishRenames(m)
			if err != nil {
				return err
			}
			finished += n
			st := s.part(tp{m.Topic, m.Partition})
			st.published, st.last = m.LastOffset, m.LastOffset
			return nil
		})
		if err != nil {
			return err
		}
	}
	// Whatever is still in progress belongs to no checkpoint.
	orphans, err := s.clearInprogress(nil)
	if err != nil {
		return err
	}
	if err := syncDir(s.fs, s.abs(stateDir)); err != nil {
		return err
	}
	if err := s.loadHours(); err != nil {
		return err
	}
	if finished > 0 || orphans > 0 {
		s.log.Info("recovered", "renames_finished", finished, "orphan_temp_files_deleted", orphans)
	}
	return nil
}

// readManifest reads and checks one manifest of fsys.
func readManifest(fsys vfs.FS, p string) (*manifest, error) {
	b, err := vfs.ReadFile(fsys, p)
	if err != nil {
		return nil, err
	}
	m, err := parseManifest(p, b)
	if err == nil && m.Pending != nil {
		err = fmt.Errorf("manifest %s: a pending upload in a local root", p)
	}
	return m, err
}

// localPath reports whether a manifest path stays under the root.
func localPath(p string) bool {
	return p != "" && !path.IsAbs(p) && path.Clean(p) == p && !strings.HasPrefix(p, "../") && p != ".."
}

// finishRenames publishes the files of a manifest whose renames may not
// all have happened. Idempotent.
func (s *Sink) finishRenames(m *manifest) (int, error) {
	n := 0
	var dirs []string
	for _, e := range m.Files {
		_, err := s.fs.Stat(s.abs(e.Tmp))
		switch {
		case err == nil:
			if err := mkdirAllSync(s.fs, s.root, path.Dir(e.Final)); err != nil {
				return n, err
			}
			if err := s.fs.Rename(s.abs(e.Tmp), s.abs(e.Final)); err != nil {
				return n, err
			}
			n++
			// Visible from now on: the crashed process never counted it.
			s.countPublished(m.Topic, e.Records)
			if !slices.Contains(dirs, path.Dir(e.Final)) {
				dirs = append(dirs, path.Dir(e.Final))
			}
		case errors.Is(err, fs.ErrNotExist):
			if _, err := s.fs.Stat(s.abs(e.Final)); errors.Is(err, fs.ErrNotExist) {
				// Published, then deleted by someone else (retention?).
				s.log.Warn("published file missing", "file", e.Final)
			}
		default:
			return n, err
		}
	}
	for _, d := range dirs {
		if err := syncDir(s.fs, s.abs(d)); err != nil {
			return n, err
		}
	}
	return n, nil
}
