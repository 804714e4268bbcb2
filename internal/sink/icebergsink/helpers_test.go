package icebergsink

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/schema"
	"github.com/eventlogging/eventlogging/internal/sink"
	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// base is the hour the tests' data starts in.
var base = time.Date(2024, 1, 5, 7, 0, 0, 0, time.UTC)

// capsule2Record builds a capsule of Test/2 (two added fields).
func capsule2Record(topic string, partition int32, offset int64, dt time.Time) kafka.Record {
	v := fmt.Appendf(nil, `{"event":{"action":"v2","count":%d,"added":"a%d","extra":{"n":%d}},"schema":"Test","revision":2,"dt":%q,"uuid":%q}`,
		offset, offset, offset, dt.UTC().Format(time.RFC3339), testsupport.EventUUID(topic, partition, offset))
	return kafka.Record{Topic: topic, Partition: partition, Offset: offset, Value: v, Timestamp: dt}
}

// platformRecord builds an Event Platform event of stream analytics.button-click.
func platformRecord(topic string, partition int32, offset int64, dt time.Time) kafka.Record {
	v := fmt.Appendf(nil, `{"$schema":"/analytics/button_click/1.0.0","dt":"2000-01-01T00:00:00Z","button":"b%d","clicks":%d,"meta":{"id":%q,"dt":%q,"stream":"analytics.button-click"}}`,
		offset, offset, testsupport.EventUUID(topic, partition, offset), dt.UTC().Format(time.RFC3339Nano))
	return kafka.Record{Topic: topic, Partition: partition, Offset: offset, Value: v, Timestamp: dt}
}

// testSchema2Doc is Test/2: two new optional fields, one of them a struct.
const testSchema2Doc = `{
  "properties": {
    "action": {"type": "string", "required": true},
    "count": {"type": "integer"},
    "added": {"type": "string"},
    "extra": {"type": "object", "properties": {"n": {"type": "integer"}}}
  }
}`

// testSchema3Doc is Test/3: count changes type (incompatible).
const testSchema3Doc = `{
  "properties": {
    "action": {"type": "string", "required": true},
    "count": {"type": "string"}
  }
}`

// otherSchemaDoc is Other/1, a second legacy schema (its own table).
const otherSchemaDoc = `{
  "properties": {
    "action": {"type": "string"},
    "count": {"type": "integer"},
    "page": {"type": "object", "properties": {"title": {"type": "string"}, "ns": {"type": "integer"}}}
  }
}`

// otherRecord builds a capsule of Other/1.
func otherRecord(topic string, partition int32, offset int64, dt time.Time) kafka.Record {
	v := fmt.Appendf(nil, `{"event":{"action":"view","count":%d,"page":{"title":"P%d","ns":%d}},"schema":"Other","revision":1,"wiki":"dewiki","dt":%q,"uuid":%q,"clientIp":"10.0.0.%d"}`,
		offset, offset, offset%4, dt.UTC().Format(time.RFC3339), testsupport.EventUUID(topic, partition, offset), offset%250)
	return kafka.Record{Topic: topic, Partition: partition, Offset: offset, Value: v, Timestamp: dt}
}

// otherRecords builds n capsules of Other/1 in partition 0 of topic, step
// apart from base, offsets from 0.
func otherRecords(topic string, n int, step time.Duration) []kafka.Record {
	out := make([]kafka.Record, n)
	for i := range out {
		out[i] = otherRecord(topic, 0, int64(i), base.Add(time.Duration(i)*step))
	}
	return out
}

// testSchemas writes a schema folder and returns a resolver over it.
func testSchemas(t testing.TB) *schema.Resolver {
	t.Helper()
	dir := t.TempDir()
	testsupport.WriteFiles(t, dir, map[string]string{
		"Test/1.json":  testsupport.CapsuleSchemaDoc,
		"Test/2.json":  testSchema2Doc,
		"Test/3.json":  testSchema3Doc,
		"Other/1.json": otherSchemaDoc,
		"jsonschema/analytics/button_click/1.0.0.json": testsupport.ButtonClickSchemaDoc,
	})
	return schema.NewResolver(schema.NewDirSource(dir), schema.ResolverConfig{})
}

// env is a catalog and warehouse for a test.
type env struct {
	catalog   string // URI
	warehouse string
	dbPath    string // SQLite file, "" for PostgreSQL and REST
	namespace string // "": the default
	schemas   Schemas
}

// sqliteEnv is a SQLite catalog and a local warehouse in t.TempDir().
func sqliteEnv(t testing.TB) env {
	t.Helper()
	dir := t.TempDir()
	db := filepath.Join(dir, "catalog.db")
	return env{catalog: "sqlite:///" + db, warehouse: filepath.Join(dir, "warehouse"), dbPath: db, schemas: testSchemas(t)}
}

