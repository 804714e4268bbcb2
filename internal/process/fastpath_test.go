package process

import (
	"context"
	"strconv"
	"testing"

	"github.com/eventlogging/eventlogging/internal/capsule"
)

// TestFastPathTakesTheWorkload: every valid line of the standard workload
// takes the fast path, and no invalid one does.
func TestFastPathTakesTheWorkload(t *testing.T) {
	_, lines := loadWorkload(t)
	p := newWorkloadProcessor(t)
	f := mustFormat(t, workloadFormat)
	ctx := context.Background()
	fast, valid := 0, 0
	var outs []Output
	for i, line := range lines {
		outs = p.Process(ctx, f, line, nil, outs[:0])
		isValid := outs[0].Topic != p.ErrorTopic()
		s := new(scratch)
		if err := f.Parse(line, &s.fields); err != nil {
			if isValid {
				t.Fatalf("line %d: valid, but does not parse: %v", i+1, err)
			}
			continue
		}
		_, ok := p.buildFast(ctx, &capsule.Capsule{Revision: -1}, s)
		if ok && !isValid {
			t.Errorf("line %d: invalid, but the fast path accepts it", i+1)
		}
		if isValid {
			valid++
			if ok {
				fast++
			} else if valid-fast <= 5 {
				t.Errorf("line %d: valid, but takes the general path: %s", i+1, s.fields.Capsule)
			}
		}
	}
	t.Logf("%d of %d valid lines took the fast path", fast, valid)
}

// BenchmarkProcessStandardValid is BenchmarkProcessStandard on the valid
// lines of the workload only: its allocs/line is the "allocations per
// valid line" of the performance targets.
func BenchmarkProcessStandardValid(b *testing.B) { benchmarkWorkloadShare(b, false) }

// BenchmarkProcessStandardInvalid is BenchmarkProcessStandard on the
// workload's invalid lines only (one in twenty): what an EventError costs,
// from explaining the failure to encoding the error record.
func BenchmarkProcessStandardInvalid(b *testing.B) { benchmarkWorkloadShare(b, true) }

// benchmarkWorkloadShare runs benchmarkLines over the workload's lines
// that go to the error topic (invalid) or to the others.
func benchmarkWorkloadShare(b *testing.B, invalid bool) {
	_, all := loadWorkload(b)
	p := newWorkloadProcessor(b)
	f := mustFormat(b, workloadFormat)
	ctx := context.Background()
	var lines [][]byte
	var outs []Output
	size := 0
	for _, line := range all {
		outs = p.Process(ctx, f, line, nil, outs[:0])
		if (outs[0].Topic == p.ErrorTopic()) == invalid {
			lines = append(lines, line)
			size += len(line)
		}
	}
	benchmarkLines(b, p, f, lines, int64(size/len(lines)))
}

// TestFastPathConcurrent: goroutines sharing a fresh processor (its name
// and host tables filling while they run) give the outputs one goroutine
// gives. Run with -race.
func TestFastPathConcurrent(t *testing.T) {
	_, lines := loadWorkload(t)
	lines = lines[:400]
	f := mustFormat(t, workloadFormat)
	ctx := context.Background()
	want := make([][]Output, len(lines))
	ref := newWorkloadProcessor(t)
	for i, line := range lines {
		want[i] = ref.Process(ctx, f, line, nil, nil)
	}
	p := newWorkloadProcessor(t)
	const workers = 4
	errs := make(chan string, workers)
	for w := range workers {
		go func() {
			for k := range lines {
				i := (k + w*len(lines)/workers) % len(lines)
				got := p.Process(ctx, f, lines[i], nil, nil)
				if len(got) != len(want[i]) || string(got[0].Value) != string(want[i][0].Value) {
					errs <- "line " + strconv.Itoa(i+1) + ": outputs differ"
					return
				}
			}
			errs <- ""
		}()
	}
	for range workers {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
}
