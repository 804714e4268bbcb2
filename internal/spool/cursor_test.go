package spool

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventlogging/eventlogging/internal/vfs"
)

// slotState is a decoded cursor slot, for comparing.
type slotState struct {
	gen, seq uint64
	bad      string
}

// readSlots decodes both slots of the cursor file in dir.
func readSlots(t *testing.T, dir string) [2]slotState {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, cursorName))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != cursorFileSize {
		t.Fatalf("cursor file is %d bytes, want %d", len(b), cursorFileSize)
	}
	var out [2]slotState
	for i := range out {
		out[i].gen, out[i].seq, out[i].bad = decodeCursorSlot(b[i*cursorSlotStride:i*cursorSlotStride+cursorSlotLen], i)
	}
	return out
}

// checkSlotted checks that the cursor file in dir is slotted, both slots
// valid, and that it holds seq.
func checkSlotted(t *testing.T, dir string, seq uint64) {
	t.Helper()
	s := readSlots(t, dir)
	if s[0].bad != "" || s[1].bad != "" {
		t.Fatalf("cursor slots: %+v, want both valid", s)
	}
	newest := s[0]
	if s[1].gen > s[0].gen {
		newest = s[1]
	}
	if newest.seq != seq {
		t.Fatalf("cursor slots %+v hold %d, want %d", s, newest.seq, seq)
	}
}

// writeTextCursorSpool appends n records to a spool in dir, closes it and
// replaces its cursor with the old text format holding cursor, as an
// older version would have left it. It returns the records.
func writeTextCursorSpool(t *testing.T, dir string, n int, cursor uint64) []Record {
	t.Helper()
	q := open(t, dir, Config{})
	want := recs(0, n)
	appendAll(t, q, want)
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, cursorName), fmt.Appendf(nil, "%d\n", cursor), filePerm); err != nil {
		t.Fatal(err)
	}
	return want
}

// TestCursorSlotsAlternate: Open writes the cursor in both slots, and each
// Ack writes the next generation into the other slot, leaving the
// previous one as it was, across a reopen too.
func TestCursorSlotsAlternate(t *testing.T) {
	dir := t.TempDir()
	q := open(t, dir, Config{})
	if got, want := readSlots(t, dir), [2]slotState{{0, 0, ""}, {1, 0, ""}}; got != want {
		t.Fatalf("cursor slots of a new spool: %+v, want %+v", got, want)
	}
	appendAll(t, q, recs(0, 30))
	prev := readSlots(t, dir)
	gen, seq := uint64(1), uint64(0)
	for i := range 6 {
		if i == 3 {
			if err := q.Close(); err != nil {
				t.Fatal(err)
			}
			q = open(t, dir, Config{})
		}
		if err := q.Ack(i + 1); err != nil {
			t.Fatal(err)
		}
		gen, seq = gen+1, seq+uint64(i+1)
		got := readSlots(t, dir)
		slot := gen % 2
		if want := (slotState{gen, seq, ""}); got[slot] != want {
			t.Fatalf("after Ack %d: slot %d = %+v, want %+v", i, slot, got[slot], want)
		}
		if got[1-slot] != prev[1-slot] {
			t.Fatalf("after Ack %d: slot %d = %+v, want it unchanged, %+v", i, 1-slot, got[1-slot], prev[1-slot])
		}
		prev = got
	}
	equalRecords(t, peekAll(t, q), recs(0, 30)[seq:])
}

