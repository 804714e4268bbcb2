package icebergsink

import (
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/dbtest"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// readScript reads a table with PyIceberg's SqlCatalog and prints, as
// JSON: every uuid (column argv[4], dotted for a nested one) with its
// count, the files a full scan plans, and for the hour starting at argv[5]
// the rows and files of a scan filtered on it, and the distinct hours in
// that result; plus the event.added/event.extra.n values by uuid.
const readScript = `
import json, sys, collections
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan
uri, warehouse, name, col, hour, hour_end = sys.argv[1:7]
cat = SqlCatalog("eventlogging", uri=uri, warehouse=warehouse)
t = cat.load_table("eventlogging." + name)
tbl = t.scan().to_arrow()
def values(tbl, path):
    parts = path.split(".")
    arr = tbl.column(parts[0]).combine_chunks()
    for p in parts[1:]:
        arr = arr.field(p)
    return arr.to_pylist()
uuids = collections.Counter(values(tbl, col))
filt = And(GreaterThanOrEqual("dt", hour), LessThan("dt", hour_end))
scan = t.scan(row_filter=filt)
one = scan.to_arrow()
out = {
  "rows": tbl.num_rows,
  "uuids": uuids,
  "files": len(list(t.scan().plan_files())),
  "hour_rows": one.num_rows,
  "hour_files": len(list(scan.plan_files())),
  "hour_hours": sorted({v.strftime("%Y-%m-%dT%H") for v in one.column("dt").to_pylist()}),
  "columns": [f.name for f in t.schema().fields],
  "hours": sorted({v.strftime("%Y-%m-%dT%H") for v in tbl.column("dt").to_pylist()}),
  "snapshots": len(t.snapshots()),
  "snapshot": t.current_snapshot().summary.additional_properties,
}
if "event" in tbl.column_names:
    ev = tbl.column("event").combine_chunks()
    names = [f.name for f in ev.type]
    u = values(tbl, col)
    out["added"] = dict(zip(u, ev.field("added").to_pylist())) if "added" in names else {}
    out["extra_n"] = dict(zip(u, ev.field("extra").field("n").to_pylist())) if "extra" in names else {}
json.dump(out, sys.stdout)
`

// pyResult is what readScript prints.
type pyResult struct {
	Rows      int                `json:"rows"`
	UUIDs     map[string]int     `json:"uuids"`
	Files     int                `json:"files"`
	HourRows  int                `json:"hour_rows"`
	HourFiles int                `json:"hour_files"`
	HourHours []string           `json:"hour_hours"`
	Columns   []string           `json:"columns"`
	Hours     []string           `json:"hours"`
	Snapshots int                `json:"snapshots"`
	Snapshot  map[string]string  `json:"snapshot"`
	Added     map[string]*string `json:"added"`
	ExtraN    map[string]*int64  `json:"extra_n"`
}

// readWithPyIceberg runs readScript on a table of a catalog.
func readWithPyIceberg(t *testing.T, py, catalogURI, warehouse, name, col string, hour time.Time) pyResult {
	t.Helper()
	return runPython[pyResult](t, py, readScript, catalogURI, warehouse, name, col,
		hour.Format("2006-01-02T15:04:05+00:00"), hour.Add(time.Hour).Format("2006-01-02T15:04:05+00:00"))
}

// PyIceberg, a reader nobody here wrote, reads every event exactly once; a
// scan of one hour returns only that hour and plans fewer files; revision 2
// adds columns that read null for revision 1's rows; revision 3, which
// changes a column's type, is poison.
func TestPyIceberg(t *testing.T) {
	py := python(t)
	e := sqliteEnv(t)
	s := openSink(t, e.config(t))
	const topic = "eventlogging_Test"
	input := spread(topic, 2, 1500, 3) // offsets 0..1499, hours 7, 8, 9
	feed(t, s, input, 1000)
	if err := s.Flush(t.Context()); err != nil { // a first snapshot
		t.Fatal(err)
	}
	var v2 []kafka.Record
	for i := range 100 {
		v2 = append(v2, capsule2Record(topic, 0, int64(1500+i), base.Add(2*time.Hour+time.Duration(i)*time.Second)))
	}
	v3 := kafka.Record{Topic: topic, Partition: 1, Offset: 1500, Timestamp: base,
		Value: []byte(`{"event":{"action":"v3","count":"many"},"schema":"Test","revision":3,"dt":"2024-01-05T09:30:00Z","uuid":"v3"}`)}
	poison := feed(t, s, append(v2, v3), 1000)
	if len(poison) != 1 || !strings.Contains(poison[0].Reason, "incompatible with table column event.count: long vs string") {
		t.Fatalf("poison = %+v", poison)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	res := readWithPyIceberg(t, py, e.catalog, "file://"+e.warehouse, "Test", "uuid", base.Add(time.Hour))
	if res.Rows != 3100 || len(res.UUIDs) != 3100 {
		t.Fatalf("pyiceberg read %d rows, %d uuids; want 3100", res.Rows, len(res.UUIDs))
	}
	for _, r := range append(input, v2...) {
		if n := res.UUIDs[testsupport.EventUUID(r.Topic, r.Partition, r.Offset)]; n != 1 {
			t.Fatalf("uuid of %d/%d read %d times", r.Partition, r.Offset, n)
		}
	}
	if res.HourRows != 1000 || len(res.HourHours) != 1 || res.HourHours[0] != "2024-01-05T08" {
		t.Errorf("hour scan: %d rows, hours %v; want 1000 rows of 2024-01-05T08", res.HourRows, res.HourHours)
	}
	if res.HourFiles >= res.Files || res.HourFiles == 0 {
		t.Errorf("hour scan plans %d of %d files: no partition pruning", res.HourFiles, res.Files)
	}
	t.Logf("full scan %d files, one hour %d files", res.Files, res.HourFiles)
	// Schema evolution: one table, new columns null for older rows.
	old, newer := testsupport.EventUUID(topic, 0, 0), testsupport.EventUUID(topic, 0, 1500)
	if res.Added[old] != nil || res.ExtraN[old] != nil {
		t.Errorf("revision 1 row has added=%v extra.n=%v, want null", res.Added[old], res.ExtraN[old])
	}
	if a := res.Added[newer]; a == nil || *a != "a1500" {
		t.Errorf("revision 2 row added = %v", a)
	}
	if n := res.ExtraN[newer]; n == nil || *n != 1500 {
		t.Errorf("revision 2 row extra.n = %v", n)
	}
	// v3 was poison, never acknowledged: partition 1 is complete only
	// through 1499, so a restart re-delivers it.
	if got := res.Snapshot[PropComplete]; got != `{"eventlogging_Test":{"0":1599,"1":1499}}` {
		t.Errorf("%s = %s", PropComplete, got)
	}
}

// Purge deletes the hours before the retention in one delete snapshot per
// table, ExpireSnapshots drops the older snapshots, and PyIceberg reads
// what is left; the offsets survive both, so resuming is unaffected.
func TestPurgeAndExpire(t *testing.T) {
	py := python(t)
	e := sqliteEnv(t)
	s := openSink(t, e.config(t))
	defer s.Close()
	const topic = "eventlogging_Test"
	input := spread(topic, 1, 300, 3) // hours 7, 8, 9
	for i := 0; i < 300; i += 100 {   // three snapshots
		feed(t, s, input[i:i+100], 100)
		flush(t, s)
	}
	changed, err := s.Purge(t.Context(), base.Add(time.Hour+30*time.Minute)) // truncated: before 08:00
	if err != nil {
		t.Fatal(err)
	}
	if len(changed) != 1 || changed[0] != "eventlogging.Test" {
		t.Errorf("purge changed %v", changed)
	}
	if err := s.ExpireSnapshots(t.Context(), 1, 0); err != nil {
		t.Fatal(err)
	}
	res := readWithPyIceberg(t, py, e.catalog, "file://"+e.warehouse, "Test", "uuid", base.Add(time.Hour))
	if res.Rows != 200 || strings.Join(res.Hours, ",") != "2024-01-05T08,2024-01-05T09" {
		t.Errorf("after purge: %d rows, hours %v; want 200 rows of hours 8 and 9", res.Rows, res.Hours)
	}
	if res.Snapshots != 1 {
		t.Errorf("%d snapshots after expiry, want 1", res.Snapshots)
	}
	if got := res.Snapshot[PropComplete]; got != `{"eventlogging_Test":{"0":299}}` {
		t.Errorf("%s after purge = %s", PropComplete, got)
	}
	offs, err := s.StartOffsets(t.Context(), map[string][]int32{topic: {0}})
	if err != nil {
		t.Fatal(err)
	}
	if offs[topic][0] != 300 {
		t.Errorf("resumes at %d after purge and expiry, want 300", offs[topic][0])
	}
}

// PyIceberg reads a table of the PostgreSQL catalog, every uuid once.
func TestPyIcebergPostgres(t *testing.T) {
	_, dsn := dbtest.Postgres(t)
	py := python(t)
	e := env{catalog: dsn, warehouse: t.TempDir(), schemas: testSchemas(t)}
	s := openSink(t, e.config(t))
	input := spread("eventlogging_Test", 2, 500, 2)
	feed(t, s, input, 1000)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// SQLAlchemy 2.1 defaults to psycopg 3; pyiceberg[sql-postgres] brings psycopg2.
	uri := "postgresql+psycopg2://" + strings.TrimPrefix(strings.TrimPrefix(dsn, "postgres://"), "postgresql://")
	res := readWithPyIceberg(t, py, uri, "file://"+e.warehouse, "Test", "uuid", base)
	if res.Rows != len(input) || len(res.UUIDs) != len(input) {
		t.Fatalf("pyiceberg read %d rows, %d uuids; want %d", res.Rows, len(res.UUIDs), len(input))
	}
	if res.HourRows != 500 || res.HourFiles >= res.Files {
		t.Errorf("hour scan: %d rows in %d of %d files", res.HourRows, res.HourFiles, res.Files)
	}
}
