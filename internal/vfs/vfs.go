package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
)

// FS is a file system: what the spool does with files and directories.
// Names are paths in the host's syntax. Errors are *fs.PathError or
// *os.LinkError, matching fs.ErrNotExist and fs.ErrExist with errors.Is as
// the os package's do. Implementations are safe for concurrent use.
type FS interface {
	// OpenFile opens name as os.OpenFile does (os.O_RDONLY, O_WRONLY,
	// O_RDWR, O_CREATE, O_EXCL, O_TRUNC, O_APPEND). A directory may be
	// opened read-only, to Sync it.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// Stat returns the file information of name.
	Stat(name string) (fs.FileInfo, error)
	// ReadDir returns the entries of the directory name, sorted by name.
	ReadDir(name string) ([]fs.DirEntry, error)
	// Mkdir creates the directory name; an error matching fs.ErrExist if
	// name exists, fs.ErrNotExist if its parent does not.
	Mkdir(name string, perm fs.FileMode) error
	// MkdirAll creates the directory path and any missing parents.
	MkdirAll(path string, perm fs.FileMode) error
	// Rename replaces newpath with oldpath.
	Rename(oldpath, newpath string) error
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// Lock creates the file name (with perm) if it is missing and takes an
	// exclusive lock on it for this process, held until the returned
	// Closer is closed; an error matching ErrLocked if another holds it.
	Lock(name string, perm fs.FileMode) (io.Closer, error)
	// DiskSpace returns the bytes available to an unprivileged user on the
	// file system holding f, a file or directory this FS opened, and the
	// file system's size; an error matching errors.ErrUnsupported where
	// that cannot be known.
	DiskSpace(f File) (avail, size int64, err error)
}

// File is an open file or directory. *os.File is one.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.WriterAt
	io.Closer
	// Stat returns the file's information.
	Stat() (fs.FileInfo, error)
	// Sync makes the file's data durable; on a directory, its entries
	// (files created, renamed or removed in it).
	Sync() error
	// Truncate changes the file's size.
	Truncate(size int64) error
}

// ErrLocked is the error FS.Lock returns (wrapped) when another process,
// or another Lock on a Mem, holds the lock.
var ErrLocked = errors.New("locked by another process")

// ReadFile returns the contents of the file name in fsys.
func ReadFile(fsys FS, name string) ([]byte, error) {
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