// TestCursorDamagedSlot: a damaged slot (a torn write of the newest, or the
// older one gone bad) is ignored with a warning and Open resumes at the
// other slot; the next Ack overwrites the damaged slot.
func TestCursorDamagedSlot(t *testing.T) {
	damages := []struct {
		name string
		off  int // in the slot
		b    []byte
	}{
		{"torn: second half zero", 16, make([]byte, 16)},
		{"torn: second half old", 16, []byte{0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 1, 2, 3, 4}},
		{"never written", 0, make([]byte, cursorSlotLen)},
		{"bit flip in the sequence number", 23, []byte{0x10}},
		{"bad magic", 0, []byte("XPCR")},
	}
	for _, d := range damages {
		for _, newest := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/newest=%t", d.name, newest), func(t *testing.T) {
				dir := t.TempDir()
				q := open(t, dir, Config{})
				want := recs(0, 10)
				appendAll(t, q, want)
				for _, n := range []int{3, 4} { // generation 2 in slot 0 holds 3, 3 in slot 1 holds 7
					if err := q.Ack(n); err != nil {
						t.Fatal(err)
					}
				}
				q.Close()
				slot, keep := 1, 3 // damage slot 1, resume at slot 0's 3
				if !newest {
					slot, keep = 0, 7
				}
				f, err := os.OpenFile(filepath.Join(dir, cursorName), os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.WriteAt(d.b, int64(slot*cursorSlotStride+d.off)); err != nil {
					t.Fatal(err)
				}
				f.Close()

				var logs logBuffer
				q = open(t, dir, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
				equalRecords(t, peekAll(t, q), want[keep:])
				if log := logs.String(); !strings.Contains(log, "spool cursor slot is invalid") || !strings.Contains(log, fmt.Sprintf("slot=%d", slot)) {
					t.Fatalf("log does not report slot %d invalid:\n%s", slot, log)
				}
				if s := readSlots(t, dir); s[slot].bad == "" {
					t.Fatalf("slot %d = %+v after damaging it", slot, s[slot])
				}
				if err := q.Ack(1); err != nil {
					t.Fatal(err)
				}
				s := readSlots(t, dir)
				if s[slot].bad != "" || s[slot].seq != uint64(keep+1) || s[1-slot].bad != "" {
					t.Fatalf("slots after Ack: %+v, want slot %d rewritten with %d", s, slot, keep+1)
				}
				q.Close()
				q = open(t, dir, Config{})
				equalRecords(t, peekAll(t, q), want[keep+1:])
			})
		}
	}
}

// TestCursorBothSlotsBad: with neither slot valid Open fails with a
// *CorruptError naming the cursor file, and changes nothing.
func TestCursorBothSlotsBad(t *testing.T) {
	for _, tc := range []struct {
		name    string
		slot0   func(b []byte)
		slot1   func(b []byte)
		reasons []string
	}{
		{"bit flips", func(b []byte) { b[20] ^= 1 }, func(b []byte) { b[9] ^= 1 }, []string{"checksum", "checksum"}},
		{"zeros", func(b []byte) { clear(b) }, func(b []byte) { clear(b) }, []string{"magic", "magic"}},
		{"future version", func(b []byte) { setVersion(b, 2) }, func(b []byte) { setVersion(b, 2) }, []string{"format version 2", "format version 2"}},
		{"swapped slots", func(b []byte) { encodeCursorSlot(b, 3, 5) }, func(b []byte) { encodeCursorSlot(b, 4, 6) }, []string{"generation 3 does not belong in slot 0", "generation 4 does not belong in slot 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			q := open(t, dir, Config{})
			appendAll(t, q, recs(0, 5))
			if err := q.Ack(2); err != nil {
				t.Fatal(err)
			}
			q.Close()
			path := filepath.Join(dir, cursorName)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tc.slot0(b[:cursorSlotLen])
			tc.slot1(b[cursorSlotStride : cursorSlotStride+cursorSlotLen])
			if err := os.WriteFile(path, b, filePerm); err != nil {
				t.Fatal(err)
			}

			_, err = Open(dir, Config{Logger: discardLogger()})
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Path != path {
				t.Fatalf("Open with both cursor slots bad: %v, want a *CorruptError for %s", err, path)
			}
			msg := err.Error()
			if !strings.Contains(msg, "corrupt cursor file "+path) || !strings.Contains(msg, "neither slot is valid") {
				t.Fatalf("error %q does not say that the cursor file %s is corrupt", msg, path)
			}
			for _, r := range tc.reasons {
				if !strings.Contains(msg, r) {
					t.Fatalf("error %q does not give the reason %q", msg, r)
				}
			}
			if got, err := os.ReadFile(path); err != nil || string(got) != string(b) {
				t.Fatalf("Open changed the corrupt cursor file (%v)", err)
			}
		})
	}
}

