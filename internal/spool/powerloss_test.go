package spool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/eventlogging/eventlogging/internal/vfs"
)

// The power-loss tests run a workload on a vfs.Mem, stop it at every
// mutating file-system operation in turn (a write, a truncate, an fsync, a
// create, a rename, a remove), throw away whatever was not fsync'd (or,
// with torn writes, keep half of what was written to a file since its
// last fsync), and reopen. Then, for every crash point, they also crash
// the recovering Open at each of its own operations and reopen again.
// After each, the spool must hold what the package documentation
// promises:
//
//   - every record whose Append returned nil, unless an Ack covering it
//     was called;
//   - no record covered by an Ack that returned nil;
//   - of the records an Ack that did not return covered (the crash was
//     inside it), a suffix or none (the cursor moved or not);
//   - of the records of an Append that did not return, all or none; with
//     torn writes, the first k of them, and never a torn record;
//   - nothing else, each record once, in append order, numbered as
//     appended (Peek returns exactly the records from the head sequence
//     number to the next one).
//
// Then the recovered spool must go on: an Append that starts a new segment
// file, a power loss, the same checks, an Ack of everything, and a power
// loss, after which it is empty.

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
func powerLossConfig(fsys vfs.FS, log *slog.Logger) Config {
	return Config{SegmentBytes: 256, FS: fsys, Logger: log}
}

// countingHandler is a slog.Handler that counts records by message.
type countingHandler struct {
	mu sync.Mutex
	n  map[string]int
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *countingHandler) WithGroup(string) slog.Handler            { return h }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n[r.Message]++
	return nil
}

