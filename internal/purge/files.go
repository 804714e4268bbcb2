package purge

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/objstore"
	"github.com/eventlogging/eventlogging/internal/sink/filesink"
)

// File names PurgeFiles reads and writes in an hour partition.
const (
	// SanitisedMarker is created in an hour partition once every file in
	// it is sanitised; later runs skip the partition.
	SanitisedMarker = "_SANITISED"
	// sanitisedSuffix replaces ".jsonl.gz" in the name of a rewritten
	// file, so a rerun interrupted before the marker never rewrites (and
	// hashes) a file twice.
	sanitisedSuffix = ".sanitised.jsonl.gz"
	// The endings of filesink's data files.
	jsonlSuffix   = "." + string(filesink.JSONLines)
	parquetSuffix = "." + string(filesink.Parquet)
	// tmpSuffix ends the temp files of rewrites, hidden by a leading ".".
	tmpSuffix = ".purge.tmp"
)

// PurgeFiles deletes or sanitises the hour partitions of a filesink root
// (<root>/<topic>/year=YYYY/month=MM/day=DD/hour=HH/) whose whole hour is
// older than now − Retention, as filesink.Hours lists them (directories
// starting with "_" or "." under root, such as filesink's _filesink state,
// are not topics).
//
// A partition none of whose records has a schema with a rule is removed
// (renamed to a hidden name first, then deleted). Otherwise each JSON-lines
// file is rewritten record by record: records of schemas without a rule
// are dropped, the others keep only their rule's fields (hashed ones
// hashed) and the bookkeeping fields uuid, dt, timestamp, schema and
// revision. A rewrite goes to a hidden temp file, is fsynced and renamed
// to <name>.sanitised.jsonl.gz, then the original is removed; when every
// file is done, the SanitisedMarker is written and later runs skip the
// partition. Parquet files of schemas without a rule are removed; Parquet
// files of a schema with a rule are rewritten the same way, to
// <name>.sanitised.parquet, with the file's schema unchanged and every
// dropped column NULL (see rewriteParquet).
//
// Errors of one partition do not stop the others; they are joined. An
// interrupted run is finished by running again.
func PurgeFiles(ctx context.Context, root string, p Policy) (Report, error) { //nolint:revive // name fixed by the purge issue's API, read as "purge files"
	var rep Report
	p, err := p.withDefaults()
	if err != nil {
		return rep, err
	}
	fp := &filePurge{p: &p, rep: &rep, cutoff: p.cutoff(),
		log: p.Logger.With("component", "purge", "root", objstore.Redact(root))}
	if objstore.IsRemote(root) {
		return rep, purgeRemote(ctx, root, fp)
	}
	root, err = objstore.LocalPath(root)
	if err != nil {
		return rep, fmt.Errorf("purge: %w", err)
	}
	hours, removing, walkErrs := filesink.Hours(root)
	var errs []error
	for _, err := range walkErrs {
		errs = append(errs, fmt.Errorf("purge: %w", err))
	}
	if !p.DryRun {
		// Hours whose removal was interrupted: finish it.
		for _, dir := range removing {
			if err := os.RemoveAll(dir); err != nil {
				errs = append(errs, fmt.Errorf("purge: %w", err))
			}
		}
	}
	for _, h := range hours {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		if !h.Start.Add(time.Hour).After(fp.cutoff) {
			rep.Partitions++
			if err := fp.partition(h.Dir); err != nil {
				errs = append(errs, fmt.Errorf("purge: partition %s: %w", h.Dir, err))
			}
		}
	}
	return rep, errors.Join(errs...)
}

// filePurge is one PurgeFiles run.
type filePurge struct {
	p      *Policy
	rep    *Report
	cutoff time.Time
	log    *slog.Logger
}

