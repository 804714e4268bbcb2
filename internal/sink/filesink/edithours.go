package filesink

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
)

// EditRemoteHours edits the hour partitions of a distributed target (S3,
// HDFS) that end at or before cutoff, in order, through local copies: edit
// is called with each partition's directory (relative to the store) and a
// local directory holding its files, which it may change (rewrite files,
// remove them, or remove the directory to delete the partition). When edit
// returns publish, the outcome is mirrored back: new files first (marker,
// if among them, last), then the files the edit removed (_SUCCESS last, so
// a partition being deleted never looks complete and empty). A partition
// that already holds marker was edited by an earlier run: edit is called
// with local "" and nothing is downloaded. Every step is idempotent, so an
// interrupted run is finished by running again; a reader may see a
// partition half deleted or with both a file and its rewrite for the
// moment of the run (object stores have no atomic rename of a directory).
// Errors of one partition do not stop the others; they are joined.
func EditRemoteHours(ctx context.Context, store objstore.Store, cutoff time.Time, marker string,
	edit func(dir, local string) (publish bool, err error)) error {
	objs, err := store.List(ctx, "")
	if err != nil {
		return err
	}
	type hour struct {
		start time.Time
		names []string
	}
	hours := map[string]*hour{}
	var dirs []string
	for _, o := range objs {
		dir, start, ok := HourOfKey(o.Key)
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
	tmp, err := os.MkdirTemp("", "eventlogging-hours-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	var errs []error
	for i, dir := range dirs {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		h := hours[dir]
		if h.start.Add(time.Hour).After(cutoff) {
			continue
		}
		local := filepath.Join(tmp, fmt.Sprint(i), "hour")
		if err := editRemoteHour(ctx, store, dir, local, h.names, marker, edit); err != nil {
			errs = append(errs, fmt.Errorf("partition %s/%s: %w", store, dir, err))
		}
		_ = os.RemoveAll(filepath.Dir(local))
	}
	return errors.Join(errs...)
}

// editRemoteHour edits one hour partition of a store through the local
// directory local.
func editRemoteHour(ctx context.Context, store objstore.Store, dir, local string, names []string, marker string,
	edit func(dir, local string) (bool, error)) error {
	if slices.Contains(names, marker) {
		_, err := edit(dir, "")
		return err
	}
	if err := os.MkdirAll(local, 0o755); err != nil {
		return err
	}
	for _, name := range names {
		if err := store.GetFile(ctx, dir+"/"+name, filepath.Join(local, name)); err != nil {
			return err
		}
	}
	if publish, err := edit(dir, local); err != nil || !publish {
		return err
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
	for name := range after {
		if name == marker || slices.Contains(names, name) {
			continue
		}
		if err := store.PutFile(ctx, dir+"/"+name, filepath.Join(local, name)); err != nil {
			return err
		}
	}
	gone := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return after[n] })
	slices.SortStableFunc(gone, func(a, b string) int {
		return boolCmp(a == SuccessFile, b == SuccessFile)
	})
	for _, name := range gone {
		if err := store.Delete(ctx, dir+"/"+name); err != nil {
			return err
		}
	}
	if after[marker] {
		return store.PutFile(ctx, dir+"/"+marker, filepath.Join(local, marker))
	}
	return nil
}

// boolCmp orders false before true.
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
