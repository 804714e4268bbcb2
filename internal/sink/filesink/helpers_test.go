package filesink

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/parquet-go/parquet-go"

	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/schema"
	"github.com/eventlogging/eventlogging/internal/testsupport"
	"github.com/eventlogging/eventlogging/internal/vfs"
)

// base is the hour the tests' data starts in.
var base = time.Date(2024, 1, 5, 7, 0, 0, 0, time.UTC)

// testSchema2Doc is Test/2: a new optional field.
const testSchema2Doc = `{
  "properties": {
    "action": {"type": "string", "required": true},
    "count": {"type": "integer"},
    "added": {"type": "string"}
  }
}`

// testSchemas writes a schema folder and returns a resolver over it.
func testSchemas(t testing.TB) *schema.Resolver {
	t.Helper()
	dir := t.TempDir()
	testsupport.WriteFiles(t, dir, map[string]string{
		"Test/1.json": testsupport.CapsuleSchemaDoc,
		"Test/2.json": testSchema2Doc,
		"jsonschema/analytics/button_click/1.0.0.json": testsupport.ButtonClickSchemaDoc,
	})
	return schema.NewResolver(schema.NewDirSource(dir), schema.ResolverConfig{})
}

// testParquetSchema is the Parquet schema of Test/1 (testSchemas).
func testParquetSchema(t testing.TB) *pqSchema {
	t.Helper()
	sch, err := testSchemas(t).Resolve(t.Context(), schema.ID{Name: "Test", Revision: 1})
	if err != nil {
		t.Fatal(err)
	}
	pq, err := buildSchema("Test/1", sch.Document(), false)
	if err != nil {
		t.Fatal(err)
	}
	return pq
}

// openSink opens a sink or fails the test.
func openSink(t testing.TB, cfg Config) *Sink {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = testsupport.Logger(t)
	}
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// crash abandons s as a killed process would: file descriptors and the lock
// are released, nothing is flushed, renamed or deleted.
func (s *Sink) crash() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.parts {
		for _, f := range st.files {
			f.f.Close()
		}
	}
	s.lock.Close()
	s.closed = true
}

// published is what the published files of a root hold.
type published struct {
	byUUID map[string]int            // how often each uuid was published
	files  []string                  // relative paths of data files
	rows   map[string]map[string]any // uuid → decoded record
	hourOf map[string]string         // uuid → hour directory
	fileOf map[string][]string       // uuid → the files holding it
}

var dataFile = regexp.MustCompile(`^part-(\d+)-(\d+)-(\d+)(\.[A-Za-z0-9_.-]+)?\.(jsonl\.gz|parquet)$`)

// readPublished reads every published file under root and checks that
// partition directories hold nothing but data files and _SUCCESS markers.
func readPublished(t testing.TB, root string) published {
	t.Helper()
	return readPublishedIn(t, vfs.OS, root)
}