func (h *countingHandler) count(msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[msg]
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
func runWorkload(t *testing.T, fsys *vfs.Mem, log *slog.Logger, steps []step, h history) history {
	t.Helper()
	var q *Queue
	for i, s := range steps {
		var err error
		switch s.op {
		case "open":
			q, err = Open(powerLossDir, powerLossConfig(fsys, log))
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
// allows (see the top of this file); with torn, a part of the Append that
// did not return may be there. It returns the records it holds, as their
// numbers from the first to one past the last.
func checkAfterCrash(q *Queue, h history, torn bool) (first, end int, err error) {
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
	switch {
	case next < h.appended || next > h.appended+h.pending:
		return head, next, fmt.Errorf("the spool ends before record %d: the Appends that returned nil end before %d, the one that crashed before %d",
			next, h.appended, h.appended+h.pending)
	case !torn && next != h.appended && next != h.appended+h.pending:
		return head, next, fmt.Errorf("the spool ends before record %d: the Appends that returned nil end before %d, the one that crashed before %d (all or nothing)",
			next, h.appended, h.appended+h.pending)
	}
	return head, next, nil
}

// useAfterCrash checks that the recovered q, holding records first to
// end-1, goes on: an Append that starts a new segment file, a power loss,
// the records all there after a reopen; then an Ack of them all, a power
// loss, and none there after a reopen.
func useAfterCrash(fsys *vfs.Mem, log *slog.Logger, q *Queue, first, end int, keep vfs.KeepFunc) error {
	const n = 12 // more than a segment holds: a new file unless the last is empty
	if err := q.Append(idRecords(end, n)); err != nil {
		return fmt.Errorf("Append: %w", err)
	}
	fsys.CrashKeeping(keep)
	q, err := Open(powerLossDir, powerLossConfig(fsys, log))
	if err != nil {
		return fmt.Errorf("Open after an Append of records %d to %d and a power loss: %w", end, end+n-1, err)
	}
	defer q.Close()
	h := history{acked: first, appended: end + n}
	head, next, err := checkAfterCrash(q, h, false)
	if err == nil && head != first {
		err = fmt.Errorf("the spool starts at record %d, not %d", head, first)
	}
	if err != nil {
		return fmt.Errorf("after an Append of records %d to %d and a power loss, reopened (records %d to %d): %w", end, end+n-1, head, next-1, err)
	}
	if err := q.Ack(q.Len()); err != nil {
		return fmt.Errorf("Ack: %w", err)
	}
	fsys.CrashKeeping(keep)
	q, err = Open(powerLossDir, powerLossConfig(fsys, log))
	if err != nil {
		return fmt.Errorf("Open after acking everything and a power loss: %w", err)
	}
	defer q.Close()
	if q.Len() != 0 {
		return fmt.Errorf("reopened after acking everything and a power loss: %d records", q.Len())
	}
	return nil
}

// powerLossAtEveryStep runs steps after setup, crashing at each of their
// operations and then at each operation of the recovering Open, and checks
// the spool after each. keep is what a power loss keeps of unsynced files
// (vfs.Mem.CrashKeeping); nil keeps nothing. It returns the crash points
// it tried and the spool's log messages, counted.
func powerLossAtEveryStep(t *testing.T, setup func(*testing.T, *vfs.Mem) history, steps []step, keep vfs.KeepFunc) (points int, logs *countingHandler) {
	t.Helper()
	logs = &countingHandler{n: map[string]int{}}
	log := slog.New(logs)
	run := func(crashAt int) (*vfs.Mem, history) {
		fsys := vfs.NewStrictMem()
		h := setup(t, fsys)
		fsys.CrashAfter(crashAt)
		return fsys, runWorkload(t, fsys, log, steps, h)
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
			fsys.CrashKeeping(keep)

			// A power loss during the recovery too, at its operation m.
			fsys.CrashAfter(m)
			q, err := Open(powerLossDir, powerLossConfig(fsys, log))
			recovered := fsys.Crashed() == ""
			switch {
			case err == nil && recovered:
				first, end, err := checkAfterCrash(q, h, keep != nil)
				if err != nil {
					t.Fatalf("%s, reopened: %v\nfiles:\n%s", what, err, fsys)
				}
				what += fmt.Sprintf(", reopened (records %d to %d), then a power loss", first, end-1)
			case err == nil || !errors.Is(err, vfs.ErrCrashed):
				t.Fatalf("%s, then Open with a crash at its operation %d (%s): %v", what, m, fsys.Crashed(), err)
			default:
				what += fmt.Sprintf(", then at operation %d of the recovery (%s)", m, fsys.Crashed())
			}
			fsys.CrashKeeping(keep)
			points++

			q, err = Open(powerLossDir, powerLossConfig(fsys, log))
			if err != nil {
				t.Fatalf("%s: Open: %v\nfiles:\n%s", what, err, fsys)
			}
			first, end, err := checkAfterCrash(q, h, keep != nil)
			if err != nil {
				t.Fatalf("%s, reopened: %v\nfiles:\n%s", what, err, fsys)
			}
			if err := useAfterCrash(fsys, log, q, first, end, keep); err != nil {
				t.Fatalf("%s, reopened (records %d to %d): %v", what, first, end-1, err)
			}
			if recovered {
				break
			}
		}
	}
	return points, logs
}

// The spool's log messages for what only a torn write leaves.
const (
	logTornTail = "spool dropped a torn tail"
	logTornSlot = "spool cursor slot is invalid; using the other one"
)

// TestPowerLossAtEveryStep: a spool from nothing, through segment rolls,
// Acks within and across segments, draining, and a reopen.
func TestPowerLossAtEveryStep(t *testing.T) {
	points, logs := powerLossAtEveryStep(t, freshSpool, freshWorkload, nil)
	if n := logs.count(logTornTail) + logs.count(logTornSlot); n != 0 {
		t.Errorf("%d torn tails or cursor slots, where nothing unsynced survives", n)
	}
	t.Logf("%d crash points", points)
}

// TestPowerLossAtEveryStepTextCursor: a spool an older version left, with
// a text cursor file, which Open replaces by the slotted one.
func TestPowerLossAtEveryStepTextCursor(t *testing.T) {
	points, logs := powerLossAtEveryStep(t, textCursorSpool, textCursorWorkload, nil)
	if n := logs.count(logTornTail) + logs.count(logTornSlot); n != 0 {
		t.Errorf("%d torn tails or cursor slots, where nothing unsynced survives", n)
	}
	t.Logf("%d crash points", points)
}

// TestPowerLossTornWrites: both workloads, where a power loss keeps half
// of what was written to a file since its last fsync (see tornWrite), so
// that Appends and cursor slots are torn: Open truncates torn tails and
// reads the cursor from its other slot.
func TestPowerLossTornWrites(t *testing.T) {
	for name, w := range map[string]struct {
		setup func(*testing.T, *vfs.Mem) history
		steps []step
	}{
		"fresh":       {freshSpool, freshWorkload},
		"text cursor": {textCursorSpool, textCursorWorkload},
	} {
		t.Run(name, func(t *testing.T) {
			points, logs := powerLossAtEveryStep(t, w.setup, w.steps, tornWrite)
			tails, slots := logs.count(logTornTail), logs.count(logTornSlot)
			if tails == 0 || slots == 0 {
				t.Errorf("%d torn tails and %d torn cursor slots: the test does not test what it says", tails, slots)
			}
			t.Logf("%d crash points, %d torn tails dropped, %d torn cursor slots", points, tails, slots)
		})
	}
}

// tornWrite is a vfs.KeepFunc: a file that was appended to since its last
// fsync keeps half of the bytes appended, one overwritten in place keeps
// the first half of the bytes that changed (of a cursor slot: half a
// slot), and any other its synced data.
func tornWrite(_ string, synced, written []byte) []byte {
	switch {
	case len(written) > len(synced) && bytes.Equal(written[:len(synced)], synced):
		return written[:len(synced)+(len(written)-len(synced))/2]
	case len(written) == len(synced):
		i := 0
		for synced[i] == written[i] {
			i++
		}
		j := len(synced)
		for synced[j-1] == written[j-1] {
			j--
		}
		copy(synced[i:], written[i:i+(j-i)/2])
	}
	return synced
}

// freshSpool is the set-up of a workload that starts from nothing.
func freshSpool(*testing.T, *vfs.Mem) history { return history{} }

// textCursorSpool leaves the spool an older version would have: 20
// records in three segments, the first 4 acked, and a text cursor file,
// every file and entry synced.
func textCursorSpool(t *testing.T, fsys *vfs.Mem) history {
	const records, cursor = 20, 4
	h := runWorkload(t, fsys, discardLogger(), []step{{"open", 0}, {"append", 6}, {"append", 8}, {"append", 6}, {"close", 0}}, history{})
	if h.crashed != "" || h.appended != records {
		t.Fatalf("set-up: %+v", h)
	}
	path := filepath.Join(powerLossDir, cursorName)
	f, err := fsys.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(f, "%d\n", cursor); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := syncAll(fsys, powerLossDir); err != nil {
		t.Fatal(err)
	}
	fsys.Crash()
	if files, err := listSegments(fsys, powerLossDir); err != nil || len(files) != 3 {
		t.Fatalf("set-up: segment files %v, %v; want 3", files, err)
	}
	h.acked = cursor
	return h
}

// syncAll syncs the files in dir, dir, and every directory above it.
func syncAll(fsys vfs.FS, dir string) error {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return err
	}
	var paths []string
	for _, e := range entries {
		paths = append(paths, filepath.Join(dir, e.Name()))
	}
	for d := dir; ; d = filepath.Dir(d) {
		paths = append(paths, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	for _, p := range paths {
		f, err := fsys.OpenFile(p, os.O_RDONLY, 0)
		if err != nil {
			return err
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
