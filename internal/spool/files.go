package spool

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
func listSegments(dir string) ([]segmentFile, error) {
	entries, err := os.ReadDir(dir) // sorted by name, which is by base
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
func scanSegment(f *os.File, path string, base, want uint64, br *bufio.Reader) (scanResult, error) {
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

// readCursor returns the sequence number in the cursor file, and false if
// there is none.
func readCursor(dir string) (uint64, bool, error) {
	path := filepath.Join(dir, cursorName)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("spool: read cursor: %w", err)
	}
	digits, ok := bytes.CutSuffix(b, []byte("\n"))
	seq, perr := strconv.ParseUint(string(digits), 10, 64)
	if !ok || perr != nil {
		return 0, false, fmt.Errorf("spool: cursor file %s: want a decimal sequence number and a newline, have %q", path, b)
	}
	return seq, true, nil
}

// writeCursor atomically replaces the cursor file with seq: temporary file,
// fsync, rename, fsync of the directory.
func writeCursor(dir string, dirF *os.File, seq uint64) error {
	tmp := filepath.Join(dir, cursorTmpName)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, filePerm)
	if err != nil {
		return fmt.Errorf("spool: write cursor: %w", err)
	}
	_, err = f.Write(strconv.AppendUint(nil, seq, 10))
	if err == nil {
		_, err = f.Write([]byte("\n"))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, cursorName))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("spool: write cursor: %w", err)
	}
	if err := dirF.Sync(); err != nil {
		return fmt.Errorf("spool: write cursor: sync %s: %w", dir, err)
	}
	return nil
}
