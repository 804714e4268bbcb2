package filesink

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/testsupport"
)

func TestOpenConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no root", Config{Format: JSONLines}, "Root is required"},
		{"no format", Config{Root: t.TempDir()}, `unknown format ""`},
		{"parquet without schemas", Config{Root: t.TempDir(), Format: Parquet}, "Schemas is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestOpenLocksRoot(t *testing.T) {
	root := t.TempDir()
	s := openSink(t, Config{Root: root, Format: JSONLines})
	if _, err := Open(Config{Root: root, Format: JSONLines}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second Open of a root: %v, want in use", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openSink(t, Config{Root: root, Format: JSONLines})
	s2.Close()
}

// Two topics, two partitions each, three hours: every record lands once in
// its hour's directory, byte for byte, and the file names carry the
// partition and offsets of their records.
func TestJSONLinesPartitions(t *testing.T) {
	root := t.TempDir()
	s := openSink(t, Config{Root: root, Format: JSONLines})
	input := spread([]string{"eventlogging_Test", "eventlogging_Other"}, 2, 300, 3)
	feedAndClose(t, s, input, 100)
	p := checkExactlyOnce(t, root, input)
	checkNoTemps(t, root)

	// Exactly the input, field for field.
	for _, r := range input {
		var want map[string]any
		dec := json.NewDecoder(strings.NewReader(string(r.Value)))
		dec.UseNumber()
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if got := p.rows[testsupport.EventUUID(r.Topic, r.Partition, r.Offset)]; !reflect.DeepEqual(got, want) {
			t.Fatalf("record %s/%d/%d:\n got %v\nwant %v", r.Topic, r.Partition, r.Offset, got, want)
		}
	}
	// 2 topics × 3 hours × 2 partitions, one file each (nothing rotated).
	want := []string{}
	for _, topic := range []string{"eventlogging_Other", "eventlogging_Test"} {
		for h, rng := range [][2]int{{0, 99}, {100, 199}, {200, 299}} {
			for p := range 2 {
				want = append(want, hourDir(topic, base.Add(time.Duration(h)*time.Hour).Unix())+
					fmt.Sprintf("/part-%d-%d-%d.jsonl.gz", p, rng[0], rng[1]))
			}
		}
	}
	if !reflect.DeepEqual(p.files, want) {
		t.Fatalf("files:\n%s\nwant:\n%s", strings.Join(p.files, "\n"), strings.Join(want, "\n"))
	}
	if want := "eventlogging_Test/year=2024/month=01/day=05/hour=08"; p.hourOf[testsupport.EventUUID("eventlogging_Test", 1, 150)] != want {
		t.Fatalf("hour directory %s, want %s", p.hourOf[testsupport.EventUUID("eventlogging_Test", 1, 150)], want)
	}
}

// Nothing is visible before a checkpoint; Write's nil is not "published".
func TestNothingVisibleBeforeCheckpoint(t *testing.T) {
	root := t.TempDir()
	s := openSink(t, Config{Root: root, Format: JSONLines})
	defer s.Close()
	input := spread([]string{"t"}, 1, 50, 1)
	feedAll(t, s, input, 10)
	if p := readPublished(t, root); len(p.files) != 0 {
		t.Fatalf("published before any checkpoint: %v", p.files)
	}
	offs, err := s.StartOffsets(t.Context(), map[string][]int32{"t": {0}})
	if err != nil {
		t.Fatal(err)
	}
	// StartOffsets publishes what is open for a (re)assigned partition.
	if offs["t"][0] != 50 {
		t.Fatalf("start offset %d, want 50", offs["t"][0])
	}
	checkExactlyOnce(t, root, input)
}

func TestRotationBySize(t *testing.T) {
	root := t.TempDir()
	s := openSink(t, Config{Root: root, Format: JSONLines, MaxFileBytes: 4 << 10})
	input := spread([]string{"t"}, 2, 2000, 1)
	feedAll(t, s, input, 100)
	before := readPublished(t, root)
	if len(before.files) < 4 {
		t.Fatalf("only %d files published by size rotation before Close", len(before.files))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	p := checkExactlyOnce(t, root, input)
	for _, f := range p.files {
		fi, err := os.Stat(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		// One batch of slack: at most 100 records of ~450 bytes, compressed.
		if fi.Size() > 4<<10+16<<10 {
			t.Errorf("%s is %d bytes, far over MaxFileBytes", f, fi.Size())
		}
	}
}

func TestRotationByAge(t *testing.T) {
	root := t.TempDir()
	clk := testsupport.NewClock(base.Add(time.Hour))
	s := openSink(t, Config{Root: root, Format: JSONLines, MaxFileAge: 10 * time.Minute, Now: clk.Now})
	defer s.Close()
	input := spread([]string{"t"}, 1, 10, 1)
	feedAll(t, s, input, 10)
	clk.Add(9 * time.Minute)
	if err := s.CloseHours(t.Context()); err != nil {
		t.Fatal(err)
	}
	if p := readPublished(t, root); len(p.files) != 0 {
		t.Fatalf("published before MaxFileAge: %v", p.files)
	}
	clk.Add(time.Minute)
	if err := s.CloseHours(t.Context()); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, root, input)

	// And by age on Write: the next record starts a new file, which a later
	// Write publishes once it is old enough.
	more := []kafka.Record{testsupport.CapsuleRecord("t", 0, 10, base.Add(30*time.Minute))}
	if _, err := s.Write(t.Context(), more); err != nil {
		t.Fatal(err)
	}
	clk.Add(10 * time.Minute)
	if _, err := s.Write(t.Context(), []kafka.Record{testsupport.CapsuleRecord("t", 0, 11, base.Add(31*time.Minute))}); err != nil {
		t.Fatal(err)
	}
	if p := readPublished(t, root); p.byUUID[testsupport.EventUUID("t", 0, 10)] != 1 || p.byUUID[testsupport.EventUUID("t", 0, 11)] != 0 {
		t.Fatalf("rotation by age on Write: %v", p.files)
	}
}

func TestMaxOpenFiles(t *testing.T) {
	for _, format := range []Format{JSONLines, Parquet} {
		t.Run(string(format), func(t *testing.T) {
			root := t.TempDir()
			s := openSink(t, Config{Root: root, Format: format, Schemas: testSchemas(t), MaxOpenFiles: 2})
			// 4 partitions written round-robin: each new file evicts the
			// least recently written partition, within a batch too.
			input := spread([]string{"t"}, 4, 100, 1)
			feedAll(t, s, input, 40)
			s.mu.Lock()
			open := s.open
			s.mu.Unlock()
			if open > 2 {
				t.Fatalf("%d files open, MaxOpenFiles is 2", open)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if p := checkExactlyOnce(t, root, input); len(p.files) < 10 {
				t.Fatalf("only %d files: no eviction happened", len(p.files))
			}
		})
	}
}

// A retried batch (after a transient error, the runner calls Write again
// with the same records) is not written twice.
func TestWriteRetryIsIdempotent(t *testing.T) {
	root := t.TempDir()
	s := openSink(t, Config{Root: root, Format: JSONLines})
	input := spread([]string{"t"}, 2, 50, 1)
	for range 3 {
		if _, err := s.Write(t.Context(), input); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, root, input)
}

func TestPoison(t *testing.T) {
	root := t.TempDir()
	clk := testsupport.NewClock(base)
	s := openSink(t, Config{Root: root, Format: JSONLines, Now: clk.Now, MaxFileAge: time.Minute})
	good := func(off int64) kafka.Record { return testsupport.CapsuleRecord("t", 0, off, base) }
	bad := func(off int64, v string) kafka.Record {
		return kafka.Record{Topic: "t", Partition: 0, Offset: off, Value: []byte(v), Timestamp: base}
	}
	batch := []kafka.Record{
		good(0),
		bad(1, "not json"),
		bad(2, `[1,2]`),
		bad(3, ""),
		bad(4, "\x00\x00\x00\x00\x01avro"),
		good(5),
		{Topic: "t", Partition: 0, Offset: 6, Value: []byte(`{"no":"dt"}`)}, // no dt, no timestamp
		bad(7, `{"no":"dt"}`), // falls back to the Kafka timestamp
		bad(8, "{\n  \"pretty\": true,\n  \"dt\": \"2024-01-05T07:10:00Z\"\n}"),
	}
	res, err := s.Write(t.Context(), batch)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for _, p := range res.Poison {
		offs = append(offs, p.Record.Offset)
		if p.Reason == "" {
			t.Errorf("poison %d without a reason", p.Record.Offset)
		}
	}
	if !reflect.DeepEqual(offs, []int64{1, 2, 3, 4, 6}) || res.Written != 4 {
		t.Fatalf("poison %v (written %d), want [1 2 3 4 6] (4)", offs, res.Written)
	}
	if !strings.Contains(res.Poison[3].Reason, "Avro") || !strings.Contains(res.Poison[0].Reason, "not JSON") {
		t.Errorf("reasons: %+v", res.Poison)
	}

	// Unacknowledged poison holds the partition back: a crash now must
	// deliver the poison again, so no checkpoint may cover it.
	clk.Add(time.Hour)
	if err := s.CloseHours(t.Context()); err != nil {
		t.Fatal(err)
	}
	if p := readPublished(t, root); len(p.files) != 0 {
		t.Fatalf("published with unacknowledged poison: %v", p.files)
	}
	// A retry of the batch reports the poison again and writes nothing.
	res, err = s.Write(t.Context(), batch)
	if err != nil || len(res.Poison) != 5 || res.Written != 0 {
		t.Fatalf("retry: %d poison, %d written, %v", len(res.Poison), res.Written, err)
	}
	// The next batch acknowledges it; the old files are due by age.
	if _, err := s.Write(t.Context(), []kafka.Record{good(9)}); err != nil {
		t.Fatal(err)
	}
	p := readPublished(t, root)
	if len(p.files) != 1 || p.byUUID[testsupport.EventUUID("t", 0, 0)] != 1 || p.byUUID[testsupport.EventUUID("t", 0, 5)] != 1 {
		t.Fatalf("after acknowledgement: %v %v", p.files, p.byUUID)
	}
	if !strings.HasSuffix(p.files[0], "part-0-0-8.jsonl.gz") {
		t.Fatalf("file %s, want part-0-0-8 (its records span offsets 0 to 8)", p.files[0])
	}
	// The pretty-printed record was written on one line.
	found := false
	for _, r := range p.rows {
		if r["pretty"] == true {
			found = true
		}
	}
	if !found {
		t.Fatal("the multi-line record is missing")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openSink(t, Config{Root: root, Format: JSONLines})
	defer s2.Close()
	o, err := s2.StartOffsets(t.Context(), map[string][]int32{"t": {0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if o["t"][0] != 10 || o["t"][1] != 0 {
		t.Fatalf("start offsets %v, want t/0 at 10, t/1 at 0", o)
	}
}

// Close discards, rather than publishes, a partition whose poison was not
// acknowledged: the runner's last batch may have failed to send it.
func TestCloseWithUnacknowledgedPoison(t *testing.T) {
	root := t.TempDir()
	s := openSink(t, Config{Root: root, Format: JSONLines})
	batch := []kafka.Record{testsupport.CapsuleRecord("t", 0, 0, base), {Topic: "t", Partition: 0, Offset: 1, Value: []byte("x"), Timestamp: base}, testsupport.CapsuleRecord("t", 1, 0, base)}
	if _, err := s.Write(t.Context(), batch); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	p := readPublished(t, root)
	if len(p.files) != 1 || p.byUUID[testsupport.EventUUID("t", 1, 0)] != 1 {
		t.Fatalf("published %v, want only partition 1's file", p.files)
	}
	checkNoTemps(t, root)
	s2 := openSink(t, Config{Root: root, Format: JSONLines})
	defer s2.Close()
	o, _ := s2.StartOffsets(t.Context(), map[string][]int32{"t": {0, 1}})
	if o["t"][0] != 0 || o["t"][1] != 1 {
		t.Fatalf("start offsets %v, want t/0 at 0 (consumed again), t/1 at 1", o)
	}
}

func TestClosedAndBroken(t *testing.T) {
	root := t.TempDir()
	s := openSink(t, Config{Root: root, Format: JSONLines})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(t.Context(), nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write after Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	// An I/O failure breaks the sink: every later call says so.
	s = openSink(t, Config{Root: root, Format: JSONLines, hook: func(p string) error {
		if p == pointManifest {
			return errors.New("disk on fire")
		}
		return nil
	}})
	if _, err := s.Write(t.Context(), spread([]string{"t"}, 1, 5, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartOffsets(t.Context(), map[string][]int32{"t": {0}}); !errors.Is(err, ErrBroken) {
		t.Fatalf("StartOffsets: %v, want ErrBroken", err)
	}
	if _, err := s.Write(t.Context(), nil); !errors.Is(err, ErrBroken) {
		t.Fatalf("Write after failure: %v, want ErrBroken", err)
	}
	if err := s.CloseHours(t.Context()); !errors.Is(err, ErrBroken) {
		t.Fatalf("CloseHours after failure: %v, want ErrBroken", err)
	}
	s.Close()
	// Reopening recovers: the manifest was written, the renames happen now.
	s = openSink(t, Config{Root: root, Format: JSONLines})
	defer s.Close()
	checkExactlyOnce(t, root, spread([]string{"t"}, 1, 5, 1))
}
