package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/lineformat"
)

// offlineReference is what RunOffline must write for lines: each line
// processed in order on this goroutine, each output as one JSON line.
func offlineReference(p *Processor, f *lineformat.Format, lines [][]byte) ([]byte, OfflineStats) {
	var out []byte
	var outs []Output
	st := OfflineStats{Lines: len(lines)}
	for _, line := range lines {
		outs = p.Process(context.Background(), f, line, nil, outs[:0])
		if len(outs) == 1 && outs[0].Topic == p.ErrorTopic() {
			st.Invalid++
		} else {
			st.Valid++
		}
		for _, o := range outs {
			out = fmt.Appendf(out, `{"topic":%s,"key":null,"value":%s}`+"\n", capsule.AppendString(nil, o.Topic), o.Value)
		}
	}
	return out, st
}

// TestRunOfflineWorkersSameBytes: on the standard workload lines, the
// output is byte for byte that of processing the lines one after the
// other, whatever the number of workers.
func TestRunOfflineWorkersSameBytes(t *testing.T) {
	raw, lines := loadWorkload(t)
	p := newWorkloadProcessor(t)
	f := mustFormat(t, workloadFormat)
	want, wantStats := offlineReference(p, f, lines)
	for _, workers := range []int{1, 2, 3, 8} {
		var out bytes.Buffer
		st, err := p.RunOffline(t.Context(), f, bytes.NewReader(raw), &out, OfflineConfig{Workers: workers})
		if err != nil {
			t.Fatalf("workers=%d: %v", workers, err)
		}
		if st != wantStats {
			t.Errorf("workers=%d: stats %+v, want %+v", workers, st, wantStats)
		}
		if !bytes.Equal(out.Bytes(), want) {
			t.Errorf("workers=%d: output differs from the sequential one (%d bytes, want %d)", workers, out.Len(), len(want))
		}
	}
}

// TestRunOfflineLines: line ends (LF, CRLF, none at the end of the input),
// empty lines, a line longer than a chunk and more lines than fit in one
// chunk all come out in order, the same with 1 and 4 workers.
func TestRunOfflineLines(t *testing.T) {
	p := newTestProcessor(t, Config{}, "01")
	f := mustFormat(t, beaconFormat)
	valid := beaconLine(`{"schema":"Generic","revision":13,"event":{"articleId":1,"articleTitle":"t"}}`, 1)
	var in strings.Builder
	var lines [][]byte
	add := func(line, end string) {
		in.WriteString(line + end)
		lines = append(lines, []byte(line))
	}
	add(valid, "\n")
	add("", "\n")
	add(valid, "\r\n")
	add(strings.Repeat("x", offlineChunkBytes+1000), "\n") // a chunk of its own, an EventError
	for i := range 3 * offlineChunkLines {
		add(beaconLine(fmt.Sprintf(`{"schema":"Generic","revision":13,"event":{"articleId":%d,"articleTitle":"t"}}`, i), i), "\n")
	}
	add(valid, "") // no "\n" at the end
	want, wantStats := offlineReference(p, f, lines)
	for _, workers := range []int{1, 4} {
		var out bytes.Buffer
		st, err := p.RunOffline(t.Context(), f, strings.NewReader(in.String()), &out, OfflineConfig{Workers: workers})
		if err != nil {
			t.Fatalf("workers=%d: %v", workers, err)
		}
		if st != wantStats || !bytes.Equal(out.Bytes(), want) {
			t.Errorf("workers=%d: stats %+v and %d bytes, want %+v and %d bytes", workers, st, out.Len(), wantStats, len(want))
		}
	}
}

// endlessReader repeats data forever and counts the bytes read.
type endlessReader struct {
	data []byte
	off  int
	read atomic.Int64
}

func (r *endlessReader) Read(b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m := copy(b[n:], r.data[r.off:])
		n += m
		r.off = (r.off + m) % len(r.data)
	}
	r.read.Add(int64(n))
	return n, nil
}

