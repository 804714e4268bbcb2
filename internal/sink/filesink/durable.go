package filesink

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/eventlogging/eventlogging/internal/vfs"
)

// The durable file operations of the layout, for the sink and for purge:
// a file is written under a temporary name, fsynced, renamed to its final
// name, and the directory fsynced, so a reader sees it whole or not at all
// and a crash leaves either the old state or the new. The sink does them
// through Config.FS; the exported functions, for purge, through the
// operating system's file system.

// WriteFileAtomic replaces p with b: a temp file p+".tmp", fsync, rename,
// directory fsync. After a crash p is the old content or the new, and the
// temp file may be left behind.
func WriteFileAtomic(p string, b []byte) error {
	return writeFileAtomic(vfs.OS, p, b)
}

// writeFileAtomic is WriteFileAtomic through fsys.
func writeFileAtomic(fsys vfs.FS, p string, b []byte) error {
	tmp := p + ".tmp"
	f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return publishFile(fsys, f, tmp, p)
}

// PublishFile publishes f, a file written under a temporary name in the
// directory of final: it fsyncs and closes f, renames it to final and
// fsyncs the directory. f is closed whatever happens; on error the temp
// file is left for the caller to remove.
func PublishFile(f *os.File, final string) error {
	return publishFile(vfs.OS, f, f.Name(), final)
}

// publishFile is PublishFile through fsys, for f opened there as tmp.
func publishFile(fsys vfs.FS, f vfs.File, tmp, final string) error {
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := fsys.Rename(tmp, final); err != nil {
		return err
	}
	return syncDir(fsys, filepath.Dir(final))
}

// mkdirAllSync creates root/rel and its missing parents in fsys, fsyncing
// the parent of each directory it creates so the new entries are durable.
func mkdirAllSync(fsys vfs.FS, root, rel string) error {
	dir := root
	for _, seg := range strings.Split(rel, "/") {
		if seg == "" {
			continue
		}
		next := filepath.Join(dir, seg)
		err := fsys.Mkdir(next, 0o755)
		switch {
		case err == nil:
			if err := syncDir(fsys, dir); err != nil {
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
	return syncDir(vfs.OS, dir)
}

// syncDir is SyncDir through fsys.
func syncDir(fsys vfs.FS, dir string) error {
	d, err := fsys.OpenFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}

// lockRoot takes an exclusive, non-blocking lock on the root's lock file
// p (vfs.FS.Lock: flock where the platform has it, released by the kernel
// when the process dies).
func lockRoot(fsys vfs.FS, p string) (io.Closer, error) {
	l, err := fsys.Lock(p, 0o644)
	if errors.Is(err, vfs.ErrLocked) {
		return nil, fmt.Errorf("root is in use by another process (%s is locked)", p)
	}
	return l, err
}

// walkFiles calls fn with the path of every file (not directory) below dir
// in fsys, in lexical order.
func walkFiles(fsys vfs.FS, dir string, fn func(p string) error) error {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if e.IsDir() {
			err = walkFiles(fsys, p, fn)
		} else {
			err = fn(p)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// eachStateFile calls fn with the name of each .json file of the local
// state directory dir (relative to the root), in name order, after
// deleting the .tmp files there that an atomic write left when the
// process died (the write never happened).
func (s *Sink) eachStateFile(dir string, fn func(name string) error) error {
	entries, err := s.fs.ReadDir(s.abs(dir))
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, ".tmp") {
			if err := s.fs.Remove(s.abs(path.Join(dir, name))); err != nil {
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
