package spool

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/eventlogging/eventlogging/internal/vfs"
)

// crashDirEnv makes the test binary act as the appending process that
// TestCrashKeepsAppended kills.
const crashDirEnv = "SPOOL_TEST_CRASH_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashDirEnv); dir != "" {
		crashHelper(dir)
		return // not reached: the parent kills this process
	}
	os.Exit(m.Run())
}

// crashHelper appends numbered batches of 10 forever, printing the number
// of each batch once Append has returned, until it is killed.
func crashHelper(dir string) {
	q, err := Open(dir, Config{SegmentBytes: 4096, Logger: discardLogger()})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	out := bufio.NewWriter(os.Stdout)
	for b := 0; ; b++ {
		if err := q.Append(recs(b*10, 10)); err != nil {
			fmt.Fprintln(out, "error", err)
			out.Flush()
			os.Exit(1)
		}
		if b == 20 {
			// Some acked records too, so the cursor is exercised.
			if err := q.Ack(55); err != nil {
				fmt.Fprintln(out, "error", err)
				out.Flush()
				os.Exit(1)
			}
		}
		fmt.Fprintln(out, b)
		out.Flush()
	}
}

// TestCrashKeepsAppended kills (SIGKILL) a process that is appending
// without ever calling Close, and checks that every batch whose Append
// returned is there after reopening, in order, from the cursor on.
func TestCrashKeepsAppended(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.CommandContext(t.Context(), exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	returned := -1 // last batch whose Append returned
	for returned < 60 && sc.Scan() {
		n, err := strconv.Atoi(sc.Text())
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("helper: %s", sc.Text())
		}
		returned = n
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if returned < 60 {
		t.Fatalf("helper stopped after batch %d: %v", returned, sc.Err())
	}

	var logs logBuffer
	q := open(t, dir, Config{SegmentBytes: 4096, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	got := peekAll(t, q)
	// The killed process may have written more than it reported, even part
	// of a batch (at least once), but nothing it reported may be missing.
	if min := (returned+1)*10 - 55; len(got) < min {
		t.Fatalf("after the crash %d records, want at least %d", len(got), min)
	}
	equalRecords(t, got, recs(55, len(got)))
	t.Logf("helper reported %d batches; %d records after the cursor survived; log: %s", returned+1, len(got), logs.String())
}

// writeSegments appends n single-record batches with small segments and
// closes the queue, returning the records and the segment files.
func writeSegments(t *testing.T, dir string, n int) ([]Record, []segmentFile) {
	t.Helper()
	q := open(t, dir, Config{SegmentBytes: 200})
	want := recs(0, n)
	for i := range want {
		appendAll(t, q, want[i:i+1])
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	files, err := listSegments(vfs.OS, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("%d segment files, want at least 3", len(files))
	}
	return want, files
}

func TestTornTail(t *testing.T) {
	const n = 30
	tests := []struct {
		name string
		// damage changes the last segment, which holds records kept..n-1,
		// and returns how many of them survive and the bytes dropped.
		damage func(t *testing.T, path string, size int64) (survivors int, dropped int64)
	}{
		{"truncated in the last value", func(t *testing.T, path string, size int64) (int, int64) {
			frame := lastFrameSize(t, path)
			truncate(t, path, size-3)
			return -1, frame - 3
		}},
		{"truncated in the last header", func(t *testing.T, path string, size int64) (int, int64) {
			frame := lastFrameSize(t, path)
			truncate(t, path, size-frame+5)
			return -1, 5
		}},
		{"random garbage appended", func(t *testing.T, path string, _ int64) (int, int64) {
			garbage := []byte("\x00\x00\x01\x00garbage that is not a frame")
			appendFile(t, path, garbage)
			return 0, int64(len(garbage))
		}},
		{"zeros appended", func(t *testing.T, path string, _ int64) (int, int64) {
			appendFile(t, path, make([]byte, 4096))
			return 0, 4096
		}},
		{"length runs past the end", func(t *testing.T, path string, _ int64) (int, int64) {
			appendFile(t, path, []byte{0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4, 0, 0})
			return 0, 10
		}},
		{"bit flip in the last record", func(t *testing.T, path string, size int64) (int, int64) {
			frame := lastFrameSize(t, path)
			flipByte(t, path, size-1)
			return -1, frame
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			want, files := writeSegments(t, dir, n)
			last := files[len(files)-1]
			fi, err := os.Stat(last.path)
			if err != nil {
				t.Fatal(err)
			}
			survivors, dropped := tc.damage(t, last.path, fi.Size())
			want = want[:n+survivors]

			var logs logBuffer
			q := open(t, dir, Config{SegmentBytes: 200, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			equalRecords(t, peekAll(t, q), want)
			checkBytes(t, q, dir)
			log := logs.String()
			if !strings.Contains(log, "spool dropped a torn tail") ||
				!strings.Contains(log, fmt.Sprintf("bytes_dropped=%d", dropped)) ||
				!strings.Contains(log, "file="+last.path) {
				t.Fatalf("log does not report %d bytes dropped from %s:\n%s", dropped, last.path, log)
			}

			// The spool goes on from the recovered end, and reopens clean.
			more := recs(100, 2)
			appendAll(t, q, more)
			q.Close()
			logs = logBuffer{}
			q = open(t, dir, Config{SegmentBytes: 200, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			equalRecords(t, peekAll(t, q), append(want, more...))
			if strings.Contains(logs.String(), "torn") {
				t.Fatalf("second reopen logged a torn tail:\n%s", logs.String())
			}
		})
	}
}

func TestCorruptOlderSegment(t *testing.T) {
	dir := t.TempDir()
	_, files := writeSegments(t, dir, 30)
	victim := files[1].path
	frames := frameOffsets(t, victim)
	if len(frames) < 2 {
		t.Fatalf("%s holds %d records, want 2 or more", victim, len(frames))
	}
	off := frames[1]
	flipByte(t, victim, off+headerLen+3) // in the second record's topic

	_, err := Open(dir, Config{Logger: discardLogger()})
	var ce *CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("Open with a corrupt older segment: %v, want a *CorruptError", err)
	}
	if ce.Path != victim || ce.Offset != off {
		t.Fatalf("CorruptError at %s:%d, want %s:%d", ce.Path, ce.Offset, victim, off)
	}
	if msg := err.Error(); !strings.Contains(msg, victim) || !strings.Contains(msg, fmt.Sprintf("offset %d", off)) {
		t.Fatalf("error %q does not name the file and offset", msg)
	}
	// Nothing was changed: the file is still there, corruption and all.
	if _, err := os.Stat(victim); err != nil {
		t.Fatal(err)
	}
}

// TestCorruptionBeforeCursorIgnored: a damaged segment that is wholly
// acked is deleted at Open, not reported.
func TestCorruptionBeforeCursorIgnored(t *testing.T) {
	dir := t.TempDir()
	want, files := writeSegments(t, dir, 30)
	flipByte(t, files[0].path, headerLen+1)
	c, err := createCursor(vfs.OS, dir, mustOpen(t, dir), files[1].base)
	if err != nil {
		t.Fatal(err)
	}
	c.f.Close()
	q := open(t, dir, Config{})
	equalRecords(t, peekAll(t, q), want[files[1].base:])
}

func TestMissingSegment(t *testing.T) {
	dir := t.TempDir()
	_, files := writeSegments(t, dir, 30)
	if err := os.Remove(files[1].path); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, Config{Logger: discardLogger()})
	if err == nil || !strings.Contains(err.Error(), filepath.Base(files[2].path)) || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("Open with a segment missing: %v", err)
	}
}

func mustOpen(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// frameOffsets returns the offset of every frame in a valid segment file.
func frameOffsets(t *testing.T, path string) []int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(bytes.NewReader(b))
	var offs []int64
	for off := int64(0); off < int64(len(b)); {
		n, err := scanFrame(r, int64(len(b))-off)
		if err != nil {
			t.Fatalf("%s at %d: %v", path, off, err)
		}
		offs = append(offs, off)
		off += n
	}
	return offs
}

func lastFrameSize(t *testing.T, path string) int64 {
	t.Helper()
	offs := frameOffsets(t, path)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size() - offs[len(offs)-1]
}

func truncate(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x40
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}
