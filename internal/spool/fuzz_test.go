package spool

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/eventlogging/eventlogging/internal/vfs"
)

// FuzzDecodeSegment opens a directory whose segment file holds arbitrary
// bytes. As the last segment any content must open (a bad tail is
// truncated) and the records read back must re-encode to exactly the bytes
// kept. As an older segment, followed by the segment numbered where its
// valid records end, it must open to the same records when nothing was
// truncated, and otherwise fail with a *CorruptError at the offset where
// the valid records end (or, with no valid records, fail on the gap). Seeds are added here and in
// testdata/fuzz/FuzzDecodeSegment.
func FuzzDecodeSegment(f *testing.F) {
	valid := appendFrames(nil, recs(0, 3), mustBatchSize(f, recs(0, 3)))
	f.Add(valid)
	f.Add(valid[:len(valid)-1])
	f.Add(valid[:5])
	f.Add(append(valid[:len(valid):len(valid)], 0, 0, 0, 2, 0, 0, 0, 0, 0, 0))
	f.Add([]byte{})
	f.Add(make([]byte, 64))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0})
	f.Add(appendFrames(nil, []Record{{Topic: "", Value: nil}}, 10))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := Config{Logger: discardLogger()}

		dir := t.TempDir()
		if err := os.WriteFile(segmentPath(dir, 0), data, filePerm); err != nil {
			t.Fatal(err)
		}
		q, err := Open(dir, cfg)
		if err != nil {
			t.Fatalf("Open of a last segment: %v", err)
		}
		kept := q.Bytes()
		got, err := q.Peek(q.Len() + 1)
		if err != nil {
			t.Fatalf("Peek: %v", err)
		}
		if len(got) != q.Len() {
			t.Fatalf("Peek returned %d records, Len() = %d", len(got), q.Len())
		}
		size, err := batchSize(got)
		if err != nil {
			t.Fatal(err)
		}
		if enc := appendFrames(nil, got, size); !bytes.Equal(enc, data[:kept]) {
			t.Fatalf("records re-encode to %d bytes that differ from the %d bytes kept", len(enc), kept)
		}
		if err := q.Ack(len(got)); err != nil {
			t.Fatalf("Ack: %v", err)
		}
		if err := q.Close(); err != nil {
			t.Fatal(err)
		}

		dir = t.TempDir()
		if err := os.WriteFile(segmentPath(dir, 0), data, filePerm); err != nil {
			t.Fatal(err)
		}
		next := uint64(len(got))
		if next == 0 {
			next = 1 // a segment numbered 0 is the fuzzed one; this is a gap
		}
		if err := os.WriteFile(segmentPath(dir, next), nil, filePerm); err != nil {
			t.Fatal(err)
		}
		q, err = Open(dir, cfg)
		if kept == int64(len(data)) && len(got) == 0 {
			if err == nil {
				q.Close()
				t.Fatal("Open of an empty older segment followed by a gap succeeded")
			}
			return
		}
		if kept == int64(len(data)) {
			if err != nil {
				t.Fatalf("Open of a valid older segment: %v", err)
			}
			if q.Len() != len(got) {
				t.Fatalf("older segment: Len() = %d, want %d", q.Len(), len(got))
			}
			q.Close()
			return
		}
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Offset != kept {
			t.Fatalf("Open of a damaged older segment: %v, want a *CorruptError at offset %d", err, kept)
		}
	})
}

// FuzzCursorFile opens an empty spool whose cursor file holds arbitrary
// bytes. Open must either fail with a *CorruptError, exactly when
// readCursor does, or resume at the cursor readCursor reads (the next
// record appended gets that number) and leave a slotted cursor file with
// both slots valid and holding it. Seeds are added here and in
// testdata/fuzz/FuzzCursorFile.
func FuzzCursorFile(f *testing.F) {
	slotted := func(gen0, seq0, gen1, seq1 uint64) []byte {
		b := make([]byte, cursorFileSize)
		encodeCursorSlot(b, gen0, seq0)
		encodeCursorSlot(b[cursorSlotStride:], gen1, seq1)
		return b
	}
	f.Add(slotted(0, 7, 1, 7))
	f.Add(slotted(4, 9, 3, 8))
	torn := slotted(2, 5, 3, 6)
	clear(torn[cursorSlotStride+16 : cursorSlotStride+cursorSlotLen])
	f.Add(torn)
	f.Add(slotted(1, 1, 2, 2))
	f.Add(make([]byte, cursorFileSize))
	f.Add([]byte("42\n"))
	f.Add([]byte("18446744073709551615\n"))
	f.Add([]byte("18446744073709551616\n"))
	f.Add([]byte(""))
	f.Add([]byte("\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, cursorName)
		if err := os.WriteFile(path, data, filePerm); err != nil {
			t.Fatal(err)
		}
		want, rerr := readCursor(vfs.OS, path, discardLogger())
		q, err := Open(dir, Config{Logger: discardLogger(), MinFreeBytes: -1})
		var ce *CorruptError
		if rerr != nil || err != nil {
			if !errors.As(rerr, &ce) || !errors.As(err, &ce) || ce.Path != path {
				t.Fatalf("readCursor: %v; Open: %v; want both a *CorruptError for %s", rerr, err, path)
			}
			return
		}
		if want.kind == cursorNone || (want.kind == cursorSlots) != (len(data) == cursorFileSize) {
			t.Fatalf("readCursor of %d bytes: kind %d", len(data), want.kind)
		}
		if err := q.Append(recs(0, 1)); err != nil {
			t.Fatal(err)
		}
		if err := q.Close(); err != nil {
			t.Fatal(err)
		}
		files, err := listSegments(vfs.OS, dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(files) != 1 || files[0].base != want.seq {
			t.Fatalf("cursor %d: segments %+v, want one numbered from the cursor", want.seq, files)
		}
		got, err := readCursor(vfs.OS, path, discardLogger())
		if err != nil || got.kind != cursorSlots || got.seq != want.seq {
			t.Fatalf("cursor file after Open: %+v, %v; want slotted, holding %d", got, err, want.seq)
		}
		if want.kind == cursorText {
			checkSlotted(t, dir, want.seq)
		}
	})
}

func mustBatchSize(tb testing.TB, recs []Record) int64 {
	tb.Helper()
	n, err := batchSize(recs)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}