// config is a Config for e, with a long commit interval (tests Flush).
func (e env) config(t testing.TB) Config {
	return Config{Catalog: e.catalog, Warehouse: e.warehouse, Namespace: e.namespace, Schemas: e.schemas, Logger: testsupport.Logger(t), CommitInterval: time.Hour}
}

// restEnv is a namespace of its own in the test Iceberg REST catalog
// (testsupport skips locally, fails under CI=true without one), whose
// warehouse is the server's.
func restEnv(t testing.TB) env {
	t.Helper()
	srv := testsupport.IcebergREST(t)
	return env{catalog: srv.URL, warehouse: srv.Warehouse, namespace: srv.Namespace("eventlogging"), schemas: testSchemas(t)}
}

// openSink opens a sink or fails the test.
func openSink(t testing.TB, cfg Config) *Sink {
	t.Helper()
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// crash abandons s as a killed process would: nothing buffered is
// committed.
func (s *Sink) crash() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	_ = s.closeCatalog()
}

// flush commits what s holds (Flush), or fails the test.
func flush(t testing.TB, s *Sink) {
	t.Helper()
	if err := s.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// feed writes records in batches of n, acknowledging poison as sink.Run
// does (by the next call), and returns the poison.
func feed(t testing.TB, s *Sink, records []kafka.Record, n int) []sink.Poison {
	t.Helper()
	var poison []sink.Poison
	for start := 0; start < len(records); start += n {
		p, err := s.WriteRecords(t.Context(), records[start:min(start+n, len(records))])
		if err != nil {
			t.Fatal(err)
		}
		poison = append(poison, p...)
	}
	return poison
}

// spread builds n capsule records per partition of topic, over hours
// hours from base, offsets from 0.
func spread(topic string, partitions int32, n int, hours int) []kafka.Record {
	var out []kafka.Record
	for i := range n {
		for p := range partitions {
			dt := base.Add(time.Duration(i*hours) * time.Hour / time.Duration(n))
			out = append(out, testsupport.CapsuleRecord(topic, p, int64(i), dt))
		}
	}
	return out
}

// loadTable loads a table of the namespace through the sink's catalog.
func loadTable(t testing.TB, s *Sink, name string) *table.Table {
	t.Helper()
	tbl, err := s.cat.LoadTable(t.Context(), append(slices.Clone(s.ns), name))
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// scanRows reads a table back with iceberg-go, as JSON objects.
func scanRows(t testing.TB, tbl *table.Table, opts ...table.ScanOption) []map[string]any {
	t.Helper()
	rows, err := readRows(t.Context(), tbl, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// readRows is scanRows returning its error, for goroutines other than
// the test's.
func readRows(ctx context.Context, tbl *table.Table, opts ...table.ScanOption) ([]map[string]any, error) {
	_, itr, err := tbl.Scan(opts...).ToArrowRecords(ctx)
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	for rec, err := range itr {
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(rec)
		rec.Release()
		if err != nil {
			return nil, err
		}
		var rows []map[string]any
		if err := json.Unmarshal(b, &rows); err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	return out, nil
}

// countBy counts the rows by the string at a dotted path.
func countBy(rows []map[string]any, path string) map[string]int {
	out := map[string]int{}
	for _, r := range rows {
		var v any = r
		for _, name := range strings.Split(path, ".") {
			m, _ := v.(map[string]any)
			v = m[name]
		}
		if s, ok := v.(string); ok {
			out[s]++
		}
	}
	return out
}

// python returns the interpreter with pyiceberg: $EVENTLOGGING_PYTHON, or
// the project's virtualenv; it skips (locally) or fails (CI=true) when
// there is none.
func python(t testing.TB) string {
	t.Helper()
	py := os.Getenv("EVENTLOGGING_PYTHON")
	if py == "" {
		home, _ := os.UserHomeDir()
		py = filepath.Join(home, ".cache", "eventlogging", "venv", "bin", "python")
	}
	if err := exec.CommandContext(t.Context(), py, "-c", "import pyiceberg, pyarrow").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s cannot import pyiceberg (%v): under CI=true the PyIceberg interop test must run (scripts/test.sh installs it)", py, err)
		}
		t.Skipf("%s cannot import pyiceberg (%v); skipping the PyIceberg interop test", py, err)
	}
	return py
}

// runPython runs script with the interpreter py (python -c script args…)
// and decodes what it prints, JSON, into a T. A failure fails the test,
// with what the script wrote to stderr.
func runPython[T any](t testing.TB, py, script string, args ...string) T {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), py, append([]string{"-c", script}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pyiceberg: %v\n%s", err, stderr.String())
	}
	var res T
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("pyiceberg output %q: %v", out, err)
	}
	return res
}
