package spool

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/eventlogging/eventlogging/internal/testsupport"
	"github.com/eventlogging/eventlogging/internal/vfs"
)

// logBuffer collects log output; safe for concurrent writes.
type logBuffer = testsupport.SyncBuffer

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// open opens dir and closes the queue at the end of the test.
func open(t testing.TB, dir string, cfg Config) *Queue {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = discardLogger()
	}
	q, err := Open(dir, cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { q.Close() })
	return q
}

// recs returns n records numbered from first.
func recs(first, n int) []Record {
	out := make([]Record, n)
	for i := range out {
		k := first + i
		out[i] = Record{
			Topic: fmt.Sprintf("topic-%d", k%3),
			Value: []byte(fmt.Sprintf("value %d %s", k, strings.Repeat("x", k%17))),
		}
	}
	return out
}

func appendAll(t testing.TB, q *Queue, batches ...[]Record) {
	t.Helper()
	for _, b := range batches {
		if err := q.Append(b); err != nil {
			t.Fatalf("Append: %v", err)
		}
	}
}

func equalRecords(t testing.TB, got, want []Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i].Topic != want[i].Topic || !bytes.Equal(got[i].Value, want[i].Value) {
			t.Fatalf("record %d = {%q %q}, want {%q %q}", i, got[i].Topic, got[i].Value, want[i].Topic, want[i].Value)
		}
	}
}

// peekAll returns every un-acked record without acking it.
func peekAll(t testing.TB, q *Queue) []Record {
	t.Helper()
	got, err := q.Peek(q.Len() + 1)
	if err != nil {
		t.Fatalf("Peek: %v", err)
	}
	return got
}

// segmentFiles returns the segment file names in dir and their total size.
func segmentFiles(t testing.TB, dir string) ([]string, int64) {
	t.Helper()
	files, err := listSegments(vfs.OS, dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var total int64
	for _, f := range files {
		fi, err := os.Stat(f.path)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, filepath.Base(f.path))
		total += fi.Size()
	}
	return names, total
}

func checkBytes(t testing.TB, q *Queue, dir string) {
	t.Helper()
	_, total := segmentFiles(t, dir)
	if got := q.Bytes(); got != total {
		t.Fatalf("Bytes() = %d, segment files hold %d", got, total)
	}
}