// readPublishedIn is readPublished of a root in fsys.
func readPublishedIn(t testing.TB, fsys vfs.FS, root string) published {
	t.Helper()
	p := published{byUUID: map[string]int{}, rows: map[string]map[string]any{}, hourOf: map[string]string{}, fileOf: map[string][]string{}}
	err := walkFiles(fsys, root, func(path string) error {
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(rel, stateDir+"/") {
			return nil
		}
		name := filepath.Base(path)
		if name == successFile {
			return nil
		}
		m := dataFile.FindStringSubmatch(name)
		if m == nil {
			t.Errorf("unexpected file visible in a partition: %s", rel)
			return nil
		}
		p.files = append(p.files, rel)
		var recs []map[string]any
		if m[5] == "parquet" {
			recs = readParquetFile(t, fsys, path)
		} else {
			recs = readJSONLFile(t, fsys, path)
		}
		for _, r := range recs {
			u := uuidOf(r)
			p.byUUID[u]++
			p.rows[u] = r
			p.hourOf[u] = filepath.ToSlash(filepath.Dir(rel))
			p.fileOf[u] = append(p.fileOf[u], rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(p.files)
	return p
}

// uuidOf finds the uuid of a capsule or Event Platform record.
func uuidOf(r map[string]any) string {
	if u, ok := r["uuid"].(string); ok {
		return u
	}
	if meta, ok := r["meta"].(map[string]any); ok {
		if u, ok := meta["id"].(string); ok {
			return u
		}
	}
	return ""
}

// readJSONLFile reads a gzip JSON-lines file the way zcat | jq would.
func readJSONLFile(t testing.TB, fsys vfs.FS, path string) []map[string]any {
	t.Helper()
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []map[string]any
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("%s: line is not a JSON object: %v: %q", path, err, sc.Text())
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if _, err := io.Copy(io.Discard, zr); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}

// readParquetFile reads every row of a Parquet file with parquet-go.
func readParquetFile(t testing.TB, fsys vfs.FS, path string) []map[string]any {
	t.Helper()
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, fi.Size())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out, err := testsupport.ParquetRows(pf)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}

// feeder replays a fixed input the way ConsumeBatches would: per partition
// from the sink's StartOffsets, in batches mixing partitions.
type feeder struct {
	input map[tp][]kafka.Record // by partition, in offset order
	batch int
	tick  func() // if set, called before each Write (to move a test clock)
}

func newFeeder(recs []kafka.Record, batch int) *feeder {
	f := &feeder{input: map[tp][]kafka.Record{}, batch: batch}
	for _, r := range recs {
		k := tp{r.Topic, r.Partition}
		f.input[k] = append(f.input[k], r)
	}
	return f
}

func (f *feeder) assigned() map[string][]int32 {
	out := map[string][]int32{}
	for k := range f.input {
		out[k.topic] = append(out[k.topic], k.partition)
	}
	return out
}

// run feeds everything from s's start offsets; it returns the first error
// (a simulated crash) and the poison it saw.
func (f *feeder) run(ctx context.Context, s *Sink) ([]Poison, error) {
	offs, err := s.StartOffsets(ctx, f.assigned())
	if err != nil {
		return nil, err
	}
	pos := map[tp]int{}
	keys := make([]tp, 0, len(f.input))
	for k, recs := range f.input {
		keys = append(keys, k)
		start := offs[k.topic][k.partition]
		pos[k] = len(recs)
		for i, r := range recs {
			if r.Offset >= start {
				pos[k] = i
				break
			}
		}
	}
	slices.SortFunc(keys, func(a, b tp) int {
		return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
	})
	var poison []Poison
	for {
		var batch []kafka.Record
		// Round-robin a few records of each partition into the batch.
		for len(batch) < f.batch {
			added := false
			for _, k := range keys {
				for j := 0; j < 7 && pos[k] < len(f.input[k]) && len(batch) < f.batch; j++ {
					batch = append(batch, f.input[k][pos[k]])
					pos[k]++
					added = true
				}
			}
			if !added {
				break
			}
		}
		if len(batch) == 0 {
			return poison, nil
		}
		if f.tick != nil {
			f.tick()
		}
		res, err := s.Write(ctx, batch)
		if err != nil {
			return poison, err
		}
		poison = append(poison, res.Poison...)
	}
}

// feedAll feeds input to s from its start offsets, in batches of n (a
// feeder), and returns the poison; an error fails the test.
func feedAll(t testing.TB, s *Sink, input []kafka.Record, n int) []Poison {
	t.Helper()
	poison, err := newFeeder(input, n).run(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	return poison
}

// feedAndClose feeds input to s as feedAll does, then closes s; an error
// fails the test.
func feedAndClose(t testing.TB, s *Sink, input []kafka.Record, n int) {
	t.Helper()
	feedAll(t, s, input, n)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// spread builds n records per partition of topics, with receive times
// spread evenly over hours hours from base.
func spread(topics []string, partitions int32, n int, hours int) []kafka.Record {
	var out []kafka.Record
	step := time.Duration(hours) * time.Hour / time.Duration(n)
	for _, topic := range topics {
		for p := range partitions {
			for i := range n {
				out = append(out, testsupport.CapsuleRecord(topic, p, int64(i), base.Add(time.Duration(i)*step)))
			}
		}
	}
	return out
}

// checkExactlyOnce checks that every input record was published exactly
// once, in the directory of its hour, in a file named for its partition
// and an offset range holding its offset.
func checkExactlyOnce(t testing.TB, root string, input []kafka.Record) published {
	t.Helper()
	return checkExactlyOnceIn(t, vfs.OS, root, input)
}

// checkExactlyOnceIn is checkExactlyOnce of a root in fsys.
func checkExactlyOnceIn(t testing.TB, fsys vfs.FS, root string, input []kafka.Record) published {
	t.Helper()
	p := readPublishedIn(t, fsys, root)
	want := map[string]string{}
	recs := map[string]*kafka.Record{}
	for i, r := range input {
		var m map[string]any
		if err := json.Unmarshal(r.Value, &m); err != nil {
			continue
		}
		dt, _ := time.Parse(time.RFC3339, m["dt"].(string))
		u := testsupport.EventUUID(r.Topic, r.Partition, r.Offset)
		want[u] = hourDir(r.Topic, dt.Truncate(time.Hour).Unix())
		recs[u] = &input[i]
	}
	missing, dup, misnamed := 0, 0, 0
	dupSeen := "" // one of them, to show
	for u, dir := range want {
		r := recs[u]
		switch n := p.byUUID[u]; {
		case n == 0:
			missing++
		case n > 1:
			dup++
			if dupSeen == "" {
				dupSeen = fmt.Sprintf(", e.g. %s/%d@%d in %v", r.Topic, r.Partition, r.Offset, p.fileOf[u])
			}
		}
		if got := p.hourOf[u]; p.byUUID[u] > 0 && got != dir {
			t.Errorf("record %s in %s, want %s", u, got, dir)
		}
		for _, f := range p.fileOf[u] {
			// readPublished matched the name.
			m := dataFile.FindStringSubmatch(filepath.Base(f))
			part, _ := strconv.ParseInt(m[1], 10, 32)
			first, _ := strconv.ParseInt(m[2], 10, 64)
			last, _ := strconv.ParseInt(m[3], 10, 64)
			if int32(part) != r.Partition || r.Offset < first || r.Offset > last {
				if misnamed == 0 {
					t.Errorf("record %s/%d@%d in %s (the name says partition %d, offsets %d to %d)", r.Topic, r.Partition, r.Offset, f, part, first, last)
				}
				misnamed++
			}
		}
	}
	if misnamed > 1 {
		t.Errorf("%d records in files named for other partitions or offsets", misnamed)
	}
	extra := 0
	for u := range p.byUUID {
		if _, ok := want[u]; !ok {
			extra++
		}
	}
	if missing > 0 || dup > 0 || extra > 0 {
		t.Fatalf("published %d distinct of %d records: %d missing, %d duplicated%s, %d unexpected",
			len(p.byUUID), len(want), missing, dup, dupSeen, extra)
	}
	return p
}

// checkNoTemps checks that nothing is left in progress.
func checkNoTemps(t testing.TB, root string) {
	t.Helper()
	checkNoTempsIn(t, vfs.OS, root)
}

// checkNoTempsIn is checkNoTemps of a root in fsys.
func checkNoTempsIn(t testing.TB, fsys vfs.FS, root string) {
	t.Helper()
	err := walkFiles(fsys, filepath.Join(root, inprogressDir), func(path string) error {
		t.Errorf("temp file left behind: %s", path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
