package spool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/eventlogging/eventlogging/internal/vfs"
)

// The power-loss tests run a workload on a vfs.Mem, stop it at every
// mutating file-system operation in turn (a write, a truncate, an fsync, a
// create, a rename, a remove), throw away whatever was not fsync'd, and
// reopen. Then, for every crash point, they also crash the recovering Open
// at each of its own operations and reopen again. After each, the spool
// must hold what the package documentation promises:
//
//   - every record whose Append returned nil, unless an Ack covering it
//     was called;
//   - no record covered by an Ack that returned nil;
//   - of the records an Ack that did not return covered (the crash was
//     inside it), a suffix or none (the cursor moved or not);
//   - of the records of an Append that did not return, all or none;
//   - nothing else, each record once, in append order, numbered as
//     appended (Peek returns exactly the records from the head sequence
//     number to the next one).
//
// Then the recovered spool must go on: Append, Peek and Ack, and a reopen.

// powerLossDir is where the workloads keep the spool: two levels below the
// root, so that Open creates directories too.
const powerLossDir = "/data/spool"

// step is one call of a workload.
type step struct {
	op string // "open", "close", "append", "peek", "ack"
	n  int    // records to append, peek or ack; for peek and ack, -1 is all
}

// freshWorkload starts from nothing and goes through segment rolls, Acks
// inside a segment, across segments (deleting them), to the end (draining
// the spool), with and without a Peek first, and a reopen.
var freshWorkload = []step{
	{"open", 0},
	{"append", 1}, {"append", 3}, {"append", 4},
	{"peek", 5}, {"ack", 2},
	{"append", 8}, {"append", 2},
	{"peek", 10}, {"ack", 10},
	{"append", 14}, // larger than a segment: a file of its own
	{"peek", -1}, {"ack", -1},
	{"append", 2},
	{"close", 0},
	{"open", 0},
	{"peek", 1}, {"ack", 1},
	{"append", 9},
	{"ack", 3}, // beyond the last Peek: stepping over frames on disk
	{"append", 3},
}

// textCursorWorkload starts from a spool an older version left (segments
// and a text cursor), which Open converts to the slotted cursor file.
var textCursorWorkload = []step{
	{"open", 0},
	{"peek", 3}, {"ack", 3},
	{"append", 2},
	{"ack", 4},
	{"append", 12},
	{"peek", -1}, {"ack", -1},
}

// powerLossConfig is the Config of the workloads: small segments.
func powerLossConfig(fsys vfs.FS) Config {
	return Config{SegmentBytes: 256, FS: fsys, Logger: discardLogger()}
}

// idRecords returns n records numbered from first; the number is the
// first 8 bytes of the value, so that a record says which it is.
func idRecords(first, n int) []Record {
	out := make([]Record, n)
	for i := range out {
		id := first + i
		out[i] = Record{Topic: "t", Value: fmt.Appendf(nil, "%08d%s", id, strings.Repeat("x", id%13))}
	}
	return out
}

// recordID returns the number of a record idRecords made.
func recordID(r Record) (int, error) {
	if len(r.Value) < 8 {
		return 0, fmt.Errorf("record %q: too short", r.Value)
	}
	id, err := strconv.Atoi(string(r.Value[:8]))
	if err != nil || string(idRecords(id, 1)[0].Value) != string(r.Value) || r.Topic != "t" {
		return 0, fmt.Errorf("record {%q %q}: not one the workload appended", r.Topic, r.Value)
	}
	return id, nil
}

// history is what the workload's caller was told. Records are numbered
// from 0 in append order, as the spool numbers them.
type history struct {
	appended int // records 0 to appended-1: their Append returned nil
	pending  int // records of the Append that did not return (it crashed)
	acked    int // records 0 to acked-1 were covered by Acks that returned nil
	acking   int // records of the Ack that did not return
	crashed  string
}