func TestFrameFormat(t *testing.T) {
	dir := t.TempDir()
	q := open(t, dir, Config{})
	appendAll(t, q, []Record{{Topic: "ab", Value: []byte("xyz")}, {Topic: "", Value: nil}})
	got, err := os.ReadFile(filepath.Join(dir, "00000000000000000000.spool"))
	if err != nil {
		t.Fatal(err)
	}
	frame := func(topic, value string) []byte {
		p := binary.BigEndian.AppendUint16(nil, uint16(len(topic)))
		p = append(append(p, topic...), value...)
		b := binary.BigEndian.AppendUint32(nil, uint32(len(p)))
		b = binary.BigEndian.AppendUint32(b, crc32.Checksum(p, crc32.MakeTable(crc32.Castagnoli)))
		return append(b, p...)
	}
	want := append(frame("ab", "xyz"), frame("", "")...)
	if !bytes.Equal(got, want) {
		t.Fatalf("segment file:\n got % x\nwant % x", got, want)
	}

	// Open wrote the cursor 0 in both slots (generations 0 and 1); Ack
	// writes generation 2, to slot 0.
	if err := q.Ack(1); err != nil {
		t.Fatal(err)
	}
	slot := func(gen, seq uint64) []byte {
		b := append([]byte("SPCR"), 0, 0, 0, 1)
		b = binary.BigEndian.AppendUint64(b, gen)
		b = binary.BigEndian.AppendUint64(b, seq)
		b = append(b, 0, 0, 0, 0)
		return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
	}
	want = make([]byte, 8192)
	copy(want, slot(2, 1))
	copy(want[4096:], slot(1, 0))
	cur, err := os.ReadFile(filepath.Join(dir, "cursor"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(cur, want) {
		t.Fatalf("cursor file: %d bytes\n got slots % x, % x\nwant slots % x, % x",
			len(cur), cur[:min(len(cur), 32)], cur[min(len(cur), 4096):min(len(cur), 4128)], want[:32], want[4096:4128])
	}
}

func TestAppendPeekAckAcrossSegments(t *testing.T) {
	dir := t.TempDir()
	q := open(t, dir, Config{SegmentBytes: 256})
	var want []Record
	for i := 0; len(want) < 200; i++ {
		b := recs(len(want), 1+i%5)
		appendAll(t, q, b)
		want = append(want, b...)
	}
	if q.Len() != len(want) {
		t.Fatalf("Len() = %d, want %d", q.Len(), len(want))
	}
	names, _ := segmentFiles(t, dir)
	if len(names) < 10 {
		t.Fatalf("%d segment files, want the segments to have rolled many times", len(names))
	}
	checkBytes(t, q, dir)

	// Peek does not remove.
	a, err := q.Peek(7)
	if err != nil {
		t.Fatal(err)
	}
	b, err := q.Peek(7)
	if err != nil {
		t.Fatal(err)
	}
	equalRecords(t, a, want[:7])
	equalRecords(t, b, want[:7])

	// Ack fewer than peeked, more than peeked, without a peek, and in
	// step with Peek; every time the next Peek starts right after.
	acked := 0
	ack := func(n int) {
		t.Helper()
		if err := q.Ack(n); err != nil {
			t.Fatalf("Ack(%d): %v", n, err)
		}
		acked += n
		if q.Len() != len(want)-acked {
			t.Fatalf("Len() = %d after acking %d, want %d", q.Len(), acked, len(want)-acked)
		}
		checkBytes(t, q, dir)
	}
	ack(3)
	got, err := q.Peek(5)
	if err != nil {
		t.Fatal(err)
	}
	equalRecords(t, got, want[3:8])
	ack(11) // past what the last Peek returned
	ack(20) // no Peek at all
	for q.Len() > 0 {
		got, err := q.Peek(9)
		if err != nil {
			t.Fatal(err)
		}
		equalRecords(t, got, want[acked:min(acked+9, len(want))])
		ack(len(got))
	}
	if names, _ := segmentFiles(t, dir); len(names) != 0 || q.Bytes() != 0 {
		t.Fatalf("drained spool keeps %v, Bytes() = %d", names, q.Bytes())
	}
	if got, err := q.Peek(10); err != nil || len(got) != 0 {
		t.Fatalf("Peek on an empty spool = %d records, %v", len(got), err)
	}

	// Appending after draining starts a new segment at the next number.
	appendAll(t, q, recs(1000, 3))
	names, _ = segmentFiles(t, dir)
	if want := []string{fmt.Sprintf("%020d.spool", len(want))}; !slices.Equal(names, want) {
		t.Fatalf("segments after drain and append = %v, want %v", names, want)
	}
	equalRecords(t, peekAll(t, q), recs(1000, 3))
}

func TestAckErrors(t *testing.T) {
	q := open(t, t.TempDir(), Config{})
	appendAll(t, q, recs(0, 3))
	if err := q.Ack(4); err == nil {
		t.Fatal("Ack(4) with 3 records: no error")
	}
	if err := q.Ack(-1); err == nil {
		t.Fatal("Ack(-1): no error")
	}
	if err := q.Ack(0); err != nil {
		t.Fatalf("Ack(0): %v", err)
	}
	if q.Len() != 3 {
		t.Fatalf("Len() = %d after failed Acks, want 3", q.Len())
	}
	if got, err := q.Peek(0); err != nil || got != nil {
		t.Fatalf("Peek(0) = %v, %v", got, err)
	}
}

func TestRecordLimits(t *testing.T) {
	q := open(t, t.TempDir(), Config{})
	long := strings.Repeat("t", 1<<16)
	if err := q.Append([]Record{{Topic: "ok"}, {Topic: long}}); err == nil {
		t.Fatal("Append with a 65536-byte topic: no error")
	}
	if err := q.Append(nil); err != nil {
		t.Fatalf("Append(nil): %v", err)
	}
	if q.Len() != 0 || q.Bytes() != 0 {
		t.Fatalf("after rejected appends Len() = %d, Bytes() = %d", q.Len(), q.Bytes())
	}
	edge := []Record{{Topic: long[:1<<16-1], Value: []byte("v")}, {}, {Topic: "t", Value: bytes.Repeat([]byte{0}, 1<<17)}}
	appendAll(t, q, edge)
	equalRecords(t, peekAll(t, q), edge)
}

func TestReopenResumesAtCursor(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{SegmentBytes: 300}
	q := open(t, dir, cfg)
	want := recs(0, 40)
	for i := 0; i < len(want); i += 4 {
		appendAll(t, q, want[i:i+4])
	}
	if err := q.Ack(13); err != nil {
		t.Fatal(err)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}

	q = open(t, dir, cfg)
	if q.Len() != 27 {
		t.Fatalf("Len() after reopen = %d, want 27", q.Len())
	}
	checkBytes(t, q, dir)
	equalRecords(t, peekAll(t, q), want[13:])
	more := recs(40, 5)
	appendAll(t, q, more)
	if err := q.Ack(2); err != nil {
		t.Fatal(err)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}

	q = open(t, dir, cfg)
	equalRecords(t, peekAll(t, q), append(want[15:], more...))
}

func TestReopenDrained(t *testing.T) {
	dir := t.TempDir()
	q := open(t, dir, Config{})
	appendAll(t, q, recs(0, 5))
	if err := q.Ack(5); err != nil {
		t.Fatal(err)
	}
	q.Close()
	q = open(t, dir, Config{})
	if q.Len() != 0 || q.Bytes() != 0 {
		t.Fatalf("reopened drained spool: Len() = %d, Bytes() = %d", q.Len(), q.Bytes())
	}
	appendAll(t, q, recs(5, 2))
	q.Close()
	q = open(t, dir, Config{})
	equalRecords(t, peekAll(t, q), recs(5, 2))
}

// TestCursorBeforeFirstSegment reproduces a crash inside Ack after it
// deleted acked segments and before it wrote the cursor.
func TestCursorBeforeFirstSegment(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{SegmentBytes: 200}
	q := open(t, dir, cfg)
	want := recs(0, 30)
	for i := range want {
		appendAll(t, q, want[i:i+1])
	}
	if err := q.Ack(17); err != nil {
		t.Fatal(err)
	}
	q.Close()
	files, err := listSegments(vfs.OS, dir)
	if err != nil {
		t.Fatal(err)
	}
	first := int(files[0].base)
	if first == 0 || first > 17 {
		t.Fatalf("first segment starts at %d, want acked segments deleted", first)
	}
	c, err := createCursor(vfs.OS, dir, mustOpen(t, dir), 0)
	if err != nil {
		t.Fatal(err)
	}
	c.f.Close()
	q = open(t, dir, cfg)
	equalRecords(t, peekAll(t, q), want[first:])
	if err := q.Ack(1); err != nil {
		t.Fatal(err)
	}
	q.Close()
	q = open(t, dir, cfg)
	equalRecords(t, peekAll(t, q), want[first+1:])
}

func TestCorruptCursorFile(t *testing.T) {
	for _, content := range []string{"12x\n", "12", "", "123456789012345678901\n", strings.Repeat("\x00", 8192), strings.Repeat("7", 8191) + "\n"} {
		dir := t.TempDir()
		path := filepath.Join(dir, "cursor")
		if err := os.WriteFile(path, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir, Config{Logger: discardLogger()})
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Path != path || !strings.Contains(err.Error(), "corrupt cursor file "+path) {
			t.Fatalf("Open with the cursor file %.40q: %v, want a *CorruptError naming %s", content, err, path)
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != content {
			t.Fatalf("Open changed the bad cursor file: %.40q, %v", got, err)
		}
	}
}

func TestOpenLocksDirectory(t *testing.T) {
	dir := t.TempDir()
	q := open(t, dir, Config{})
	if q2, err := Open(dir, Config{Logger: discardLogger()}); err == nil {
		q2.Close()
		t.Fatal("second Open of one directory succeeded")
	}
	q.Close()
	open(t, dir, Config{})
}

func TestClosed(t *testing.T) {
	q := open(t, t.TempDir(), Config{})
	appendAll(t, q, recs(0, 2))
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	if err := q.Append(recs(2, 1)); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close: %v", err)
	}
	if _, err := q.Peek(1); !errors.Is(err, ErrClosed) {
		t.Errorf("Peek after Close: %v", err)
	}
	if err := q.Ack(1); !errors.Is(err, ErrClosed) {
		t.Errorf("Ack after Close: %v", err)
	}
	if err := q.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if q.Len() != 2 {
		t.Errorf("Len() after Close = %d, want 2", q.Len())
	}
}

func TestBadConfig(t *testing.T) {
	if _, err := Open(t.TempDir(), Config{MaxBytes: -1}); err == nil {
		t.Fatal("Open with MaxBytes -1: no error")
	}
}

func TestFull(t *testing.T) {
	dir := t.TempDir()
	batch := recs(0, 4)
	size, err := batchSize(batch)
	if err != nil {
		t.Fatal(err)
	}
	// Two batches per segment, five segments.
	q := open(t, dir, Config{SegmentBytes: 2 * size, MaxBytes: 10 * size})
	for range 10 {
		appendAll(t, q, batch)
	}
	if err := q.Append(recs(0, 1)); !errors.Is(err, ErrFull) {
		t.Fatalf("Append past MaxBytes: %v, want ErrFull", err)
	}
	if q.Len() != 40 || q.Bytes() != 10*size {
		t.Fatalf("after ErrFull Len() = %d, Bytes() = %d; want 40, %d", q.Len(), q.Bytes(), 10*size)
	}
	checkBytes(t, q, dir)

	// Acking part of a segment frees nothing.
	if err := q.Ack(5); err != nil {
		t.Fatal(err)
	}
	if err := q.Append(batch); !errors.Is(err, ErrFull) {
		t.Fatalf("Append with a segment partly acked: %v, want ErrFull", err)
	}
	// Acking the rest of the first segment frees it.
	if err := q.Ack(3); err != nil {
		t.Fatal(err)
	}
	if q.Bytes() != 8*size {
		t.Fatalf("Bytes() = %d after freeing one segment, want %d", q.Bytes(), 8*size)
	}
	appendAll(t, q, batch, batch)
	if err := q.Append(batch); !errors.Is(err, ErrFull) {
		t.Fatalf("Append past MaxBytes again: %v, want ErrFull", err)
	}
	if err := q.Append(recs(0, 100)); !errors.Is(err, ErrFull) {
		t.Fatalf("Append of a batch larger than MaxBytes: %v, want ErrFull", err)
	}
}

// TestFullSmallerThanSegment: with MaxBytes below SegmentBytes no segment
// ever rolls, so draining must free the active segment.
func TestFullSmallerThanSegment(t *testing.T) {
	dir := t.TempDir()
	q := open(t, dir, Config{MaxBytes: 1000})
	n := 0
	for {
		err := q.Append(recs(n, 1))
		if errors.Is(err, ErrFull) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if err := q.Ack(n); err != nil {
		t.Fatal(err)
	}
	if q.Bytes() != 0 {
		t.Fatalf("Bytes() = %d after acking everything, want 0", q.Bytes())
	}
	appendAll(t, q, recs(n, 1))
	equalRecords(t, peekAll(t, q), recs(n, 1))
}

// TestReclaimAfterFailedAppend: Ack cannot delete the active segment while
// an Append writes to it; if that Append fails the next one must.
func TestReclaimAfterFailedAppend(t *testing.T) {
	dir := t.TempDir()
	q := open(t, dir, Config{MaxBytes: 1000})
	appendAll(t, q, recs(0, 3))
	q.mu.Lock()
	q.inflight = true // as if an Append were writing
	q.mu.Unlock()
	if err := q.Ack(3); err != nil {
		t.Fatal(err)
	}
	q.mu.Lock()
	q.inflight = false // and it failed
	q.mu.Unlock()
	if q.Bytes() == 0 {
		t.Fatal("Ack deleted the active segment during an Append")
	}
	appendAll(t, q, recs(3, 1))
	checkBytes(t, q, dir)
	if names, _ := segmentFiles(t, dir); len(names) != 1 || names[0] != fmt.Sprintf("%020d.spool", 3) {
		t.Fatalf("segments = %v, want the drained one replaced", names)
	}
}

func TestConcurrentAppendersOneConsumer(t *testing.T) {
	const appenders, batches = 6, 60
	// Small segments and MaxBytes, so that appenders roll segments, hit
	// ErrFull and retry while the consumer deletes segments under them.
	q := open(t, t.TempDir(), Config{SegmentBytes: 2048, MaxBytes: 16 << 10})
	batchLen := func(a, b int) int { return 1 + (a+b)%4 }

	var wg sync.WaitGroup
	stop := make(chan struct{}) // closed when the consumer gives up
	appendErrs := make([]error, appenders)
	for a := range appenders {
		wg.Go(func() {
			seq := 0
			for b := range batches {
				batch := make([]Record, batchLen(a, b))
				for i := range batch {
					batch[i] = Record{Topic: fmt.Sprintf("a%d", a), Value: fmt.Appendf(nil, "%d", seq)}
					seq++
				}
				for {
					err := q.Append(batch)
					if err == nil {
						break
					}
					if !errors.Is(err, ErrFull) {
						appendErrs[a] = err
						return
					}
					// As the intake's client would after a 503: try again.
					select {
					case <-stop:
						return
					default:
						runtime.Gosched()
					}
				}
			}
		})
	}
	appendersDone := make(chan struct{})
	go func() {
		wg.Wait()
		close(appendersDone)
	}()

	// One consumer, in this goroutine.
	next := make([]int, appenders) // next value expected from each appender
	consume := func() error {
		for n := 1; ; n = n%50 + 1 {
			got, err := q.Peek(n)
			if err != nil {
				return err
			}
			if len(got) == 0 {
				select {
				case <-appendersDone:
					if q.Len() == 0 {
						return nil
					}
				default:
					runtime.Gosched()
				}
				continue
			}
			for _, r := range got {
				var a, v int
				if _, err := fmt.Sscanf(r.Topic, "a%d", &a); err != nil {
					return err
				}
				if _, err := fmt.Sscanf(string(r.Value), "%d", &v); err != nil {
					return err
				}
				if v != next[a] {
					return fmt.Errorf("appender %d: got record %d, want %d", a, v, next[a])
				}
				next[a]++
			}
			if err := q.Ack(len(got)); err != nil {
				return err
			}
		}
	}
	err := consume()
	close(stop)
	<-appendersDone
	if err != nil {
		t.Fatal(err)
	}
	for a := range appenders {
		if appendErrs[a] != nil {
			t.Fatalf("appender %d: %v", a, appendErrs[a])
		}
		want := 0
		for b := range batches {
			want += batchLen(a, b)
		}
		if next[a] != want {
			t.Errorf("appender %d: %d records delivered, want %d", a, next[a], want)
		}
	}
	if q.Len() != 0 || q.Bytes() != 0 {
		t.Errorf("after delivering everything Len() = %d, Bytes() = %d", q.Len(), q.Bytes())
	}
}
