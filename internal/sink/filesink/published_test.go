package filesink

import (
	"errors"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// publishedCounter is a Config.Published that sums the records per topic.
type publishedCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *publishedCounter) add(topic string, records int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[topic] += records
}

func (c *publishedCounter) get() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.n)
}

// TestPublishedCounts: Config.Published hears of records when readers can
// see them — at the checkpoint after sink.file_max_age (run by the
// maintenance timer), not when they are written to in-progress files — and
// of the records of a crashed checkpoint when Open finishes its renames.
func TestPublishedCounts(t *testing.T) {
	root := t.TempDir()
	clk := testsupport.NewClock(base.Add(30 * time.Minute))
	var pub publishedCounter
	cfg := Config{Root: root, Format: JSONLines, MaxFileAge: 10 * time.Minute, Now: clk.Now, Published: pub.add}
	s := openSink(t, cfg)
	input := spread([]string{"eventlogging_Test", "eventlogging_Other"}, 2, 50, 1)
	feedAll(t, s, input, 40)
	if got := pub.get(); len(got) != 0 {
		t.Fatalf("published %v before any checkpoint: the records are in temp files only", got)
	}
	clk.Add(9 * time.Minute)
	if err := s.Maintain(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := pub.get(); len(got) != 0 {
		t.Fatalf("published %v before file_max_age", got)
	}
	clk.Add(time.Minute)
	if err := s.Maintain(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"eventlogging_Test": 100, "eventlogging_Other": 100}
	if got := pub.get(); !maps.Equal(got, want) {
		t.Fatalf("published after file_max_age: %v, want %v", got, want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := pub.get(); !maps.Equal(got, want) {
		t.Fatalf("Close published again: %v, want %v", got, want)
	}

	// A checkpoint that dies after its manifest, before any rename: the
	// records become visible when the next Open renames the files, and
	// are counted then, once.
	more := spread([]string{"eventlogging_Test"}, 1, 80, 1)
	crashing := cfg
	crashing.hook = crashAt(pointManifest, 1)
	var lost publishedCounter
	crashing.Published = lost.add
	s = openSink(t, crashing)
	_, err := newFeeder(more, 40).run(t.Context(), s)
	if err == nil {
		err = s.Close()
	}
	if !errors.Is(err, errCrash) {
		t.Fatalf("the run did not reach the crash point: %v", err)
	}
	s.crash()
	if got := lost.get(); len(got) != 0 {
		t.Fatalf("a checkpoint that never renamed counted %v", got)
	}
	var recovered publishedCounter
	cfg.Published = recovered.add
	s = openSink(t, cfg)
	// Partition 0 of eventlogging_Test had published offsets 0-49 before:
	// the crashed checkpoint held 50-79.
	if got, want := recovered.get(), map[string]int{"eventlogging_Test": 30}; !maps.Equal(got, want) {
		t.Errorf("Open finishing the renames counted %v, want %v", got, want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