// runWorkload runs steps on fsys from h until an operation fails, which
// must be the simulated crash, and returns what was returned to the
// caller. The queue is left open, as a process that lost its power would.
func runWorkload(t *testing.T, fsys *vfs.Mem, steps []step, h history) history {
	t.Helper()
	var q *Queue
	for i, s := range steps {
		var err error
		switch s.op {
		case "open":
			q, err = Open(powerLossDir, powerLossConfig(fsys))
		case "close":
			err = q.Close()
		case "append":
			h.pending = s.n
			err = q.Append(idRecords(h.appended, s.n))
			if err == nil {
				h.appended, h.pending = h.appended+s.n, 0
			}
		case "peek":
			n := s.n
			if n < 0 {
				n = q.Len()
			}
			var got []Record
			got, err = q.Peek(n)
			if err == nil {
				want := min(n, h.appended-h.acked)
				if len(got) != want {
					t.Fatalf("step %d, %v: %d records, want %d", i, s, len(got), want)
				}
				for j, r := range got {
					if id, err := recordID(r); err != nil || id != h.acked+j {
						t.Fatalf("step %d, %v: record %d is %d (%v), want %d", i, s, j, id, err, h.acked+j)
					}
				}
			}
		case "ack":
			n := s.n
			if n < 0 {
				n = q.Len()
			}
			h.acking = n
			err = q.Ack(n)
			if err == nil {
				h.acked, h.acking = h.acked+n, 0
			}
		default:
			t.Fatalf("step %d: unknown op %q", i, s.op)
		}
		if err != nil {
			if !errors.Is(err, vfs.ErrCrashed) {
				t.Fatalf("step %d, %v: %v, want only the simulated crash (at %q)", i, s, err, fsys.Crashed())
			}
			h.crashed = fmt.Sprintf("step %d %v, at %s", i, s, fsys.Crashed())
			return h
		}
	}
	return h
}

// checkAfterCrash checks that q, opened after a power loss, holds what h
// allows (see the top of this file). It returns the records it holds, as
// their numbers from the first to one past the last.
func checkAfterCrash(q *Queue, h history) (first, end int, err error) {
	got, err := q.Peek(q.Len() + 1)
	if err != nil {
		return 0, 0, fmt.Errorf("Peek: %w", err)
	}
	q.mu.Lock()
	head, next := int(q.headSeq), int(q.nextSeq)
	q.mu.Unlock()
	if len(got) != next-head || q.Len() != next-head {
		return 0, 0, fmt.Errorf("Peek returned %d records and Len() is %d, but the sequence numbers run from %d to %d", len(got), q.Len(), head, next)
	}
	for i, r := range got {
		id, err := recordID(r)
		if err != nil {
			return 0, 0, err
		}
		if id != head+i {
			return 0, 0, fmt.Errorf("record %d from the head (sequence number %d) is record %d", i, head+i, id)
		}
	}
	// The records held run from head to next. Count each one the caller
	// was told about.
	for id := range h.appended + h.pending {
		held := id >= head && id < next
		switch {
		case id < h.acked && held:
			return head, next, fmt.Errorf("record %d is back: an Ack covering it returned nil (acked %d, then %d in the Ack that crashed)", id, h.acked, h.acking)
		case id >= h.acked+h.acking && id < h.appended && !held:
			return head, next, fmt.Errorf("record %d is lost: its Append returned nil and no Ack covered it (acked %d, then %d in the Ack that crashed)", id, h.acked, h.acking)
		}
	}
	if next != h.appended && next != h.appended+h.pending {
		return head, next, fmt.Errorf("the spool ends before record %d: the Appends that returned nil end before %d, the one that crashed before %d (all or nothing)",
			next, h.appended, h.appended+h.pending)
	}
	return head, next, nil
}

// useAfterCrash checks that the recovered q goes on: it appends after the
// records it holds (first to end), acks them all, and is empty after a
// reopen.
func useAfterCrash(fsys *vfs.Mem, q *Queue, first, end int) error {
	if err := q.Append(idRecords(end, 3)); err != nil {
		return fmt.Errorf("Append: %w", err)
	}
	got, err := q.Peek(q.Len())
	if err != nil {
		return fmt.Errorf("Peek: %w", err)
	}
	for i, r := range got {
		if id, err := recordID(r); err != nil || id != first+i {
			return fmt.Errorf("after an Append of records %d to %d, record %d from the head is %d (%v), want %d", end, end+2, i, id, err, first+i)
		}
	}
	if len(got) != end+3-first {
		return fmt.Errorf("after an Append of records %d to %d, %d records from %d", end, end+2, len(got), first)
	}
	if err := q.Ack(len(got)); err != nil {
		return fmt.Errorf("Ack: %w", err)
	}
	if err := q.Close(); err != nil {
		return fmt.Errorf("Close: %w", err)
	}
	fsys.Crash()
	q, err = Open(powerLossDir, powerLossConfig(fsys))
	if err != nil {
		return fmt.Errorf("reopen: %w", err)
	}
	defer q.Close()
	if q.Len() != 0 {
		return fmt.Errorf("reopened after acking everything and a power loss: %d records", q.Len())
	}
	return nil
}

