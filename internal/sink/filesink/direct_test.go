package filesink

import (
	"bufio"
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/eventlogging/eventlogging/internal/iphash"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/lineformat"
	"github.com/eventlogging/eventlogging/internal/process"
	"github.com/eventlogging/eventlogging/internal/schema"
	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// workloadDir holds the first 3,000 lines of the standard workload and its
// schemas (testdata/workload/README.md).
var workloadDir = filepath.Join("..", "..", "..", "testdata", "workload")

// workloadRecords runs the first n standard-workload lines through the
// processor and returns its records (capsules of five schemas, the mixed
// topic's copies, EventErrors), as the file sink consumes them.
func workloadRecords(tb testing.TB, n int) []kafka.Record {
	tb.Helper()
	f, err := os.Open(filepath.Join(workloadDir, "raw.tsv"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	p, err := process.New(workloadResolver(), iphash.NewHasher(iphash.SHA256, []byte("direct-test-key")), process.Config{IPPolicy: process.IPHash, ProcessorID: "direct-test"})
	if err != nil {
		tb.Fatal(err)
	}
	format, err := lineformat.Compile("%q %{recvFrom}s %{seqId}d %t %o %{userAgent}i")
	if err != nil {
		tb.Fatal(err)
	}
	var recs []kafka.Record
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for i := 0; i < n && sc.Scan(); i++ {
		for _, o := range p.Process(tb.Context(), format, sc.Bytes(), nil, nil) {
			recs = append(recs, kafka.Record{Topic: o.Topic, Partition: 0, Offset: int64(len(recs)), Timestamp: base, Value: o.Value})
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return recs
}

func workloadResolver() *schema.Resolver {
	return schema.NewResolver(schema.NewDirSource(filepath.Join(workloadDir, "schemas")), schema.ResolverConfig{})
}

// pathPair is two sinks over the same schemas: one places records by the
// direct path where it can, the other always by the map path.
type pathPair struct{ direct, maps *Sink }

func newPathPair(t testing.TB, res Schemas, format Format) pathPair {
	t.Helper()
	pp := pathPair{
		direct: openSink(t, Config{Root: t.TempDir(), Format: format, Schemas: res}),
		maps:   openSink(t, Config{Root: t.TempDir(), Format: format, Schemas: res}),
	}
	pp.maps.mapPathOnly = true
	return pp
}

// agree places r both ways and fails t when the results differ. It
// reports whether the direct path took r. Each path gets its own copy of
// the value, overwritten once placed: a row must not point into the
// record's bytes, which the consumer may reuse.
func (pp pathPair) agree(t testing.TB, r kafka.Record) bool {
	t.Helper()
	ctx := context.Background()
	var probe placed
	took, errP := pp.direct.placeDirect(ctx, bytes.Clone(r.Value), &probe)
	rd, rm := r, r
	rd.Value, rm.Value = bytes.Clone(r.Value), bytes.Clone(r.Value)
	d, errD := pp.direct.place(ctx, &rd)
	m, errM := pp.maps.place(ctx, &rm)
	if errP != nil && errM == nil || (errD == nil) != (errM == nil) {
		t.Fatalf("%s: errors differ: direct %v (placeDirect %v), map %v", r.Value, errD, errP, errM)
	}
	if errM != nil {
		return false // transient (a schema lookup failed): both retry the batch
	}
	if d.reason != m.reason || !d.dt.Equal(m.dt) || d.hour != m.hour || d.tag != m.tag || !bytes.Equal(d.line, m.line) || (d.pq == nil) != (m.pq == nil) {
		t.Fatalf("%s:\n direct: reason %q dt %v hour %d tag %q line %q\n map:    reason %q dt %v hour %d tag %q line %q",
			r.Value, d.reason, d.dt, d.hour, d.tag, d.line, m.reason, m.dt, m.hour, m.tag, m.line)
	}
	for _, b := range [][]byte{rd.Value, rm.Value} {
		for i := range b {
			b[i] = 'X'
		}
	}
	if !sameRow(d.row, m.row) {
		t.Fatalf("%s: rows differ:\n direct %v\n map    %v", r.Value, d.row, m.row)
	}
	return took
}

// sameRow is parquet.Row.Equal, with doubles compared bit for bit (Equal
// takes -0 for 0).
func sameRow(a, b parquet.Row) bool {
	if !a.Equal(b) {
		return false
	}
	for i := range a {
		if a[i].Kind() == parquet.Double && !a[i].IsNull() && math.Float64bits(a[i].Double()) != math.Float64bits(b[i].Double()) {
			return false
		}
	}
	return true
}

// TestDirectPathAgrees places the standard workload's records, and edge
// cases of the direct path, by both paths: the same file, hour, schema and
// row (or line) every time. Every clean workload record must take the
// direct path.
func TestDirectPathAgrees(t *testing.T) {
	recs := workloadRecords(t, 3000)
	if len(recs) < 5000 {
		t.Fatalf("only %d records from 3,000 workload lines", len(recs))
	}
	for _, format := range []Format{Parquet, JSONLines} {
		t.Run(string(format), func(t *testing.T) {
			pp := newPathPair(t, workloadResolver(), format)
			took := 0
			for _, r := range recs {
				if pp.agree(t, r) {
					took++
				}
			}
			// EventErrors hold the raw event in a string, often with
			// escapes: the direct path reads those too. Every record the
			// processor writes is compact, with a plain dt.
			if took != len(recs) {
				t.Errorf("the direct path took %d of %d processor records, want all", took, len(recs))
			}
			t.Logf("%d workload records, %d by the direct path", len(recs), took)
		})
	}
	t.Run("edges", func(t *testing.T) {
		good, bad := parquetInput()
		for _, format := range []Format{Parquet, JSONLines} {
			pp := newPathPair(t, testSchemas(t), format)
			for _, r := range append(good, bad...) {
				pp.agree(t, r)
			}
			for _, e := range directEdges {
				took := pp.agree(t, kafka.Record{Topic: "eventlogging_Test", Partition: 4, Timestamp: base.Add(time.Minute), Value: []byte(e.text)})
				if format == Parquet && took != e.direct {
					t.Errorf("%s: the direct path took it: %v, want %v", e.text, took, e.direct)
				}
			}
		}
	})
}

// countingSchemas counts schema lookups.
type countingSchemas struct {
	Schemas
	n int
}

func (c *countingSchemas) Resolve(ctx context.Context, id schema.ID) (*schema.Schema, error) {
	c.n++
	return c.Schemas.Resolve(ctx, id)
}

// A record whose schema is unknown is looked up once per placing, as
// before the direct path (not once by each path), and not cached: a
// schema registered later is found.
func TestDirectPathUnknownSchemaLookedUpOnce(t *testing.T) {
	dir := t.TempDir()
	cs := &countingSchemas{Schemas: schema.NewResolver(schema.NewDirSource(dir), schema.ResolverConfig{})}
	s := openSink(t, Config{Root: t.TempDir(), Format: Parquet, Schemas: cs})
	r := kafka.Record{Topic: "eventlogging_Test", Timestamp: base, Value: []byte(`{"event":{"action":"x"},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z","uuid":"u"}`)}
	for range 10 {
		pl, err := s.place(t.Context(), &r)
		if err != nil || !strings.Contains(pl.reason, "not found") {
			t.Fatalf("place: reason %q, err %v; want schema not found", pl.reason, err)
		}
	}
	if cs.n != 10 {
		t.Errorf("10 placings looked the schema up %d times, want 10", cs.n)
	}
	// The schema is registered; a new resolver stands for the negative
	// cache's entry expiring. The sink itself remembers no failure.
	testsupport.WriteFiles(t, dir, map[string]string{"Test/1.json": testsupport.CapsuleSchemaDoc})
	cs.Schemas = schema.NewResolver(schema.NewDirSource(dir), schema.ResolverConfig{})
	pl, err := s.place(t.Context(), &r)
	if err != nil || pl.reason != "" || pl.pq == nil {
		t.Fatalf("after the schema was added: reason %q, err %v", pl.reason, err)
	}
}

// directEdges are Test/1 capsules and button_click events at the direct
// path's edges: what it must leave to the map path (whitespace, escaped or
// duplicate keys, values that do not fit, times it does not read) and what
// it must convert exactly (escaped strings, number spellings, JSON
// columns, nulls, members the schema does not declare).
var directEdges = []struct {
	text   string
	direct bool // takes the direct path (Parquet)
}{
	{`{"event":{"action":"x","count":3,"ratio":0.5,"ok":true,"nested":{"label":"l","depth":{"level":2}},"tags":["a","b"],"free":{"z":1,"a":[1,2]}},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z","uuid":"u"}`, true},
	{`{"event":{"action":"a\"b\\c\/d\u00e9\ud83d\ude00\ud800","nested":{"label":"\n"}},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`, true},
	{`{"event":{"action":"x","count":3.0,"ratio":1e2},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`, true},
	{`{"event":{"action":"x","count":-0,"ratio":-0.0},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`, true},
	{`{"event":{"action":"x","count":1e2},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`, true},
	{`{"event":{"action":"x","count":1.5},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`, false},
	{`{"event":{"action":"x","count":9223372036854775808},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`, false},
	{`{"event":{"action":"x","count":9007199254740993,"ratio":9007199254740993},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`, true},
	{`{"event":{"action":"x","count":"3"},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`, false},
	{`{"event":{"action":3},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`, false},
	{`{"event":{"action":"x","ok":"true"},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`, false},
	{`{"event":{"action":"x","nested":"flat"},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`, false},
	{`{"event":{"action":"x","nested":null,"count":null,"tags":null},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`, true},
	{`{"event":{"action":"x","nested":{}},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`, true},
	{`{"event":{"action":"x","tags":"not-an-array","free":[{"b":1,"a":"\u0041"}]},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`, true},
	{`{"event":{"action":"x","undeclared":{"deep":[1,{"x":null}]}},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z","extra":true}`, true},
	{`{"event":{"action":"x"},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z","dt":"2024-01-05T08:00:00Z"}`, false},
	{`{"event":{"action":"x","action":"y"},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`, false},
	{`{"event":{"act\u0069on":"x"},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`, false},
	{`{"event":{"action":"x"}, "schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`, false},
	{` {"event":{"action":"x"},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`, false},
	{`{"event":{"action":"x"},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00.123+02:00"}`, true},
	{`{"event":{"action":"x"},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00\u005a"}`, false},
	{`{"event":{"action":"x"},"schema":"Test","revision":1,"dt":"yesterday"}`, false},
	{`{"event":{"action":"x"},"schema":"Test","revision":1,"dt":7}`, false},
	{`{"event":{"action":"x"},"schema":"Test","revision":1}`, false},
	{`{"event":{"action":"x"},"schema":"Test","revision":1.0,"dt":"2024-01-05T07:00:00Z"}`, true},
	{`{"event":{"action":"x"},"schema":"Test","revision":"1","dt":"2024-01-05T07:00:00Z"}`, false},
	{`{"event":{"action":"x"},"schema":"T\u0065st","revision":1,"dt":"2024-01-05T07:00:00Z"}`, false},
	{`{"event":{"action":"x"},"schema":"Nope","revision":1,"dt":"2024-01-05T07:00:00Z"}`, true},
	{`{"event":{"action":"x"},"revision":1,"dt":"2024-01-05T07:00:00Z"}`, false},
	{`{"event":"x","schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`, false},
	{`{"event":{"action":"x"},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z","seqId":12,"recvFrom":"h","timestamp":1704438000,"ip":null}`, true},
	{`{"event":{"action":"x"},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z","seqId":"12"}`, false},
	{`{"event":{"action":"x\u0000y"},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`, true},
	{"{\"event\":{\"action\":\"x\xffy\"},\"schema\":\"Test\",\"revision\":1,\"dt\":\"2024-01-05T07:00:00Z\"}", false},
	{`{"event":{"action":"x"},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}x`, false},
	{`{"event":{"action":"x"},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"`, false},
	{`["event"]`, false},
	{`{}`, false},
	{`{"$schema":"/analytics/button_click/1.0.0","dt":"2020-01-01T00:00:00Z","button":"b","clicks":3,"meta":{"id":"i","dt":"2024-01-05T07:00:00Z","stream":"button_click"}}`, true},
	{`{"$schema":"/analytics/button_click/1.0.0","button":"b","clicks":3,"meta":{"stream":"button_click","dt":"2024-01-05T07:00:00Z","extra":{"a":1}}}`, true},
	{`{"$schema":"/analytics/button_click/1.0.0","dt":"2024-01-05T07:00:00Z","meta":{"stream":"button_click"}}`, false},
	{`{"$schema":"/analytics/button_click/1.0.0","meta":"flat","dt":"2024-01-05T07:00:00Z"}`, false},
	{`{"$schema":"/analytics/button_click/1.0.0","meta":{"dt":"2024-01-05T07:00:00Z"},"clicks":true}`, false},
	{`{"$schema":7,"meta":{"dt":"2024-01-05T07:00:00Z"}}`, false},
	{`{"$schema":"/analytics/missing/1.0.0","meta":{"dt":"2024-01-05T07:00:00Z"}}`, true},
	{`{"$schema":"\/analytics\/button_click\/1.0.0","meta":{"dt":"2024-01-05T07:00:00Z"}}`, false},
}

// FuzzDirectPathAgrees holds the direct path to the map path on any record
// text: whatever the direct path takes, the map path places the same way.
func FuzzDirectPathAgrees(f *testing.F) {
	for _, e := range directEdges {
		f.Add([]byte(e.text))
	}
	for _, r := range workloadRecords(f, 30) {
		f.Add(r.Value)
	}
	// The sinks are opened once: their schema caches are part of what is
	// tested. A fuzz worker runs one input at a time.
	pairs := []pathPair{newPathPair(f, testSchemas(f), Parquet), newPathPair(f, workloadResolver(), Parquet), newPathPair(f, testSchemas(f), JSONLines)}
	f.Fuzz(func(t *testing.T, value []byte) {
		for _, pp := range pairs {
			pp.agree(t, kafka.Record{Topic: "eventlogging_Test", Timestamp: base, Value: value})
		}
	})
}

// BenchmarkPlace places the records of 1,000 standard-workload lines (the
// per-schema capsules, their mixed-topic copies and the EventErrors) by
// each path, as the Parquet file sink does before appending them.
func BenchmarkPlace(b *testing.B) {
	recs := workloadRecords(b, 1000)
	var size int64
	for _, r := range recs {
		size += int64(len(r.Value))
	}
	for _, path := range []string{"map", "direct"} {
		b.Run(path, func(b *testing.B) {
			s := openSink(b, Config{Root: b.TempDir(), Format: Parquet, Schemas: workloadResolver()})
			s.mapPathOnly = path == "map"
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				for i := range recs {
					pl, err := s.place(b.Context(), &recs[i])
					if err != nil || pl.reason != "" {
						b.Fatalf("%v %s", err, pl.reason)
					}
				}
			}
			b.ReportMetric(float64(b.N*len(recs))/b.Elapsed().Seconds(), "records/s")
		})
	}
}
