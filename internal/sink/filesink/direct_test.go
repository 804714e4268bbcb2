package filesink

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/iphash"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/lineformat"
	"github.com/eventlogging/eventlogging/internal/process"
	"github.com/eventlogging/eventlogging/internal/schema"
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

func newPathPair(t testing.TB, res *schema.Resolver, format Format) pathPair {
	t.Helper()
	pp := pathPair{
		direct: openSink(t, Config{Root: t.TempDir(), Format: format, Schemas: res}),
		maps:   openSink(t, Config{Root: t.TempDir(), Format: format, Schemas: res}),
	}
	pp.maps.mapPathOnly = true
	return pp
}

// agree places r both ways and fails t when the results differ. It
// reports whether the direct path took r.
func (pp pathPair) agree(t testing.TB, r kafka.Record) bool {
	t.Helper()
	ctx := context.Background()
	var probe placed
	took, errP := pp.direct.placeDirect(ctx, r.Value, &probe)
	d, errD := pp.direct.place(ctx, &r)
	m, errM := pp.maps.place(ctx, &r)
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
	if !d.row.Equal(m.row) {
		t.Fatalf("%s: rows differ:\n direct %v\n map    %v", r.Value, d.row, m.row)
	}
	if took && d.reason != "" {
		t.Fatalf("%s: the direct path took a record the map path refuses (%s)", r.Value, d.reason)
	}
	return took
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
			took := 0
			for _, r := range append(append(good, bad...), directEdgeRecords()...) {
				if pp.agree(t, r) {
					took++
				}
			}
			if took == 0 {
				t.Fatalf("%s: no edge record took the direct path", format)
			}
		}
	})
}

// directEdges are Test/1 capsules and button_click events at the direct
// path's edges: what it must leave to the map path (whitespace, escaped or
// duplicate keys, values that do not fit, times it does not read) and what
// it must convert exactly (escaped strings, number spellings, JSON
// columns, nulls, members the schema does not declare).
var directEdges = []string{
	`{"event":{"action":"x","count":3,"ratio":0.5,"ok":true,"nested":{"label":"l","depth":{"level":2}},"tags":["a","b"],"free":{"z":1,"a":[1,2]}},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z","uuid":"u"}`,
	`{"event":{"action":"a\"b\\c\/d\u00e9\ud83d\ude00\ud800","nested":{"label":"\n"}},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`,
	`{"event":{"action":"x","count":3.0,"ratio":1e2},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`,
	`{"event":{"action":"x","count":-0,"ratio":-0.0},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`,
	`{"event":{"action":"x","count":1e2},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`,
	`{"event":{"action":"x","count":1.5},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`,
	`{"event":{"action":"x","count":9223372036854775808},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`,
	`{"event":{"action":"x","count":9007199254740993,"ratio":9007199254740993},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`,
	`{"event":{"action":"x","count":"3"},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`,
	`{"event":{"action":3},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`,
	`{"event":{"action":"x","ok":"true"},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`,
	`{"event":{"action":"x","nested":"flat"},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`,
	`{"event":{"action":"x","nested":null,"count":null,"tags":null},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`,
	`{"event":{"action":"x","nested":{}},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`,
	`{"event":{"action":"x","tags":"not-an-array","free":[{"b":1,"a":"\u0041"}]},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`,
	`{"event":{"action":"x","undeclared":{"deep":[1,{"x":null}]}},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z","extra":true}`,
	`{"event":{"action":"x"},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z","dt":"2024-01-05T08:00:00Z"}`,
	`{"event":{"action":"x","action":"y"},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`,
	`{"event":{"act\u0069on":"x"},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`,
	`{"event":{"action":"x"}, "schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`,
	` {"event":{"action":"x"},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`,
	`{"event":{"action":"x"},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00.123+02:00"}`,
	`{"event":{"action":"x"},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00\u005a"}`,
	`{"event":{"action":"x"},"schema":"Test","revision":1,"dt":"yesterday"}`,
	`{"event":{"action":"x"},"schema":"Test","revision":1,"dt":7}`,
	`{"event":{"action":"x"},"schema":"Test","revision":1}`,
	`{"event":{"action":"x"},"schema":"Test","revision":1.0,"dt":"2024-01-05T07:00:00Z"}`,
	`{"event":{"action":"x"},"schema":"Test","revision":"1","dt":"2024-01-05T07:00:00Z"}`,
	`{"event":{"action":"x"},"schema":"T\u0065st","revision":1,"dt":"2024-01-05T07:00:00Z"}`,
	`{"event":{"action":"x"},"schema":"Nope","revision":1,"dt":"2024-01-05T07:00:00Z"}`,
	`{"event":{"action":"x"},"revision":1,"dt":"2024-01-05T07:00:00Z"}`,
	`{"event":"x","schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`,
	`{"event":{"action":"x"},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z","seqId":12,"recvFrom":"h","timestamp":1704438000,"ip":null}`,
	`{"event":{"action":"x"},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z","seqId":"12"}`,
	`{"event":{"action":"x\u0000y"},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`,
	"{\"event\":{\"action\":\"x\xffy\"},\"schema\":\"Test\",\"revision\":1,\"dt\":\"2024-01-05T07:00:00Z\"}",
	`{"event":{"action":"x"},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}x`,
	`{"event":{"action":"x"},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"`,
	`["event"]`,
	`{}`,
	`{"$schema":"/analytics/button_click/1.0.0","dt":"2020-01-01T00:00:00Z","button":"b","clicks":3,"meta":{"id":"i","dt":"2024-01-05T07:00:00Z","stream":"button_click"}}`,
	`{"$schema":"/analytics/button_click/1.0.0","button":"b","clicks":3,"meta":{"stream":"button_click","dt":"2024-01-05T07:00:00Z","extra":{"a":1}}}`,
	`{"$schema":"/analytics/button_click/1.0.0","dt":"2024-01-05T07:00:00Z","meta":{"stream":"button_click"}}`,
	`{"$schema":"/analytics/button_click/1.0.0","meta":"flat","dt":"2024-01-05T07:00:00Z"}`,
	`{"$schema":"/analytics/button_click/1.0.0","meta":{"dt":"2024-01-05T07:00:00Z"},"clicks":true}`,
	`{"$schema":7,"meta":{"dt":"2024-01-05T07:00:00Z"}}`,
	`{"$schema":"/analytics/missing/1.0.0","meta":{"dt":"2024-01-05T07:00:00Z"}}`,
	`{"$schema":"\/analytics\/button_click\/1.0.0","meta":{"dt":"2024-01-05T07:00:00Z"}}`,
}

func directEdgeRecords() []kafka.Record {
	out := make([]kafka.Record, len(directEdges))
	for i, e := range directEdges {
		out[i] = kafka.Record{Topic: "eventlogging_Test", Partition: 4, Offset: int64(i), Timestamp: base.Add(time.Minute), Value: []byte(e)}
	}
	return out
}

// FuzzDirectPathAgrees holds the direct path to the map path on any record
// text: whatever the direct path takes, the map path places the same way.
func FuzzDirectPathAgrees(f *testing.F) {
	for _, e := range directEdges {
		f.Add([]byte(e))
	}
	for _, r := range workloadRecords(f, 30) {
		f.Add(r.Value)
	}
	// The sinks are opened once: their schema caches are part of what is
	// tested. A fuzz worker runs one input at a time.
	pairs := []pathPair{newPathPair(f, testSchemas(f), Parquet), newPathPair(f, workloadResolver(), Parquet)}
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
