package icebergsink

import (
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// Capsules of two partitions over three hours land in one table, once
// each, partitioned by hour, with the offsets in the snapshot summary; on
// every catalog (envs).
func TestWriteCapsules(t *testing.T) {
	for _, ev := range envs {
		t.Run(ev.name, func(t *testing.T) {
			e := ev.new(t)
			s := openSink(t, e.config(t))
			input := spread("eventlogging_Test", 2, 300, 3)
			if p := feed(t, s, input, 100); len(p) != 0 {
				t.Fatalf("poison: %v", p)
			}
			flush(t, s)
			tbl := loadTable(t, s, "Test")
			rows := scanRows(t, tbl)
			if len(rows) != 600 {
				t.Fatalf("rows = %d, want 600", len(rows))
			}
			byUUID := countBy(rows, "uuid")
			for _, r := range input {
				if n := byUUID[testsupport.EventUUID(r.Topic, r.Partition, r.Offset)]; n != 1 {
					t.Fatalf("uuid of %d/%d seen %d times", r.Partition, r.Offset, n)
				}
			}
			snap := tbl.CurrentSnapshot()
			if got := snap.Summary.Properties[PropOffsets]; got != `{"eventlogging_Test":{"0":299,"1":299}}` {
				t.Errorf("%s = %s", PropOffsets, got)
			}
			if got := snap.Summary.Properties[PropComplete]; got != `{"eventlogging_Test":{"0":299,"1":299}}` {
				t.Errorf("%s = %s", PropComplete, got)
			}
			if !strings.Contains(tbl.Spec().String(), "hour") {
				t.Errorf("spec %s", tbl.Spec())
			}
			r0 := rows[0]
			ev, _ := r0["event"].(map[string]any)
			if ev["action"] != "click" || ev["tags"] != `["a","b"]` {
				t.Errorf("row %v", r0)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			// Reopened: resumes after what the snapshots say.
			s2 := openSink(t, e.config(t))
			defer s2.Close()
			offs, err := s2.StartOffsets(t.Context(), map[string][]int32{"eventlogging_Test": {0, 1, 2}})
			if err != nil {
				t.Fatal(err)
			}
			if o := offs["eventlogging_Test"]; o[0] != 300 || o[1] != 300 || o[2] != 0 {
				t.Errorf("start offsets %v", o)
			}
		})
	}
}

// Event Platform events go to the table of their stream; dt is meta.dt,
// the event's own dt is client_dt.
func TestWritePlatform(t *testing.T) {
	e := sqliteEnv(t)
	s := openSink(t, e.config(t))
	defer s.Close()
	var input []kafka.Record
	for i := range 10 {
		input = append(input, platformRecord("eqiad.analytics.button-click", 0, int64(i), base.Add(time.Duration(i)*time.Minute)))
	}
	feed(t, s, input, 10)
	flush(t, s)
	rows := scanRows(t, loadTable(t, s, "analytics_button_click"))
	if len(rows) != 10 {
		t.Fatalf("rows = %d", len(rows))
	}
	if rows[0]["client_dt"] != "2000-01-01T00:00:00Z" || !strings.HasPrefix(rows[0]["dt"].(string), "2024-01-05") {
		t.Errorf("row %v", rows[0])
	}
}

// Commits happen no more often than CommitInterval: WriteRecords buffers
// until it elapsed, then commits (Maintain too, for a quiet topic); or
// earlier when MaxBufferedRows rows wait.
func TestCommitInterval(t *testing.T) {
	e := sqliteEnv(t)
	clk := testsupport.NewClock(base)
	cfg := e.config(t)
	cfg.CommitInterval = time.Minute
	cfg.MaxBufferedRows = 250
	cfg.Now = clk.Now
	var published int
	cfg.Published = func(_ string, n int) { published += n }
	s := openSink(t, cfg)
	defer s.Close()
	snapshots := func() int {
		tbl, err := s.cat.LoadTable(t.Context(), append(s.ns, "Test"))
		if err != nil {
			return 0
		}
		return len(tbl.Metadata().Snapshots())
	}
	input := spread("eventlogging_Test", 1, 400, 1)
	feed(t, s, input[:100], 100)
	clk.Add(30 * time.Second)
	feed(t, s, input[100:200], 100)
	if err := s.Maintain(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := snapshots(); n != 0 || published != 0 {
		t.Fatalf("%d snapshots, %d rows published before the interval", n, published)
	}
	clk.Add(30 * time.Second)
	if err := s.Maintain(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := snapshots(); n != 1 || published != 200 {
		t.Fatalf("%d snapshots, %d published after the interval; want 1, 200", n, published)
	}
	feed(t, s, input[200:300], 100) // 100 wait
	feed(t, s, input[300:400], 100) // 200 wait
	if n := snapshots(); n != 1 {
		t.Fatalf("%d snapshots", n)
	}
	cfg.MaxBufferedRows = 150
	s.cfg.MaxBufferedRows = 150
	if _, err := s.WriteRecords(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if n := snapshots(); n != 2 || published != 400 {
		t.Fatalf("%d snapshots, %d published once MaxBufferedRows wait; want 2, 400", n, published)
	}
}