// setVersion sets a slot's format version, with a valid checksum.
func setVersion(b []byte, v uint32) {
	binary.BigEndian.PutUint32(b[4:8], v)
	binary.BigEndian.PutUint32(b[28:32], crc32.Checksum(b[:28], castagnoli))
}

// TestCursorTextFormat: a cursor in the old text format is read at Open and
// replaced by a slotted one holding the same position.
func TestCursorTextFormat(t *testing.T) {
	dir := t.TempDir()
	want := writeTextCursorSpool(t, dir, 10, 4)
	var logs logBuffer
	q := open(t, dir, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	equalRecords(t, peekAll(t, q), want[4:])
	checkSlotted(t, dir, 4)
	if !strings.Contains(logs.String(), "spool converted the cursor file to the slotted format") {
		t.Fatalf("log does not report the conversion:\n%s", logs.String())
	}
	if err := q.Ack(3); err != nil {
		t.Fatal(err)
	}
	checkSlotted(t, dir, 7)
	q.Close()
	q = open(t, dir, Config{})
	equalRecords(t, peekAll(t, q), want[7:])

	// A drained spool's text cursor: appending goes on from it.
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, cursorName), []byte("1234\n"), filePerm); err != nil {
		t.Fatal(err)
	}
	q = open(t, dir, Config{})
	checkSlotted(t, dir, 1234)
	appendAll(t, q, recs(0, 2))
	if names, _ := segmentFiles(t, dir); len(names) != 1 || names[0] != "00000000000000001234.spool" {
		t.Fatalf("segments after a text cursor of 1234: %v", names)
	}
}

// TestCursorWriteFailure: a failed write leaves the generation alone, so
// that the retry goes to the same slot and the newest valid slot is never
// the one overwritten.
func TestCursorWriteFailure(t *testing.T) {
	dir := t.TempDir()
	c, err := createCursor(vfs.OS, dir, mustOpen(t, dir), 5)
	if err != nil {
		t.Fatal(err)
	}
	path := c.path
	c.f.Close()
	if err := c.write(6); err == nil {
		t.Fatal("write to a closed cursor file: no error")
	}
	if c.gen != 1 {
		t.Fatalf("generation %d after a failed write, want 1", c.gen)
	}
	if c.f, err = os.OpenFile(path, os.O_RDWR, 0); err != nil {
		t.Fatal(err)
	}
	defer c.f.Close()
	if err := c.write(6); err != nil {
		t.Fatal(err)
	}
	if got, want := readSlots(t, dir), [2]slotState{{2, 6, ""}, {1, 5, ""}}; got != want {
		t.Fatalf("slots after the retried write: %+v, want %+v", got, want)
	}
}

func TestDefaultMinFree(t *testing.T) {
	for _, tc := range []struct{ size, want int64 }{
		{0, 0},
		{1 << 20, 52425},
		{1 << 30, 53687090},
		{2 << 30, 64 << 20},
		{1 << 50, 64 << 20},
	} {
		if got := defaultMinFree(tc.size); got != tc.want {
			t.Errorf("defaultMinFree(%d) = %d, want %d", tc.size, got, tc.want)
		}
	}
}

// TestMinFreeBytesUnreachable: with a reserve larger than any disk every
// Append is ErrFull and writes nothing; with the check disabled it works.
func TestMinFreeBytesUnreachable(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := vfs.OS.DiskSpace(mustOpen(t, dir)); errors.Is(err, errors.ErrUnsupported) {
		t.Skip("no free-space check on this platform")
	}
	q := open(t, dir, Config{MinFreeBytes: 1 << 62})
	if err := q.Append(recs(0, 1)); !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), "MinFreeBytes") {
		t.Fatalf("Append with an unreachable reserve: %v, want ErrFull naming MinFreeBytes", err)
	}
	if names, _ := segmentFiles(t, dir); q.Len() != 0 || len(names) != 0 {
		t.Fatalf("after ErrFull Len() = %d, segments %v", q.Len(), names)
	}
	q.Close()
	q = open(t, dir, Config{MinFreeBytes: -1})
	appendAll(t, q, recs(0, 1))
	equalRecords(t, peekAll(t, q), recs(0, 1))
}
