package spool

import (
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// mountTmpfs mounts a tmpfs of the given size option on a new directory
// and unmounts it when the test ends. It skips the test if mounting is not
// permitted (not root, or no CAP_SYS_ADMIN in this container).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := syscall.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a %s tmpfs to fill up (needs root with CAP_SYS_ADMIN): %v", size, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// TestDiskFull fills a 1 MiB filesystem: Append must fail with an error
// wrapping ENOSPC, leave the spool as it was, and work again once Ack has
// freed space; a reopen finds no torn tail to drop.
func TestDiskFull(t *testing.T) {
	dir := filepath.Join(mountTmpfs(t, "1m"), "spool")
	cfg := Config{SegmentBytes: 64 << 10, MaxBytes: 64 << 20} // MaxBytes is not the limit here
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
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	var logs logBuffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	q = open(t, dir, cfg)
	equalRecords(t, peekAll(t, q), want)
	if strings.Contains(logs.String(), "torn") {
		t.Fatalf("reopen after ENOSPC dropped a torn tail:\n%s", logs.String())
	}
}

// TestDiskFullMidSegment fills the disk inside one segment, so the failing
// write is a partial one in a file with records before it, and then drains
// the spool: Ack must free the whole segment and the cursor still fit.
func TestDiskFullMidSegment(t *testing.T) {
	dir := filepath.Join(mountTmpfs(t, "1m"), "spool")
	q := open(t, dir, Config{SegmentBytes: 16 << 20})
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