// partition purges one old hour partition.
func (fp *filePurge) partition(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, SanitisedMarker)); err == nil {
		return nil // done by an earlier run
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var jsonl, parquet []string
	for _, e := range entries {
		name := e.Name()
		switch {
		case e.IsDir():
		case strings.HasPrefix(name, ".") && strings.HasSuffix(name, tmpSuffix):
			if !fp.p.DryRun { // a rewrite interrupted before its rename
				if err := os.Remove(filepath.Join(dir, name)); err != nil {
					return err
				}
			}
		case strings.HasSuffix(name, jsonlSuffix) && !strings.HasPrefix(name, "."):
			jsonl = append(jsonl, name)
		case strings.HasSuffix(name, parquetSuffix) && !strings.HasPrefix(name, "."):
			parquet = append(parquet, name)
		}
	}
	keep, err := fp.anyRule(dir, jsonl, parquet)
	if err != nil {
		return err
	}
	if !keep {
		return fp.deletePartition(dir)
	}
	if fp.p.DryRun {
		fp.rep.PartitionsSanitised++
		fp.rep.Actions = append(fp.rep.Actions, fmt.Sprintf(
			"partition %s: sanitise %d JSON-lines and %d Parquet files", dir, len(jsonl), len(parquet)))
		fp.log.Info("partition to sanitise", "partition", dir, "dry_run", true)
		return nil
	}
	var errs []error
	h := fp.p.hasher()
	kept, dropped := 0, 0
	for _, name := range jsonl {
		k, d, err := fp.rewriteJSONL(dir, name, h.Hash)
		kept += k
		dropped += d
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	for _, name := range parquet {
		if _, ok := fp.p.Rules[parquetSchema(name)]; !ok {
			// No rule: the whole file goes, as its records would.
			if err := removeSync(filepath.Join(dir, name), dir); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		k, d, err := fp.rewriteParquet(dir, name, h.Hash)
		kept += k
		dropped += d
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := filesink.WriteFileAtomic(filepath.Join(dir, SanitisedMarker), []byte("sanitised "+fp.p.Now().UTC().Format(time.RFC3339)+"\n")); err != nil {
		return err
	}
	fp.rep.PartitionsSanitised++
	fp.log.Info("partition sanitised", "partition", dir, "records_kept", kept, "records_dropped", dropped)
	return nil
}

// anyRule reports whether a record of the partition has a schema with a
// rule (for Parquet files: whether the schema in the file name has one).
func (fp *filePurge) anyRule(dir string, jsonl, parquet []string) (bool, error) {
	if len(fp.p.Rules) == 0 {
		return false, nil
	}
	for _, name := range parquet {
		if strings.HasSuffix(name, sanitisedParquetSuffix) {
			return true, nil // an interrupted sanitisation: finish it
		}
		if _, ok := fp.p.Rules[parquetSchema(name)]; ok {
			return true, nil
		}
	}
	for _, name := range jsonl {
		if strings.HasSuffix(name, sanitisedSuffix) {
			return true, nil // an interrupted sanitisation: finish it
		}
		found := false
		err := readJSONL(filepath.Join(dir, name), func(rec map[string]any) bool {
			if _, ok := fp.p.Rules[schemaOf(rec)]; ok {
				found = true
				return false
			}
			return true
		})
		if err != nil || found {
			return found, err
		}
	}
	return false, nil
}

// deletePartition removes an hour directory with filesink.RemoveHour:
// renamed to a hidden name first (readers never see half of it), then
// removed, with the day, month and year directories it leaves empty.
func (fp *filePurge) deletePartition(dir string) error {
	if fp.p.DryRun {
		fp.rep.PartitionsDeleted++
		fp.rep.Actions = append(fp.rep.Actions, fmt.Sprintf("partition %s: delete (no record has an allow-listed schema)", dir))
		fp.log.Info("partition to delete", "partition", dir, "dry_run", true)
		return nil
	}
	if err := filesink.RemoveHour(dir); err != nil {
		return err
	}
	fp.rep.PartitionsDeleted++
	fp.log.Info("partition deleted", "partition", dir)
	return nil
}

// rewriteJSONL sanitises one JSON-lines file, returning the records kept
// and dropped.
func (fp *filePurge) rewriteJSONL(dir, name string, hash func(string) string) (kept, dropped int, err error) {
	rw, done, err := startRewrite(dir, name, jsonlSuffix, sanitisedSuffix)
	if done || err != nil {
		return 0, 0, err
	}
	defer func() {
		if err != nil {
			rw.abort()
		}
	}()
	gz := gzip.NewWriter(rw.bw)
	var line []byte
	var werr error
	err = readJSONL(rw.src, func(rec map[string]any) bool {
		rule, ok := fp.p.Rules[schemaOf(rec)]
		if !ok {
			dropped++
			return true
		}
		line = capsule.AppendValue(line[:0], sanitiseRecord(rec, rule, hash))
		line = append(line, '\n')
		if _, werr = gz.Write(line); werr != nil {
			return false
		}
		kept++
		return true
	})
	if err == nil {
		err = werr
	}
	if err != nil {
		return 0, 0, err
	}
	return rw.finish(kept, dropped, gz.Close)
}

// rewriteFile is one file being sanitised: src is rewritten through a
// buffered hidden temp file in its directory, published as final.
type rewriteFile struct {
	dir, src, final, tmpPath string
	tmp                      *os.File
	bw                       *bufio.Writer
}

// startRewrite opens the temp file of the rewrite of name, whose suffix
// becomes finalSuffix. done is true when there is nothing to write: name
// is itself a rewrite (of an earlier, interrupted run), or its rewrite
// exists (a run interrupted after the rename: only the original's removal
// was left, and is done now).
func startRewrite(dir, name, suffix, finalSuffix string) (rw *rewriteFile, done bool, err error) {
	if strings.HasSuffix(name, finalSuffix) {
		return nil, true, nil
	}
	base := strings.TrimSuffix(name, suffix)
	rw = &rewriteFile{dir: dir, src: filepath.Join(dir, name), final: base + finalSuffix, tmpPath: filepath.Join(dir, "."+base+tmpSuffix)}
	if _, err := os.Stat(filepath.Join(dir, rw.final)); err == nil {
		return nil, true, removeSync(rw.src, dir)
	}
	if rw.tmp, err = os.OpenFile(rw.tmpPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644); err != nil {
		return nil, false, err
	}
	rw.bw = bufio.NewWriterSize(rw.tmp, 64<<10)
	return rw, false, nil
}

// abort closes and removes the temp file.
func (rw *rewriteFile) abort() {
	_ = rw.tmp.Close()
	_ = os.Remove(rw.tmpPath)
}

// finish publishes the rewrite: when no record was kept the temp file and
// the original are removed; otherwise the writers are flushed in order
// (then the buffer), the temp file is published as final
// (filesink.PublishFile: fsync, rename, directory fsync), and only then is
// the original removed (so an interrupted run resumes from the rewrite).
func (rw *rewriteFile) finish(kept, dropped int, flush ...func() error) (int, int, error) {
	if kept == 0 {
		rw.abort()
		return 0, dropped, removeSync(rw.src, rw.dir)
	}
	for _, f := range append(flush, rw.bw.Flush) {
		if err := f(); err != nil {
			return 0, 0, err
		}
	}
	if err := filesink.PublishFile(rw.tmp, filepath.Join(rw.dir, rw.final)); err != nil {
		return 0, 0, err
	}
	return kept, dropped, removeSync(rw.src, rw.dir)
}

// readJSONL calls fn with each record of a gzip JSON-lines file until fn
// returns false. Lines that are not JSON objects are skipped (and so
// dropped by a rewrite).
func readJSONL(path string, fn func(map[string]any) bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(bufio.NewReaderSize(f, 64<<10))
	if err != nil {
		return err
	}
	br := bufio.NewReaderSize(zr, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			v, derr := capsule.Decode(bytes.TrimSpace(line))
			if rec, ok := v.(map[string]any); derr == nil && ok {
				if !fn(rec) {
					return nil
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// schemaOf is the schema name of a record: its "schema" field.
func schemaOf(rec map[string]any) string {
	s, _ := rec["schema"].(string)
	return s
}

// parquetSchema is the schema name in a filesink Parquet file name,
// part-<p>-<first>-<last>.<Name>_<revision>.parquet (or its rewrite,
// ….<Name>_<revision>.sanitised.parquet).
func parquetSchema(name string) string {
	name = strings.TrimSuffix(name, parquetSuffix)
	name = strings.TrimSuffix(name, ".sanitised")
	if i := strings.Index(name, "."); i >= 0 {
		name = name[i+1:]
	}
	if i := strings.LastIndex(name, "_"); i > 0 {
		if _, err := strconv.ParseInt(name[i+1:], 10, 64); err == nil {
			return name[:i]
		}
	}
	return name
}

// sanitiseRecord returns the bookkeeping fields of rec, its kept fields
// and the HMAC of its hashed fields. A string is hashed as is, any other
// value as its compact JSON (keys sorted); null stays null.
func sanitiseRecord(rec map[string]any, rule Rule, hash func(string) string) map[string]any {
	out := map[string]any{}
	for _, b := range bookkeeping {
		if v, ok := rec[b]; ok {
			out[b] = v
		}
	}
	for _, f := range rule.Keep {
		if v, ok := lookup(rec, f); ok {
			set(out, f, v)
		}
	}
	for _, f := range rule.Hash {
		v, ok := lookup(rec, f)
		switch {
		case !ok:
		case v == nil:
			set(out, f, nil)
		default:
			s, isStr := v.(string)
			if !isStr {
				s = string(capsule.AppendValue(nil, v))
			}
			set(out, f, hash(s))
		}
	}
	return out
}

// lookup returns the value at a dotted path.
func lookup(m map[string]any, path string) (any, bool) {
	var cur any = m
	for _, seg := range strings.Split(path, ".") {
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = obj[seg]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// set stores v at a dotted path, creating objects on the way (a hashed
// field inside a kept object replaces its clear value).
func set(m map[string]any, path string, v any) {
	segs := strings.Split(path, ".")
	for _, seg := range segs[:len(segs)-1] {
		next, ok := m[seg].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[seg] = next
		} else {
			// Copy: next may be shared with the source record.
			next = cloneMap(next)
			m[seg] = next
		}
		m = next
	}
	m[segs[len(segs)-1]] = v
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// removeSync removes path and syncs its directory.
func removeSync(path, dir string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return filesink.SyncDir(dir)
}
