package icebergsink

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// tableScript prints, as JSON, a table's rows (timestamps as ISO
// strings), the data files a full scan plans, the snapshot count and the
// current snapshot's properties, read by PyIceberg.
const tableScript = `
import json, sys
from pyiceberg.catalog.sql import SqlCatalog
uri, warehouse, name = sys.argv[1:4]
cat = SqlCatalog("eventlogging", uri=uri, warehouse=warehouse)
t = cat.load_table("eventlogging." + name)
json.dump({"rows": t.scan().to_arrow().to_pylist(), "files": len(list(t.scan().plan_files())),
    "snapshots": len(t.snapshots()), "snapshot": t.current_snapshot().summary.additional_properties,
    "columns": [f.name for f in t.schema().fields]}, sys.stdout, default=lambda v: v.isoformat())
`

type pyTable struct {
	Rows      []map[string]any  `json:"rows"`
	Files     int               `json:"files"`
	Snapshots int               `json:"snapshots"`
	Snapshot  map[string]string `json:"snapshot"`
	Columns   []string          `json:"columns"`
}

func readTable(t *testing.T, py string, e env, name string) pyTable {
	t.Helper()
	return runPython[pyTable](t, py, tableScript, e.catalog, "file://"+e.warehouse, name)
}

// Small files of one hour — one per commit — are compacted by Maintain
// (every CompactEvery rounds) into one per hour, in one replace snapshot
// that keeps the offsets: PyIceberg reads the same rows from fewer files,
// and resuming is unaffected. A second compaction finds nothing to do.
func TestCompact(t *testing.T) {
	py := python(t)
	e := sqliteEnv(t)
	cfg := e.config(t)
	cfg.CompactEvery, cfg.CompactAfter = 6, time.Minute
	s := openSink(t, cfg)
	defer s.Close()
	const topic = "eventlogging_Test"
	input := spread(topic, 2, 600, 3) // hours 7, 8, 9
	for i := 0; i < len(input); i += 200 {
		feed(t, s, input[i:i+200], 100)
		flush(t, s)
	}
	before := readTable(t, py, e, "Test")
	if err := s.Maintain(t.Context()); err != nil { // 6 rounds: compacts
		t.Fatal(err)
	}
	after := readTable(t, py, e, "Test")
	t.Logf("%d files before compaction, %d after", before.Files, after.Files)
	if after.Files != 3 || before.Files <= 3 {
		t.Errorf("files: %d before, %d after; want more than 3, then 3 (one per hour)", before.Files, after.Files)
	}
	got := countBy(after.Rows, "uuid")
	if len(after.Rows) != len(input) || len(got) != len(input) {
		t.Errorf("after compaction: %d rows, %d uuids; want %d", len(after.Rows), len(got), len(input))
	}
	for _, r := range input {
		if n := got[testsupport.EventUUID(r.Topic, r.Partition, r.Offset)]; n != 1 {
			t.Fatalf("%d/%d read %d times", r.Partition, r.Offset, n)
		}
	}
	if c := after.Snapshot[PropComplete]; c != `{"eventlogging_Test":{"0":599,"1":599}}` {
		t.Errorf("%s after compaction = %s", PropComplete, c)
	}
	if n, err := s.Compact(t.Context(), 0); err != nil || n != 0 {
		t.Errorf("second compaction: %d hours, %v; want 0", n, err)
	}
	if again := readTable(t, py, e, "Test"); again.Snapshots != after.Snapshots {
		t.Errorf("second compaction made a snapshot")
	}
	offs, err := s.StartOffsets(t.Context(), map[string][]int32{topic: {0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if o := offs[topic]; o[0] != 600 || o[1] != 600 {
		t.Errorf("resumes at %v after compaction", o)
	}
}

// testHash is the test policy's HMAC, as purge computes it.
func testHash(s string) string {
	m := hmac.New(sha256.New, []byte("salt"))
	m.Write([]byte(s))
	return hex.EncodeToString(m.Sum(nil))
}

// testRules is a retention policy in the shape of purge's: Test keeps
// wiki and event.action, hashes userAgent (a string) and event.count (a
// long: null, as in files and SQL) and event.nested.label; Other has no
// rule.
func testRules(info TableInfo) Sanitiser {
	if info.Schema != "Test" {
		return nil
	}
	return func(rec map[string]any) map[string]any {
		out := map[string]any{}
		for _, f := range []string{"uuid", "dt", "timestamp", "schema", "revision", "wiki"} {
			if v, ok := rec[f]; ok {
				out[f] = v
			}
		}
		ev, _ := rec["event"].(map[string]any)
		oe := map[string]any{"action": ev["action"]}
		if c, ok := ev["count"]; ok {
			oe["count"] = testHash(strings.TrimSpace(string(must(json.Marshal(c)))))
		}
		if n, ok := ev["nested"].(map[string]any); ok {
			if l, ok := n["label"].(string); ok {
				oe["nested"] = map[string]any{"label": testHash(l)}
			}
		}
		out["event"] = oe
		if ua, ok := rec["userAgent"].(string); ok {
			out["userAgent"] = testHash(ua)
		}
		return out
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// PurgeOld sanitises the old hours of tables with a rule (only the allowed
// fields, hashed ones hashed, in one overwrite snapshot) and deletes those
// of tables without; PyIceberg reads the result. A rerun changes nothing;
// a late row in an old hour is sanitised by the next run, alone.
func TestPurgeOld(t *testing.T) {
	py := python(t)
	e := sqliteEnv(t)
	s := openSink(t, e.config(t))
	defer s.Close()
	test := spread("eventlogging_Test", 1, 300, 3) // hours 7, 8, 9
	other := otherRecords("eventlogging_Other", 300, 36*time.Second)
	feed(t, s, test[:150], 50)
	feed(t, s, other, 100)
	flush(t, s)
	feed(t, s, test[150:], 50)
	flush(t, s)
	cut := base.Add(90 * time.Minute) // truncated: hour 7 is old
	rep, err := s.PurgeOld(t.Context(), cut, testRules)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rep.Deleted, ",") != "eventlogging.Other" || strings.Join(rep.Sanitised, ",") != "eventlogging.Test" || rep.RowsSanitised != 100 {
		t.Errorf("report %+v; want Other deleted, Test's 100 rows of hour 7 sanitised", rep)
	}
	res := readTable(t, py, e, "Test")
	if len(res.Rows) != 300 {
		t.Fatalf("Test has %d rows, want 300", len(res.Rows))
	}
	offsetOf := map[string]int64{}
	for _, r := range test {
		offsetOf[testsupport.EventUUID(r.Topic, r.Partition, r.Offset)] = r.Offset
	}
	sanitised := 0
	for _, r := range res.Rows {
		dt, _ := r["dt"].(string)
		ev, _ := r["event"].(map[string]any)
		if strings.HasPrefix(dt, "2024-01-05T07") {
			sanitised++
			nested, _ := ev["nested"].(map[string]any)
			if r[ColumnSanitised] != true || r["wiki"] != "enwiki" || r["webHost"] != nil || r["recvFrom"] != nil ||
				r["userAgent"] != testHash("UA") || r["uuid"] == nil || r["seqId"] != nil ||
				ev["action"] != "click" || ev["count"] != nil || ev["ratio"] != nil || ev["tags"] != nil ||
				nested["label"] != testHash(fmt.Sprintf("n%d", offsetOf[r["uuid"].(string)])) || nested["depth"] != nil {
				t.Fatalf("old row not sanitised as the rule says: %v", r)
			}
		} else if r[ColumnSanitised] != nil || r["webHost"] != "en.wikipedia.org" || ev["ratio"] == nil || r["userAgent"] != "UA" {
			t.Fatalf("recent row changed: %v", r)
		}
	}
	if sanitised != 100 {
		t.Errorf("%d sanitised rows, want 100", sanitised)
	}
	if c := res.Snapshot[PropComplete]; c == "" {
		t.Errorf("the sanitising snapshot lost the offsets: %v", res.Snapshot)
	}
	oth := readTable(t, py, e, "Other")
	if len(oth.Rows) != 200 {
		t.Errorf("Other has %d rows after purge, want 200 (hour 7 deleted)", len(oth.Rows))
	}

	// A rerun changes nothing.
	rep, err = s.PurgeOld(t.Context(), cut, testRules)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Deleted)+len(rep.Sanitised) != 0 {
		t.Errorf("rerun changed %+v", rep)
	}
	if again := readTable(t, py, e, "Test"); again.Snapshots != res.Snapshots {
		t.Errorf("rerun made a snapshot of Test: %d, then %d", res.Snapshots, again.Snapshots)
	}
	if again := readTable(t, py, e, "Other"); again.Snapshots != oth.Snapshots {
		t.Errorf("rerun made a snapshot of Other")
	}

	// A late row in hour 7 is sanitised by the next run, alone.
	late := testsupport.CapsuleRecord("eventlogging_Test", 0, 300, base.Add(59*time.Minute))
	feed(t, s, []kafka.Record{late}, 1)
	flush(t, s)
	rep, err = s.PurgeOld(t.Context(), cut, testRules)
	if err != nil {
		t.Fatal(err)
	}
	if rep.RowsSanitised != 1 || rep.FilesRewritten != 1 {
		t.Errorf("late row: %+v; want 1 row of 1 file sanitised", rep)
	}
	res = readTable(t, py, e, "Test")
	n := 0
	for _, r := range res.Rows {
		if r[ColumnSanitised] == true {
			n++
		}
	}
	if n != 101 || len(res.Rows) != 301 {
		t.Errorf("%d of %d rows sanitised, want 101 of 301", n, len(res.Rows))
	}
	offs, err := s.StartOffsets(t.Context(), map[string][]int32{"eventlogging_Test": {0}})
	if err != nil {
		t.Fatal(err)
	}
	if offs["eventlogging_Test"][0] != 301 {
		t.Errorf("resumes at %d after purges", offs["eventlogging_Test"][0])
	}
}

// A table whose commit.retry.num-retries would make iceberg-go replay the
// sink's commits (with stale offsets) is refused, not written.
func TestReplayRefused(t *testing.T) {
	e := sqliteEnv(t)
	s := openSink(t, e.config(t))
	defer s.Close()
	feed(t, s, spread("eventlogging_Test", 1, 10, 1), 10)
	flush(t, s)
	txn := loadTable(t, s, "Test").NewTransaction()
	if err := txn.SetProperties(map[string]string{"commit.retry.num-retries": "4"}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	more := []kafka.Record{testsupport.CapsuleRecord("eventlogging_Test", 0, 10, base)}
	feed(t, s, more, 1)
	if err := s.Flush(t.Context()); err == nil || !strings.Contains(err.Error(), "commit.retry.num-retries=4") {
		t.Errorf("flush: %v; want the table refused", err)
	}
	if _, err := s.Compact(t.Context(), 0); err == nil {
		t.Errorf("compact: no error; want the table refused")
	}
}

// Maintain expires old snapshots after compacting: with a retention of
// 1 ns and 2 snapshots kept, the table keeps the newest 2, PyIceberg reads
// every row, and resuming is unaffected (the newest snapshot carries the
// offsets).
func TestMaintainExpiresSnapshots(t *testing.T) {
	py := python(t)
	e := sqliteEnv(t)
	cfg := e.config(t)
	cfg.CompactEvery, cfg.CompactAfter = 4, time.Minute
	cfg.SnapshotRetention, cfg.SnapshotsKept = time.Nanosecond, 2
	s := openSink(t, cfg)
	defer s.Close()
	const topic = "eventlogging_Test"
	input := spread(topic, 1, 400, 2)
	for i := 0; i < len(input); i += 100 {
		feed(t, s, input[i:i+100], 100)
		flush(t, s)
	}
	before := readTable(t, py, e, "Test")
	if err := s.Maintain(t.Context()); err != nil { // 4 rounds: compacts, then expires
		t.Fatal(err)
	}
	after := readTable(t, py, e, "Test")
	t.Logf("%d snapshots before, %d after", before.Snapshots, after.Snapshots)
	if before.Snapshots < 4 || after.Snapshots != 2 {
		t.Errorf("snapshots: %d before, %d after; want at least 4, then the newest 2", before.Snapshots, after.Snapshots)
	}
	if got := countBy(after.Rows, "uuid"); len(after.Rows) != len(input) || len(got) != len(input) {
		t.Errorf("after expiry: %d rows, %d uuids; want %d", len(after.Rows), len(got), len(input))
	}
	offs, err := s.StartOffsets(t.Context(), map[string][]int32{topic: {0}})
	if err != nil {
		t.Fatal(err)
	}
	if o := offs[topic][0]; o != 400 {
		t.Errorf("resumes at %d after expiry, want 400", o)
	}
}
