package spool

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// TestDiskFull fills a 1 MiB filesystem, with no free-space reserve (as
// when another writer takes the space): Append must fail with an error
// wrapping ENOSPC, leave the spool as it was, and work again once Ack has
// freed space; a reopen finds no torn tail to drop.
func TestDiskFull(t *testing.T) {
	dir := filepath.Join(testsupport.MountTmpfs(t, "1m"), "spool")
	cfg := Config{SegmentBytes: 64 << 10, MaxBytes: 64 << 20, MinFreeBytes: -1} // MaxBytes is not the limit here
	q := open(t, dir, cfg)

	// Batches of ~10 KiB never fill a tmpfs page exactly, so the write
	// that fails is partly written first.
	batch := func(first int) []Record {
		b := recs(first, 10)
		for i := range b {
			b[i].Value = append(b[i].Value, make([]byte, 1000)...)
		}
		return b
	}
	var want []Record
	var err error
	for {
		b := batch(len(want))
		if err = q.Append(b); err != nil {
			break
		}
		want = append(want, b...)
	}
	if !errors.Is(err, syscall.ENOSPC) || errors.Is(err, ErrFull) {
		t.Fatalf("Append on a full disk: %v, want an error wrapping ENOSPC", err)
	}
	t.Logf("disk full after %d records (%d bytes): %v", len(want), q.Bytes(), err)
	if q.Len() != len(want) {
		t.Fatalf("Len() = %d after the failed Append, want %d", q.Len(), len(want))
	}
	checkBytes(t, q, dir)
	equalRecords(t, peekAll(t, q), want)

	// Still full: fails the same way, and still consistent.
	if err := q.Append(batch(len(want))); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("second Append on a full disk: %v", err)
	}
	checkBytes(t, q, dir)

	// Ack (which must manage to write its cursor on the full disk) frees
	// the first segments; then Append works.
	acked := len(want) / 2
	if err := q.Ack(acked); err != nil {
		t.Fatalf("Ack on a full disk: %v", err)
	}
	checkBytes(t, q, dir)
	more := batch(len(want))
	appendAll(t, q, more)
	want = append(want[acked:], more...)
	equalRecords(t, peekAll(t, q), want)

	// Reopen: nothing torn, nothing lost.
	reopenIntact(t, q, dir, cfg, want, "ENOSPC")
}

// TestDiskFullMidSegment fills the disk inside one segment, with no
// free-space reserve, so the failing write is a partial one in a file with
// records before it, and then drains the spool: Ack must free the whole
// segment and the cursor still fit.
func TestDiskFullMidSegment(t *testing.T) {
	dir := filepath.Join(testsupport.MountTmpfs(t, "1m"), "spool")
	q := open(t, dir, Config{SegmentBytes: 16 << 20, MinFreeBytes: -1})
	var want []Record
	var err error
	for {
		b := recs(len(want), 7)
		for i := range b {
			b[i].Value = append(b[i].Value, make([]byte, 1500)...)
		}
		if err = q.Append(b); err != nil {
			break
		}
		want = append(want, b...)
	}
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Append on a full disk: %v, want an error wrapping ENOSPC", err)
	}
	if names, _ := segmentFiles(t, dir); len(names) != 1 {
		t.Fatalf("segments %v, want one", names)
	}
	checkBytes(t, q, dir)
	equalRecords(t, peekAll(t, q), want)
	if err := q.Ack(len(want)); err != nil {
		t.Fatalf("Ack of everything on a full disk: %v", err)
	}
	if q.Bytes() != 0 {
		t.Fatalf("Bytes() = %d after draining", q.Bytes())
	}
	appendAll(t, q, recs(0, 3))
	equalRecords(t, peekAll(t, q), recs(0, 3))
}

// paddedRecs returns n records numbered from first, each padded to over
// pad bytes.
func paddedRecs(first, n, pad int) []Record {
	b := recs(first, n)
	for i := range b {
		b[i].Value = append(b[i].Value, make([]byte, pad)...)
	}
	return b
}

// fillDisk appends to the file at path until its filesystem has no block
// left, and checks that it has none.
func fillDisk(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		_, err := f.Write(buf)
		if errors.Is(err, syscall.ENOSPC) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if free := freeBytes(t, path); free != 0 {
		t.Fatalf("filled the filesystem of %s, and %d bytes are still free", path, free)
	}
}

func freeBytes(t *testing.T, path string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}

