package inspect

import (
	"fmt"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/capsule"
)

func TestRecentErrorsWindow(t *testing.T) {
	r := recentErrors{index: map[string]int{}, replayed: map[string]capsule.ReplayOutcome{"u-3": {Status: capsule.ReplayValid}}, cap: 10}
	if _, ok := r.query(ErrorFilter{}); ok {
		t.Fatal("query answered before the window was filled")
	}
	t0 := time.Unix(1_700_000_000, 0)
	for k := range 35 {
		schema := "A"
		if k%2 == 1 {
			schema = "B"
		}
		e := errorEntry{rec: ErrorRecord{UUID: fmt.Sprintf("u-%d", k), Schema: schema, Time: t0.Add(time.Duration(k) * time.Second)}}
		r.add(e)
		r.add(e) // a record seen by both the tail and the backfill
	}
	r.ready = true
	got, ok := r.query(ErrorFilter{Limit: -1})
	if !ok || len(got) != 10 || got[0].rec.UUID != "u-34" || got[9].rec.UUID != "u-25" {
		t.Fatalf("window: ok=%v, %d entries, first %v", ok, len(got), got)
	}
	if len(r.entries) > 2*r.cap {
		t.Fatalf("window holds %d entries, want at most %d", len(r.entries), 2*r.cap)
	}
	b, _ := r.query(ErrorFilter{Schema: "B", Limit: 3})
	if len(b) != 3 || b[0].rec.UUID != "u-33" || b[2].rec.UUID != "u-29" {
		t.Fatalf("schema filter: %v", b)
	}
	r.setReplayed(map[string]capsule.ReplayOutcome{"u-33": {Status: capsule.ReplayValid}})
	found, _ := r.lookup([]string{"u-33", "u-0", "nope"})
	if len(found) != 1 || !found[0].rec.Replayed || found[0].rec.Replay == nil || found[0].rec.Replay.Status != capsule.ReplayValid {
		t.Fatalf("lookup after replay: %v", found)
	}
}
