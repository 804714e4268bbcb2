package filesink

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// hoursSink is a JSON-lines sink on a test clock with Lateness and
// IdleAfter of one hour.
func hoursSink(t *testing.T, root string, clk *testsupport.Clock) *Sink {
	t.Helper()
	return openSink(t, Config{Root: root, Format: JSONLines, Now: clk.Now, Lateness: time.Hour})
}

// startHours opens a hoursSink in a new root, on a clock at 07:00, and
// returns it with a writer to it.
func startHours(t *testing.T) (root string, clk *testsupport.Clock, s *Sink, w *writer) {
	t.Helper()
	root = t.TempDir()
	clk = testsupport.NewClock(at("07:00"))
	s = hoursSink(t, root, clk)
	return root, clk, s, &writer{t: t, s: s, next: map[int32]int64{}}
}

// assign assigns partitions of topic t to s (StartOffsets), which
// publishes what s holds.
func assign(t *testing.T, s *Sink, partitions ...int32) {
	t.Helper()
	if _, err := s.StartOffsets(t.Context(), map[string][]int32{"t": partitions}); err != nil {
		t.Fatal(err)
	}
}

// writeAt writes one record per minute of [from, to) to a partition.
type writer struct {
	t    *testing.T
	s    *Sink
	next map[int32]int64
}

func (w *writer) write(p int32, from, to time.Time) {
	w.t.Helper()
	var batch []kafka.Record
	for dt := from; dt.Before(to); dt = dt.Add(time.Minute) {
		batch = append(batch, testsupport.CapsuleRecord("t", p, w.next[p], dt))
		w.next[p]++
	}
	if _, err := w.s.Write(w.t.Context(), batch); err != nil {
		w.t.Fatal(err)
	}
}