// powerLossAtEveryStep runs steps after setup, crashing at each of their
// operations and then at each operation of the recovering Open, and checks
// the spool after each; it returns the crash points it tried.
func powerLossAtEveryStep(t *testing.T, setup func(*testing.T, *vfs.Mem) history, steps []step) (points int) {
	t.Helper()
	run := func(crashAt int) (*vfs.Mem, history) {
		fsys := vfs.NewStrictMem()
		h := setup(t, fsys)
		fsys.CrashAfter(crashAt)
		return fsys, runWorkload(t, fsys, steps, h)
	}
	setupFS := vfs.NewStrictMem()
	setup(t, setupFS)
	fsys, h := run(-1)
	if h.crashed != "" {
		t.Fatalf("the workload without a crash failed: %s", h.crashed)
	}
	total := fsys.Ops() - setupFS.Ops() // the workload's operations

	for n := 0; n <= total; n++ {
		for m := 0; ; m++ {
			fsys, h := run(n)
			if n < total && h.crashed == "" {
				t.Fatalf("crash point %d of %d not reached", n, total)
			}
			what := fmt.Sprintf("power loss at operation %d of %d (%s)", n, total, h.crashed)
			if n == total {
				what = "power loss after the workload"
			}
			fsys.Crash()

			// A power loss during the recovery too, at its operation m.
			fsys.CrashAfter(m)
			q, err := Open(powerLossDir, powerLossConfig(fsys))
			recovered := fsys.Crashed() == ""
			switch {
			case err == nil && recovered:
				first, end, err := checkAfterCrash(q, h)
				if err != nil {
					t.Fatalf("%s, reopened: %v\nfiles:\n%s", what, err, fsys)
				}
				what += fmt.Sprintf(", reopened (records %d to %d), then a power loss", first, end-1)
			case err == nil || !errors.Is(err, vfs.ErrCrashed):
				t.Fatalf("%s, then Open with a crash at its operation %d (%s): %v", what, m, fsys.Crashed(), err)
			default:
				what += fmt.Sprintf(", then at operation %d of the recovery (%s)", m, fsys.Crashed())
			}
			fsys.Crash()
			points++

			q, err = Open(powerLossDir, powerLossConfig(fsys))
			if err != nil {
				t.Fatalf("%s: Open: %v\nfiles:\n%s", what, err, fsys)
			}
			first, end, err := checkAfterCrash(q, h)
			if err != nil {
				t.Fatalf("%s, reopened: %v\nfiles:\n%s", what, err, fsys)
			}
			if err := useAfterCrash(fsys, q, first, end); err != nil {
				t.Fatalf("%s, reopened (records %d to %d): %v", what, first, end-1, err)
			}
			if recovered {
				break
			}
		}
	}
	return points
}

// TestPowerLossAtEveryStep: a spool from nothing, through segment rolls,
// Acks within and across segments, draining, and a reopen.
func TestPowerLossAtEveryStep(t *testing.T) {
	points := powerLossAtEveryStep(t, func(*testing.T, *vfs.Mem) history { return history{} }, freshWorkload)
	t.Logf("%d crash points", points)
}

// TestPowerLossAtEveryStepTextCursor: a spool an older version left, with
// a text cursor file, which Open replaces by the slotted one.
func TestPowerLossAtEveryStepTextCursor(t *testing.T) {
	const records, cursor = 20, 4
	setup := func(t *testing.T, fsys *vfs.Mem) history {
		h := runWorkload(t, fsys, []step{{"open", 0}, {"append", 6}, {"append", 8}, {"append", 6}, {"close", 0}}, history{})
		if h.crashed != "" || h.appended != records {
			t.Fatalf("set-up: %+v", h)
		}
		// The older version's durable state: every file and entry synced.
		path := filepath.Join(powerLossDir, cursorName)
		f, err := fsys.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fmt.Fprintf(f, "%d\n", cursor); err != nil {
			t.Fatal(err)
		}
		for _, err := range []error{f.Sync(), f.Close(), syncDirs(fsys, powerLossDir)} {
			if err != nil {
				t.Fatal(err)
			}
		}
		fsys.Crash()
		h.acked = cursor
		return h
	}
	points := powerLossAtEveryStep(t, setup, textCursorWorkload)
	t.Logf("%d crash points", points)
}

// syncDirs syncs dir and every directory above it.
func syncDirs(fsys vfs.FS, dir string) error {
	for {
		d, err := fsys.OpenFile(dir, os.O_RDONLY, 0)
		if err != nil {
			return err
		}
		err = d.Sync()
		d.Close()
		if err != nil || dir == filepath.Dir(dir) {
			return err
		}
		dir = filepath.Dir(dir)
	}
}