// TestAckOnFullDisk drains a spool whose filesystem is completely full (the
// spool stopped at its free-space reserve, then another file took the
// rest), a few records at a time from one segment: every Ack must write
// the cursor although no block is free and no segment can be deleted
// until the last. Reopening on the full disk finds the spool empty, and
// Append works again once the other file is gone.
func TestAckOnFullDisk(t *testing.T) {
	mnt := testsupport.MountTmpfs(t, "1m")
	dir := filepath.Join(mnt, "spool")
	q := open(t, dir, Config{}) // the default reserve and 64 MiB segments
	var want []Record
	for {
		b := paddedRecs(len(want), 10, 1000)
		err := q.Append(b)
		if errors.Is(err, ErrFull) || errors.Is(err, syscall.ENOSPC) {
			t.Logf("spool stopped after %d records (%d bytes): %v", len(want), q.Bytes(), err)
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, b...)
	}
	if names, _ := segmentFiles(t, dir); len(names) != 1 || len(want) < 100 {
		t.Fatalf("%d records in segments %v, want many in one", len(want), names)
	}
	filler := filepath.Join(mnt, "filler")
	fillDisk(t, filler)

	for acked := 0; q.Len() > 0; {
		got, err := q.Peek(7)
		if err != nil {
			t.Fatalf("Peek after %d acked: %v", acked, err)
		}
		equalRecords(t, got, want[acked:min(acked+7, len(want))])
		if err := q.Ack(len(got)); err != nil {
			t.Fatalf("Ack on a full filesystem after %d of %d records: %v", acked, len(want), err)
		}
		acked += len(got)
		if q.Len() != len(want)-acked {
			t.Fatalf("Len() = %d after acking %d of %d", q.Len(), acked, len(want))
		}
	}
	if q.Bytes() != 0 {
		t.Fatalf("Bytes() = %d after draining", q.Bytes())
	}
	checkBytes(t, q, dir)
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}

	// Full again (the drain freed the segment): Open must need no space.
	fillDisk(t, filler)
	cfg := Config{}
	q = open(t, dir, cfg)
	if q.Len() != 0 || q.Bytes() != 0 {
		t.Fatalf("reopened drained spool on a full disk: Len() = %d, Bytes() = %d", q.Len(), q.Bytes())
	}
	if err := q.Append(recs(0, 1)); !errors.Is(err, ErrFull) {
		t.Fatalf("Append on a full disk: %v, want ErrFull", err)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	more := paddedRecs(len(want), 10, 1000)
	appendAll(t, q, more)
	if names, _ := segmentFiles(t, dir); len(names) != 1 || names[0] != filepath.Base(segmentPath(dir, uint64(len(want)))) {
		t.Fatalf("segments after draining %d records and appending: %v", len(want), names)
	}
	q.Close()
	q = open(t, dir, cfg)
	equalRecords(t, peekAll(t, q), more)
}

// TestMinFreeBytes: Append returns ErrFull, not ENOSPC, once the batch
// would take the free space below Config.MinFreeBytes, and leaves every
// record appended before intact.
func TestMinFreeBytes(t *testing.T) {
	mnt := testsupport.MountTmpfs(t, "2m")
	dir := filepath.Join(mnt, "spool")
	const reserve = 512 << 10
	cfg := Config{SegmentBytes: 256 << 10, MinFreeBytes: reserve}
	q := open(t, dir, cfg)
	var want, b []Record
	var err error
	for {
		b = paddedRecs(len(want), 10, 1000)
		if err = q.Append(b); err != nil {
			break
		}
		want = append(want, b...)
	}
	if !errors.Is(err, ErrFull) || errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Append past the reserve: %v, want ErrFull", err)
	}
	free, size := freeBytes(t, mnt), mustBatchSize(t, b)
	t.Logf("ErrFull after %d records (%d bytes), %d bytes free: %v", len(want), q.Bytes(), free, err)
	if free-size >= reserve {
		t.Fatalf("ErrFull with %d bytes free: the batch of %d fits above the reserve of %d", free, size, reserve)
	}
	if free < reserve-4096 { // the last Append's partly used page
		t.Fatalf("%d bytes free, the spool went below its reserve of %d", free, reserve)
	}
	if names, _ := segmentFiles(t, dir); len(names) < 3 {
		t.Fatalf("segments %v, want the spool to have rolled", names)
	}
	if q.Len() != len(want) {
		t.Fatalf("Len() = %d after ErrFull, want %d", q.Len(), len(want))
	}
	checkBytes(t, q, dir)

	// Nothing is damaged: a reopen reads every record back, no torn tail.
	q = reopenIntact(t, q, dir, cfg, want, "ErrFull")
	if err := q.Append(b); !errors.Is(err, ErrFull) {
		t.Fatalf("Append after reopening: %v, want ErrFull", err)
	}

	// Acking frees segments, and Append works again.
	if err := q.Ack(len(want)); err != nil {
		t.Fatal(err)
	}
	appendAll(t, q, b)
	equalRecords(t, peekAll(t, q), b)
}

// TestConvertTextCursorOnFullDisk: converting an old text cursor needs a
// block, so on a full disk Open fails, saying so, and leaves the text
// cursor for the next Open, which converts it once there is space.
func TestConvertTextCursorOnFullDisk(t *testing.T) {
	mnt := testsupport.MountTmpfs(t, "1m")
	dir := filepath.Join(mnt, "spool")
	want := writeTextCursorSpool(t, dir, 10, 4)
	filler := filepath.Join(mnt, "filler")
	fillDisk(t, filler)

	_, err := Open(dir, Config{Logger: discardLogger()})
	if err == nil || !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "convert the text cursor file "+filepath.Join(dir, "cursor")) {
		t.Fatalf("Open converting a text cursor on a full disk: %v, want an error naming the conversion and wrapping ENOSPC", err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "cursor")); err != nil || string(got) != "4\n" {
		t.Fatalf("text cursor after the failed conversion: %q, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cursor.tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("cursor.tmp left behind: %v", err)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	q := open(t, dir, Config{})
	equalRecords(t, peekAll(t, q), want[4:])
	checkSlotted(t, dir, 4)
}

// reopenIntact closes q, opens dir again and checks that every record of
// want is read back and no torn tail was dropped (after what); it returns
// the reopened queue.
func reopenIntact(t *testing.T, q *Queue, dir string, cfg Config, want []Record, what string) *Queue {
	t.Helper()
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	var logs logBuffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	q = open(t, dir, cfg)
	equalRecords(t, peekAll(t, q), want)
	if strings.Contains(logs.String(), "torn") {
		t.Fatalf("reopen after %s dropped a torn tail:\n%s", what, logs.String())
	}
	return q
}
