package purge

import (
	"context"
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
	"github.com/eventlogging/eventlogging/internal/sink/filesink"
)

// purgeRemote is PurgeFiles on a distributed target (s3://, hdfs://). Each
// old hour partition is downloaded to a local temp directory, purged there
// exactly as a local one, and the outcome mirrored back: new files (the
// sanitised rewrites) uploaded first, then the files the purge removed
// deleted, the SanitisedMarker last. A partition deleted locally has
// every object deleted, its _SUCCESS marker last. Every step is
// idempotent, so an interrupted run is finished by running again; a reader
// may see a partition half deleted or with both a file and its sanitised
// rewrite for the moment of the run (object stores have no atomic rename
// of a directory).
func purgeRemote(ctx context.Context, target string, fp *filePurge) error {
	store, err := objstore.Open(ctx, target)
	if err != nil {
		return fmt.Errorf("purge: %w", err)
	}
	defer func() { _ = store.Close() }()
	return purgeStore(ctx, store, fp)
}

// purgeStore purges the hour partitions of an open store.
func purgeStore(ctx context.Context, store objstore.Store, fp *filePurge) error {
	objs, err := store.List(ctx, "")
	if err != nil {
		return fmt.Errorf("purge: %w", err)
	}
	type hour struct {
		start time.Time
		names []string
	}
	hours := map[string]*hour{}
	var dirs []string
	for _, o := range objs {
		dir, start, ok := filesink.HourOfKey(o.Key)
		if !ok {
			continue
		}
		h := hours[dir]
		if h == nil {
			h = &hour{start: start}
			hours[dir] = h
			dirs = append(dirs, dir)
		}
		h.names = append(h.names, path.Base(o.Key))
	}
	slices.Sort(dirs)
	tmp, err := os.MkdirTemp("", "eventlogging-purge-")
	if err != nil {
		return fmt.Errorf("purge: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	var errs []error
	for i, dir := range dirs {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		h := hours[dir]
		if h.start.Add(time.Hour).After(fp.cutoff) {
			continue
		}
		fp.rep.Partitions++
		local := filepath.Join(tmp, fmt.Sprint(i), "hour")
		if err := fp.remotePartition(ctx, store, dir, local, h.names); err != nil {
			errs = append(errs, fmt.Errorf("purge: partition %s/%s: %w", store, dir, err))
		}
		_ = os.RemoveAll(filepath.Dir(local))
	}
	return errors.Join(errs...)
}

// remotePartition purges one hour partition of a store through the local
// directory local.
func (fp *filePurge) remotePartition(ctx context.Context, store objstore.Store, dir, local string, names []string) error {
	if slices.Contains(names, SanitisedMarker) {
		return nil // done by an earlier run
	}
	if err := os.MkdirAll(local, 0o755); err != nil {
		return err
	}
	for _, name := range names {
		if err := store.GetFile(ctx, dir+"/"+name, filepath.Join(local, name)); err != nil {
			return err
		}
	}
	actions := len(fp.rep.Actions)
	if err := fp.partition(local); err != nil {
		return err
	}
	// Messages name the partition in the store, not the temp directory.
	for i := actions; i < len(fp.rep.Actions); i++ {
		fp.rep.Actions[i] = strings.ReplaceAll(fp.rep.Actions[i], local, store.String()+"/"+dir)
	}
	if fp.p.DryRun {
		return nil
	}
	after := map[string]bool{}
	entries, err := os.ReadDir(local)
	switch {
	case errors.Is(err, fs.ErrNotExist): // the partition was deleted
	case err != nil:
		return err
	default:
		for _, e := range entries {
			if !e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				after[e.Name()] = true
			}
		}
	}
	// New files first (the marker last), then the removed ones (_SUCCESS
	// last, so a partition being deleted never looks complete and empty).
	for name := range after {
		if name == SanitisedMarker || slices.Contains(names, name) {
			continue
		}
		if err := store.PutFile(ctx, dir+"/"+name, filepath.Join(local, name)); err != nil {
			return err
		}
	}
	gone := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return after[n] })
	slices.SortStableFunc(gone, func(a, b string) int {
		return boolCmp(a == filesink.SuccessFile, b == filesink.SuccessFile)
	})
	for _, name := range gone {
		if err := store.Delete(ctx, dir+"/"+name); err != nil {
			return err
		}
	}
	if after[SanitisedMarker] {
		return store.PutFile(ctx, dir+"/"+SanitisedMarker, filepath.Join(local, SanitisedMarker))
	}
	return nil
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	default:
		return -1
	}
}
