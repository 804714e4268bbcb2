package spool

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/eventlogging/eventlogging/internal/vfs"
)

const (
	segmentSuffix = ".spool"
	segmentDigits = 20 // enough for any uint64
	cursorName    = "cursor"
	cursorTmpName = "cursor.tmp"
	lockName      = "lock"
	filePerm      = 0o640
	dirPerm       = 0o750
)

// segmentPath returns the file name of the segment whose first record has
// sequence number base.
func segmentPath(dir string, base uint64) string {
	return filepath.Join(dir, fmt.Sprintf("%0*d%s", segmentDigits, base, segmentSuffix))
}

// segmentFile is a segment file found in the directory.
type segmentFile struct {
	base uint64
	path string
}

// listSegments returns the segment files in dir in sequence order. Other
// files are ignored.
func listSegments(fsys vfs.FS, dir string) ([]segmentFile, error) {
	entries, err := fsys.ReadDir(dir) // sorted by name, which is by base
	if err != nil {
		return nil, fmt.Errorf("spool: list %s: %w", dir, err)
	}
	var out []segmentFile
	for _, e := range entries {
		name := e.Name()
		digits, ok := strings.CutSuffix(name, segmentSuffix)
		if !ok || len(digits) != segmentDigits || !e.Type().IsRegular() {
			continue
		}
		base, err := strconv.ParseUint(digits, 10, 64)
		if err != nil {
			continue
		}
		out = append(out, segmentFile{base: base, path: filepath.Join(dir, name)})
	}
	return out, nil
}

// scanResult is what scanSegment learnt about a segment file.
type scanResult struct {
	count    int64         // valid records
	end      int64         // offset just past the last valid record
	fileSize int64         // size of the file as found
	wantOff  int64         // offset of the record numbered want, or -1
	bad      *CorruptError // the first bad frame, at end; nil if none
}

// scanSegment validates every frame of f, the segment numbered from base,
// and notes the offset of the record numbered want.
func scanSegment(f vfs.File, path string, base, want uint64, br *bufio.Reader) (scanResult, error) {
	fi, err := f.Stat()
	if err != nil {
		return scanResult{}, fmt.Errorf("spool: %w", err)
	}
	res := scanResult{fileSize: fi.Size(), wantOff: -1}
	br.Reset(f)
	defer br.Reset(nil)
	for {
		if base+uint64(res.count) == want {
			res.wantOff = res.end
		}
		n, err := scanFrame(br, res.fileSize-res.end)
		if err != nil {
			var fe *frameError
			if errors.As(err, &fe) {
				res.bad = &CorruptError{Path: path, Offset: res.end, Reason: fe.reason}
				return res, nil
			}
			if errors.Is(err, io.EOF) {
				return res, nil
			}
			return scanResult{}, fmt.Errorf("spool: read %s at offset %d: %w", path, res.end, err)
		}
		res.end += n
		res.count++
	}
}

// lockDir takes the lock on <dir>/lock, held until the returned Closer is
// closed, so that two processes cannot share a spool (on platforms without
// flock, OS takes no lock: the caller must not open one directory twice).
func lockDir(fsys vfs.FS, dir string) (io.Closer, error) {
	path := filepath.Join(dir, lockName)
	l, err := fsys.Lock(path, filePerm)
	if errors.Is(err, vfs.ErrLocked) {
		return nil, fmt.Errorf("spool: %s is in use by another Queue (lock %s held)", dir, path)
	}
	if err != nil {
		return nil, fmt.Errorf("spool: lock: %w", err)
	}
	return l, nil
}

// makeDir creates dir and any missing parents, and fsyncs the directory
// holding each one it created: a new directory's entry is durable only
// once its parent is synced, and a power loss that took the spool's
// directory away would take every record in it.
func makeDir(fsys vfs.FS, dir string) error {
	var created []string // from dir up
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := fsys.Stat(d); !errors.Is(err, fs.ErrNotExist) {
			break // there, or MkdirAll will say what is wrong
		}
		created = append(created, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := fsys.MkdirAll(dir, dirPerm); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	for _, d := range created {
		if err := syncDir(fsys, filepath.Dir(d)); err != nil {
			return err
		}
	}
	return nil
}

// syncDir fsyncs the directory dir, making its entries durable.
func syncDir(fsys vfs.FS, dir string) error {
	f, err := fsys.OpenFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("spool: sync %s: %w", dir, err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("spool: sync %s: %w", dir, err)
	}
	return nil
}
