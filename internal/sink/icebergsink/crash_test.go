package icebergsink

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/dbtest"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/testsupport"
)

var errCrash = errors.New("simulated crash")

// envs are the catalogs the behaviour tests run on: SQLite, PostgreSQL
// and the REST catalog when configured (dbtest and testsupport skip
// locally, fail under CI=true otherwise).
var envs = []struct {
	name string
	new  func(t *testing.T) env
}{
	{"sqlite", func(t *testing.T) env { return sqliteEnv(t) }},
	{"postgres", func(t *testing.T) env {
		_, dsn := dbtest.Postgres(t)
		return env{catalog: dsn, warehouse: t.TempDir(), schemas: testSchemas(t)}
	}},
	{"rest", func(t *testing.T) env { return restEnv(t) }},
}

// mixed is a batch for two tables (Test and analytics_button_click) from
// partition 0 of topic, offsets from..from+n-1.
func mixed(topic string, from, n int) []kafka.Record {
	return mixedIn(topic, 0, from, n)
}

// mixedIn is mixed from partition p.
func mixedIn(topic string, p int32, from, n int) []kafka.Record {
	var out []kafka.Record
	for i := from; i < from+n; i++ {
		dt := base.Add(time.Duration(i) * time.Minute)
		if i%3 == 0 {
			out = append(out, platformRecord(topic, p, int64(i), dt))
		} else {
			out = append(out, testsupport.CapsuleRecord(topic, p, int64(i), dt))
		}
	}
	return out
}

// checkOnce checks that both tables hold every record of input once.
func checkOnce(t *testing.T, s *Sink, input []kafka.Record) {
	t.Helper()
	got := countBy(scanRows(t, loadTable(t, s, "Test")), "uuid")
	for k, v := range countBy(scanRows(t, loadTable(t, s, "analytics_button_click")), "meta.id") {
		got[k] += v
	}
	if len(got) != len(input) {
		t.Errorf("%d distinct uuids stored, want %d", len(got), len(input))
	}
	for _, r := range input {
		if n := got[testsupport.EventUUID(r.Topic, r.Partition, r.Offset)]; n != 1 {
			t.Errorf("offset %d stored %d times", r.Offset, n)
		}
	}
}

// A crash at each point of a commit round, then a restart that resumes
// where StartOffsets says and — as if the Kafka commit had run ahead or
// lagged behind — is fed the whole input again: every record is stored
// exactly once.
func TestCrash(t *testing.T) {
	for _, ev := range envs {
		t.Run(ev.name, func(t *testing.T) {
			cases := []struct {
				name  string
				point string // crash point; "" crashes with rows buffered
				table string
			}{
				{"buffered", "", ""},
				{"files written", pointWritten, "Test"},
				{"between tables", pointCommitted, "Test"},                 // analytics_button_click committed, Test not
				{"after commit", pointCommitted, "analytics_button_click"}, // both committed, before the Kafka commit
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					e := ev.new(t)
					const topic = "eventlogging_mixed"
					first, second := mixed(topic, 0, 300), mixed(topic, 300, 300)
					cfg := e.config(t)
					armed := false
					cfg.hook = func(point, table string) error {
						if armed && point == tc.point && table == tc.table {
							return errCrash
						}
						return nil
					}
					s := openSink(t, cfg)
					feed(t, s, first, 100)
					flush(t, s)
					feed(t, s, second, 100)
					if tc.point != "" {
						armed = true
						if err := s.Flush(t.Context()); !errors.Is(err, errCrash) {
							t.Fatalf("flush: %v, want the crash", err)
						}
					}
					s.crash()

					cfg.hook = nil
					s = openSink(t, cfg)
					defer s.Close()
					offs, err := s.StartOffsets(t.Context(), map[string][]int32{topic: {0}})
					if err != nil {
						t.Fatal(err)
					}
					start := offs[topic][0]
					want := map[string]int64{"buffered": 300, "files written": 300, "between tables": 300, "after commit": 600}[tc.name]
					if start != want {
						t.Errorf("resumes at %d, want %d", start, want)
					}
					all := append(first, second...)
					feed(t, s, all[start:], 100)
					feed(t, s, all, 100) // redelivered from older offsets: skipped
					flush(t, s)
					checkOnce(t, s, all)
					// A sink reopened now redelivers nothing stored.
					s.crash()
					s = openSink(t, cfg)
					s2 := s
					s2.cfg.hook = nil
					feed(t, s2, all, 100)
					if err := s2.Flush(t.Context()); err != nil {
						t.Fatal(err)
					}
					checkOnce(t, s2, all)
				})
			}
		})
	}
}

// Two members of a consumer group write one table concurrently, each its
// partitions: both commits land (the loser retries on the refreshed
// table). Then a partition moves from one to the other while the first
// still holds rows of it: stored once all the same.
func TestConcurrentSinks(t *testing.T) {
	for _, ev := range envs {
		t.Run(ev.name, func(t *testing.T) {
			e := ev.new(t)
			const topic = "eventlogging_Test"
			a, b := openSink(t, e.config(t)), openSink(t, e.config(t))
			defer a.Close()
			defer b.Close()
			var all []kafka.Record
			for round := range 3 {
				var wg sync.WaitGroup
				for p, s := range []*Sink{a, b} {
					var in []kafka.Record
					for i := range 200 {
						off := int64(round*200 + i)
						in = append(in, testsupport.CapsuleRecord(topic, int32(p), off, base.Add(time.Duration(off)*time.Second)))
					}
					all = append(all, in...)
					feed(t, s, in, 100)
					wg.Add(1)
					go func() {
						defer wg.Done()
						if err := s.Flush(t.Context()); err != nil {
							t.Error(err)
						}
					}()
				}
				wg.Wait()
			}
			// Partition 0 moves from a to b while a holds offsets 600..699.
			var moved []kafka.Record
			for i := 600; i < 700; i++ {
				moved = append(moved, testsupport.CapsuleRecord(topic, 0, int64(i), base.Add(time.Duration(i)*time.Second)))
			}
			all = append(all, moved...)
			feed(t, a, moved, 100)
			offs, err := b.StartOffsets(t.Context(), map[string][]int32{topic: {0, 1}})
			if err != nil {
				t.Fatal(err)
			}
			if o := offs[topic]; o[0] != 600 || o[1] != 600 {
				t.Fatalf("b resumes at %v, want 600 and 600", o)
			}
			feed(t, b, moved, 100)
			if err := b.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
			if err := a.Flush(t.Context()); err != nil { // drops what b committed
				t.Fatal(err)
			}
			got := countBy(scanRows(t, loadTable(t, a, "Test")), "uuid")
			if len(got) != len(all) {
				t.Errorf("%d uuids, want %d", len(got), len(all))
			}
			for _, r := range all {
				if n := got[testsupport.EventUUID(r.Topic, r.Partition, r.Offset)]; n != 1 {
					t.Errorf("%d/%d stored %d times", r.Partition, r.Offset, n)
				}
			}
		})
	}
}