// maxOfflineRead bounds what RunOffline reads ahead of the writer: every
// chunk in flight, full, plus the read buffer and one line.
func maxOfflineRead(workers, longestLine int) int64 {
	return int64((2*workers+2)*(offlineChunkBytes+longestLine) + 64<<10 + longestLine)
}

// failingWriter fails every write.
type failingWriter struct{ writes int }

var errDiskFull = errors.New("disk full")

func (w *failingWriter) Write([]byte) (int, error) {
	w.writes++
	return 0, errDiskFull
}

// TestRunOfflineWriteError: a write error ends the run, on endless input,
// after reading no more than the chunks in flight.
func TestRunOfflineWriteError(t *testing.T) {
	raw, _ := loadWorkload(t)
	p := newWorkloadProcessor(t)
	f := mustFormat(t, workloadFormat)
	in := &endlessReader{data: raw}
	var w failingWriter
	_, err := p.RunOffline(t.Context(), f, in, &w, OfflineConfig{Workers: 2})
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("error %v, want the write error", err)
	}
	if w.writes != 1 {
		t.Errorf("%d writes after the first failed, want none", w.writes-1)
	}
	if n, limit := in.read.Load(), maxOfflineRead(2, 1300); n > limit {
		t.Errorf("read %d bytes of endless input, want at most %d (bounded by the chunks in flight)", n, limit)
	}
}

// cancellingWriter cancels the run at its first write, and keeps what it
// is given.
type cancellingWriter struct {
	bytes.Buffer
	cancel context.CancelFunc
}

func (w *cancellingWriter) Write(b []byte) (int, error) {
	w.cancel()
	return w.Buffer.Write(b)
}

// TestRunOfflineCancel: when ctx is done, reading stops (the input is
// endless), and what was written is the whole output of a prefix of the
// input.
func TestRunOfflineCancel(t *testing.T) {
	raw, lines := loadWorkload(t)
	p := newWorkloadProcessor(t)
	f := mustFormat(t, workloadFormat)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	in := &endlessReader{data: raw}
	w := &cancellingWriter{cancel: cancel}
	st, err := p.RunOffline(ctx, f, in, w, OfflineConfig{Workers: 3})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if st.Lines == 0 || st.Lines > len(lines) {
		t.Fatalf("%d lines written; the test wants a prefix of the first %d", st.Lines, len(lines))
	}
	want, wantStats := offlineReference(p, f, lines[:st.Lines])
	if st != wantStats || !bytes.Equal(w.Bytes(), want) {
		t.Errorf("stats %+v and %d bytes, want the output of the first %d lines: %+v and %d bytes", st, w.Len(), st.Lines, wantStats, len(want))
	}
	if n, limit := in.read.Load(), maxOfflineRead(3, 1300); n > limit {
		t.Errorf("read %d bytes of endless input, want at most %d", n, limit)
	}
}

// errAfterReader returns data, then err.
type errAfterReader struct {
	data []byte
	err  error
}

func (r *errAfterReader) Read(b []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(b, r.data)
	r.data = r.data[n:]
	return n, nil
}

// TestRunOfflineReadError: a read error ends the run with that error, after
// writing the outputs of every line read before it.
func TestRunOfflineReadError(t *testing.T) {
	_, lines := loadWorkload(t)
	p := newWorkloadProcessor(t)
	f := mustFormat(t, workloadFormat)
	errBroken := errors.New("broken pipe")
	in := append(bytes.Join(lines[:1000], []byte("\n")), '\n')
	in = append(in, lines[1000][:100]...) // cut mid-line by the error
	var out bytes.Buffer
	st, err := p.RunOffline(t.Context(), f, &errAfterReader{data: in, err: errBroken}, &out, OfflineConfig{Workers: 2})
	if !errors.Is(err, errBroken) {
		t.Fatalf("error %v, want the read error", err)
	}
	want, wantStats := offlineReference(p, f, append(lines[:1000:1000], lines[1000][:100]))
	if st != wantStats || !bytes.Equal(out.Bytes(), want) {
		t.Errorf("stats %+v and %d bytes, want %+v and %d bytes", st, out.Len(), wantStats, len(want))
	}
}