// closed lists the hours (as "HH" of day 5 of January 2024) with _SUCCESS.
func closed(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	matches, err := filepath.Glob(filepath.Join(root, "t", "year=2024", "month=01", "day=*", "hour=*", successFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range matches {
		dir := filepath.Dir(m)
		out = append(out, filepath.Base(filepath.Dir(dir))[4:]+"/"+filepath.Base(dir)[5:])
	}
	slices.Sort(out)
	return out
}

func closeHours(t *testing.T, s *Sink, clk *testsupport.Clock, at time.Time) []string {
	t.Helper()
	clk.Set(at)
	if err := s.CloseHours(t.Context()); err != nil {
		t.Fatal(err)
	}
	return closed(t, s.root)
}

func at(hhmm string) time.Time {
	d, err := time.Parse("15:04", hhmm)
	if err != nil {
		panic(err)
	}
	return base.Truncate(24 * time.Hour).Add(time.Duration(d.Hour())*time.Hour + time.Duration(d.Minute())*time.Minute)
}

// An hour closes only when every partition is Lateness past its end.
func TestSuccessWaitsForEveryPartition(t *testing.T) {
	root, clk, s, w := startHours(t)
	defer s.Close()
	assign(t, s, 0, 1)
	w.write(0, at("07:00"), at("08:00"))
	w.write(1, at("07:00"), at("08:00"))
	clk.Set(at("08:50"))
	w.write(0, at("08:00"), at("09:10")) // partition 0: past 07:00 + 1h + lateness
	w.write(1, at("08:00"), at("08:20")) // partition 1: not yet
	if got := closeHours(t, s, clk, at("09:15")); len(got) != 0 {
		t.Fatalf("closed %v while partition 1 is at 08:20", got)
	}
	// Its files are published anyway (by age), just not marked.
	if p := readPublished(t, root); p.byUUID[testsupport.EventUUID("t", 1, 0)] != 1 {
		t.Fatal("hour 07 of partition 1 not published by age")
	}
	w.write(1, at("08:20"), at("09:05"))
	if got := closeHours(t, s, clk, at("09:20")); !slices.Equal(got, []string{"05/07"}) {
		t.Fatalf("closed %v, want hour 07", got)
	}
	// Everything of hour 07 was published before its _SUCCESS.
	p := readPublished(t, root)
	for part := range int32(2) {
		for off := range int64(60) {
			if p.byUUID[testsupport.EventUUID("t", part, off)] != 1 {
				t.Fatalf("record %d/%d of a closed hour not published", part, off)
			}
		}
	}
}

// The wall clock must be Lateness past an hour, even when the data is.
func TestSuccessWaitsForLateness(t *testing.T) {
	root, clk, s, w := startHours(t)
	defer s.Close()
	w.write(0, at("07:00"), at("07:30"))
	w.write(0, at("12:00"), at("12:01")) // a record from the future
	if got := closeHours(t, s, clk, at("08:59")); len(got) != 0 {
		t.Fatalf("closed %v before 07:00 + 1h + lateness", got)
	}
	if got := closeHours(t, s, clk, at("09:00")); !slices.Equal(got, []string{"05/07"}) {
		t.Fatalf("closed %v, want hour 07", got)
	}
	// Hours without data get a marker too, once complete.
	if got := closeHours(t, s, clk, at("11:30")); !slices.Equal(got, []string{"05/07", "05/08", "05/09"}) {
		t.Fatalf("closed %v, want 07 to 09", got)
	}
	if entries, _ := os.ReadDir(filepath.Join(root, hourDir("t", at("08:00").Unix()))); len(entries) != 1 {
		t.Fatalf("the empty hour 08 holds %d files, want only _SUCCESS", len(entries))
	}
}

// A partition that delivers nothing for IdleAfter stops holding hours back;
// an assigned partition that never delivered anything holds them until then.
func TestSuccessIdlePartition(t *testing.T) {
	_, clk, s, w := startHours(t)
	defer s.Close()
	assign(t, s, 0)
	w.write(0, at("07:00"), at("09:30"))
	clk.Set(at("08:30"))
	assign(t, s, 1) // a rebalance adds partition 1
	if got := closeHours(t, s, clk, at("09:10")); len(got) != 0 {
		t.Fatalf("closed %v while partition 1, assigned 40 minutes ago, delivered nothing", got)
	}
	if got := closeHours(t, s, clk, at("09:30")); !slices.Equal(got, []string{"05/07"}) {
		t.Fatalf("closed %v, want hour 07 once partition 1 is idle", got)
	}
	if got := closeHours(t, s, clk, at("11:00")); !slices.Equal(got, []string{"05/07", "05/08", "05/09"}) {
		t.Fatalf("closed %v, want 07 to 09", got)
	}
}

// A record for a closed hour is still published there (and logged).
func TestSuccessLateRecord(t *testing.T) {
	root, clk, s, w := startHours(t)
	w.write(0, at("07:00"), at("07:10"))
	if got := closeHours(t, s, clk, at("09:00")); !slices.Equal(got, []string{"05/07"}) {
		t.Fatalf("closed %v", got)
	}
	w.write(0, at("07:50"), at("07:51"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if p := readPublished(t, root); p.byUUID[testsupport.EventUUID("t", 0, 10)] != 1 || p.hourOf[testsupport.EventUUID("t", 0, 10)] != hourDir("t", at("07:00").Unix()) {
		t.Fatal("the late record was not published in its hour")
	}
}

// The closing state survives a crash: an hour whose data was published
// before the crash is still closed after it, though its records are not
// consumed again.
func TestSuccessAfterRestart(t *testing.T) {
	root, clk, s, w := startHours(t)
	w.write(0, at("07:00"), at("07:10"))
	assign(t, s, 0) // publishes
	s.crash()
	s = hoursSink(t, root, clk)
	defer s.Close()
	offs, err := s.StartOffsets(t.Context(), map[string][]int32{"t": {0}})
	if err != nil || offs["t"][0] != 10 {
		t.Fatalf("start offsets %v %v", offs, err)
	}
	w = &writer{t: t, s: s, next: map[int32]int64{0: 10}}
	w.write(0, at("09:00"), at("10:10"))
	if got := closeHours(t, s, clk, at("10:05")); !slices.Equal(got, []string{"05/07", "05/08"}) {
		t.Fatalf("closed %v, want 07 and 08", got)
	}
}
