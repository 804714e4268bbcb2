package filesink

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// The durable file operations of the layout, for the sink and for purge:
// a file is written under a temporary name, fsynced, renamed to its final
// name, and the directory fsynced, so a reader sees it whole or not at all
// and a crash leaves either the old state or the new.

// WriteFileAtomic replaces p with b: a temp file p+".tmp", fsync, rename,
// directory fsync. After a crash p is the old content or the new, and the
// temp file may be left behind.
func WriteFileAtomic(p string, b []byte) error {
	f, err := os.OpenFile(p+".tmp", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return PublishFile(f, p)
}

// PublishFile publishes f, a file written under a temporary name in the
// directory of final: it fsyncs and closes f, renames it to final and
// fsyncs the directory. f is closed whatever happens; on error the temp
// file is left for the caller to remove.
func PublishFile(f *os.File, final string) error {
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), final); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(final))
}

// mkdirAllSync creates root/rel and its missing parents, fsyncing the
// parent of each directory it creates so the new entries are durable.
func mkdirAllSync(root, rel string) error {
	dir := root
	for _, seg := range strings.Split(rel, "/") {
		if seg == "" {
			continue
		}
		next := filepath.Join(dir, seg)
		err := os.Mkdir(next, 0o755)
		switch {
		case err == nil:
			if err := SyncDir(dir); err != nil {
				return err
			}
		case errors.Is(err, fs.ErrExist):
		default:
			return err
		}
		dir = next
	}
	return nil
}

// SyncDir fsyncs a directory, making creations, renames and removals in it
// durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}

// eachStateFile calls fn with the name of each .json file of the local
// state directory dir (relative to the root), in name order, after
// deleting the .tmp files there that an atomic write left when the
// process died (the write never happened).
func (s *Sink) eachStateFile(dir string, fn func(name string) error) error {
	entries, err := os.ReadDir(s.abs(dir))
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, ".tmp") {
			if err := os.Remove(s.abs(path.Join(dir, name))); err != nil {
				return err
			}
			continue
		}
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		if err := fn(name); err != nil {
			return err
		}
	}
	return nil
}
