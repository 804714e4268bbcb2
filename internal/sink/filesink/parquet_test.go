package filesink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/schema"
	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// The Parquet schema of Test/1: the event's nested objects are groups,
// scalars map to their physical types, arrays and free objects to JSON
// text, and the capsule fields are added. Every field is optional.
func TestParquetSchemaFromJSONSchema(t *testing.T) {
	pq := testParquetSchema(t)
	want := `message eventlogging {
	optional binary clientIp (STRING);
	optional binary dt (STRING);
	optional group event {
		optional binary action (STRING);
		optional int64 count (INT(64,true));
		optional binary free (STRING);
		optional group nested {
			optional group depth {
				optional int64 level (INT(64,true));
			}
			optional binary label (STRING);
		}
		optional boolean ok;
		optional double ratio;
		optional binary tags (STRING);
	}
	optional binary recvFrom (STRING);
	optional int64 revision (INT(64,true));
	optional binary schema (STRING);
	optional int64 seqId (INT(64,true));
	optional int64 timestamp (INT(64,true));
	optional binary topic (STRING);
	optional binary userAgent (STRING);
	optional binary uuid (STRING);
	optional binary webHost (STRING);
	optional binary wiki (STRING);
}`
	if got := pq.schema.String(); got != want {
		t.Fatalf("schema:\n%s\nwant:\n%s", got, want)
	}
}

func TestParquetLocalRefs(t *testing.T) {
	doc := map[string]any{
		"type": "object",
		"$defs": map[string]any{
			"point": map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "number"}}},
			"loop":  map[string]any{"$ref": "#/$defs/loop"},
		},
		"properties": map[string]any{
			"$schema": map[string]any{"type": "string"},
			"meta":    map[string]any{"type": "object", "properties": map[string]any{"dt": map[string]any{"type": "string"}}},
			"p":       map[string]any{"$ref": "#/$defs/point"},
			"l":       map[string]any{"$ref": "#/$defs/loop"},
			"ext":     map[string]any{"$ref": "https://example.org/x.json"},
		},
	}
	pq, err := buildSchema("/x/1.0.0", doc, true)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"$schema"}, {"ext"}, {"l"}, {"meta", "dt"}, {"p", "x"}}
	if got := pq.schema.Columns(); !reflect.DeepEqual(got, want) {
		t.Fatalf("columns %v, want %v", got, want)
	}
}

// parquetInput is a mix: two revisions of an EventLogging schema, an Event
// Platform stream, error records, and records that cannot be written.
func parquetInput() (good, bad []kafka.Record) {
	good = spread([]string{"eventlogging_Test"}, 2, 150, 3)
	for i := range 20 {
		dt := base.Add(time.Duration(i) * time.Minute)
		good = append(good, kafka.Record{Topic: "eventlogging_Test", Partition: 2, Offset: int64(i), Timestamp: dt,
			Value: fmt.Appendf(nil, `{"event":{"action":"v2","count":%d,"added":"yes"},"schema":"Test","revision":2,"dt":%q,"uuid":%q}`,
				i, dt.Format(time.RFC3339), testsupport.EventUUID("eventlogging_Test", 2, int64(i)))})
		good = append(good, kafka.Record{Topic: "button_click", Partition: 0, Offset: int64(i), Timestamp: dt,
			Value: fmt.Appendf(nil, `{"$schema":"/analytics/button_click/1.0.0","dt":"2020-01-01T00:00:00Z","button":"b%d","clicks":%d,"meta":{"id":%q,"dt":%q,"stream":"button_click"}}`,
				i, i, testsupport.EventUUID("button_click", 0, int64(i)), dt.Format(time.RFC3339))})
	}
	ec := capsule.ErrorCapsule{
		Event:  capsule.EventError{RawEvent: "?%7B", Message: "bad", Code: capsule.CodeProcessor, Schema: "unknown", Revision: -1, Source: &capsule.Source{Topic: "raw", Partition: 3, Offset: 42}},
		Schema: capsule.EventErrorSchema, Revision: capsule.EventErrorRevision, Timestamp: base.Unix(), DT: capsule.FormatDT(base),
		UUID: testsupport.EventUUID(capsule.TopicEventError, 0, 0), Topic: capsule.TopicEventError,
	}
	good = append(good, kafka.Record{Topic: capsule.TopicEventError, Partition: 0, Offset: 0, Value: ec.AppendJSON(nil), Timestamp: base})
	bad = []kafka.Record{
		{Topic: "eventlogging_Test", Partition: 3, Offset: 0, Timestamp: base, Value: []byte(`{"event":{"action":"x","count":"many"},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`)},
		{Topic: "eventlogging_Test", Partition: 3, Offset: 1, Timestamp: base, Value: []byte(`{"event":{"action":"x","nested":{"depth":{"level":1.5}}},"schema":"Test","revision":1,"dt":"2024-01-05T07:00:00Z"}`)},
		{Topic: "eventlogging_Test", Partition: 3, Offset: 2, Timestamp: base, Value: []byte(`{"event":{},"schema":"Nope","revision":1,"dt":"2024-01-05T07:00:00Z"}`)},
		{Topic: "eventlogging_Test", Partition: 3, Offset: 3, Timestamp: base, Value: []byte(`{"event":{},"dt":"2024-01-05T07:00:00Z"}`)},
		{Topic: "button_click", Partition: 1, Offset: 0, Timestamp: base, Value: []byte(`{"$schema":"/analytics/missing/1.0.0","meta":{"dt":"2024-01-05T07:00:00Z"}}`)},
	}
	return good, bad
}

func TestParquetWriteAndRead(t *testing.T) {
	root := t.TempDir()
	s := openSink(t, Config{Root: root, Format: Parquet, Schemas: testSchemas(t)})
	good, bad := parquetInput()
	res, err := s.Write(t.Context(), append(slices.Clone(good), bad...))
	if err != nil {
		t.Fatal(err)
	}
	if res.Written != len(good) || len(res.Poison) != len(bad) {
		t.Fatalf("written %d, poison %d; want %d, %d: %+v", res.Written, len(res.Poison), len(good), len(bad), res.Poison)
	}
	for i, want := range []string{
		"value at /event/count does not fit its Parquet column: got string, want integer",
		"value at /event/nested/depth/level does not fit its Parquet column: got number, want integer",
		"schema: ", "no schema to write Parquet with", "schema: ",
	} {
		if !strings.Contains(res.Poison[i].Reason, want) {
			t.Errorf("poison %d: %q, want %q", i, res.Poison[i].Reason, want)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	p := readPublished(t, root)
	for _, r := range good {
		if n := p.byUUID[uuidOf(decode(t, r.Value))]; n != 1 {
			t.Fatalf("record %s/%d/%d published %d times", r.Topic, r.Partition, r.Offset, n)
		}
	}
	// One file per (topic, hour, partition, schema version).
	for _, f := range []string{
		"eventlogging_Test/year=2024/month=01/day=05/hour=07/part-0-0-49.Test_1.parquet",
		"eventlogging_Test/year=2024/month=01/day=05/hour=09/part-1-100-149.Test_1.parquet",
		"eventlogging_Test/year=2024/month=01/day=05/hour=07/part-2-0-19.Test_2.parquet",
		"button_click/year=2024/month=01/day=05/hour=07/part-0-0-19.analytics_button_click_1.0.0.parquet",
		"eventlogging_EventError/year=2024/month=01/day=05/hour=07/part-0-0-0.EventError_1.parquet",
	} {
		if !slices.Contains(p.files, f) {
			t.Errorf("missing %s in %v", f, p.files)
		}
	}

	// Values read back by parquet-go: nested groups are maps again.
	got := p.rows[testsupport.EventUUID("eventlogging_Test", 1, 120)]
	ev, _ := got["event"].(map[string]any)
	nested, _ := ev["nested"].(map[string]any)
	depth, _ := nested["depth"].(map[string]any)
	if ev["action"] != "click" || ev["count"] != int64(120) || ev["ratio"] != 120.5 || ev["ok"] != true ||
		nested["label"] != "n120" || depth["level"] != int64(120%7) || ev["tags"] != `["a","b"]` || ev["free"] != nil ||
		got["revision"] != int64(1) || got["dt"] != "2024-01-05T09:24:00Z" || got["seqId"] != int64(120) || got["clientIp"] != nil {
		t.Fatalf("row read back: %#v", got)
	}
	pl := p.rows[testsupport.EventUUID("button_click", 0, 7)]
	if meta, _ := pl["meta"].(map[string]any); pl["button"] != "b7" || pl["clicks"] != int64(7) || meta["stream"] != "button_click" || pl["$schema"] != "/analytics/button_click/1.0.0" {
		t.Fatalf("Event Platform row: %#v", pl)
	}
	er := p.rows[testsupport.EventUUID(capsule.TopicEventError, 0, 0)]
	if ee, _ := er["event"].(map[string]any); ee["code"] != "processor" || ee["source"].(map[string]any)["offset"] != int64(42) {
		t.Fatalf("EventError row: %#v", er)
	}
}

func decode(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// Column statistics (min, max, null count) are written for every column
// chunk and page.
func TestParquetStatistics(t *testing.T) {
	root := t.TempDir()
	s := openSink(t, Config{Root: root, Format: Parquet, Schemas: testSchemas(t)})
	if _, err := s.Write(t.Context(), spread([]string{"t"}, 1, 100, 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(root, "t", "*", "*", "*", "*", "*.parquet"))
	if len(files) != 1 {
		t.Fatalf("files %v", files)
	}
	f, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	pf, err := parquet.OpenFile(f, fi.Size())
	if err != nil {
		t.Fatal(err)
	}
	md := pf.Metadata()
	if len(md.RowGroups) != 1 || md.NumRows != 100 {
		t.Fatalf("%d row groups, %d rows", len(md.RowGroups), md.NumRows)
	}
	kv := map[string]string{}
	for _, e := range md.KeyValueMetadata {
		kv[e.Key] = e.Value
	}
	if kv["eventlogging.schema"] != "Test/1" || kv["eventlogging.topic"] != "t" {
		t.Errorf("key/value metadata %v", kv)
	}
	cols := pf.Schema().Columns()
	for i, cc := range md.RowGroups[0].Columns {
		path := strings.Join(cols[i], ".")
		st := cc.MetaData.Statistics
		if cc.MetaData.Codec != format.Snappy {
			t.Errorf("%s: codec %v", path, cc.MetaData.Codec)
		}
		switch path {
		case "event.count":
			if pf.Schema().Columns()[i][1] != "count" || len(st.MinValue) != 8 || len(st.MaxValue) != 8 || st.NullCount != 0 {
				t.Errorf("%s statistics: %+v", path, st)
			}
			lo, hi := parquet.Int64Type.Kind().Value(st.MinValue).Int64(), parquet.Int64Type.Kind().Value(st.MaxValue).Int64()
			if lo != 0 || hi != 99 {
				t.Errorf("%s: min %d max %d, want 0 99", path, lo, hi)
			}
		case "event.free", "clientIp":
			if st.NullCount != 100 {
				t.Errorf("%s: null count %d, want 100", path, st.NullCount)
			}
		case "uuid":
			if len(st.MinValue) != 32 || len(st.MaxValue) != 32 {
				t.Errorf("%s statistics: %+v", path, st)
			}
		}
	}
	if ci, err := pf.RowGroups()[0].ColumnChunks()[1].ColumnIndex(); err != nil || ci.NumPages() == 0 {
		t.Errorf("no page index: %v", err)
	}
}

// A schema registry that fails transiently fails Write without changing
// anything; the retry succeeds.
func TestParquetTransientSchemaError(t *testing.T) {
	root := t.TempDir()
	flaky := &flakySchemas{Schemas: testSchemas(t), fail: true}
	s := openSink(t, Config{Root: root, Format: Parquet, Schemas: flaky})
	input := spread([]string{"t"}, 1, 10, 1)
	if _, err := s.Write(t.Context(), input); err == nil || errors.Is(err, ErrBroken) {
		t.Fatalf("Write with the registry down: %v, want a transient error", err)
	}
	flaky.fail = false
	res, err := s.Write(t.Context(), input)
	if err != nil || res.Written != 10 {
		t.Fatalf("retry: %+v, %v", res, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, root, input)
}

type flakySchemas struct {
	Schemas
	fail bool
}

func (f *flakySchemas) Resolve(ctx context.Context, id schema.ID) (*schema.Schema, error) {
	if f.fail {
		return nil, errors.New("registry unreachable")
	}
	return f.Schemas.Resolve(ctx, id)
}

// The row group is flushed at RowGroupBytes, bounding memory.
func TestParquetRowGroups(t *testing.T) {
	root := t.TempDir()
	s := openSink(t, Config{Root: root, Format: Parquet, Schemas: testSchemas(t), RowGroupBytes: 64 << 10})
	input := spread([]string{"t"}, 1, 3000, 1)
	feedAndClose(t, s, input, 1000)
	files, _ := filepath.Glob(filepath.Join(root, "t", "*", "*", "*", "*", "*.parquet"))
	f, _ := os.Open(files[0])
	defer f.Close()
	fi, _ := f.Stat()
	pf, err := parquet.OpenFile(f, fi.Size())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(pf.RowGroups()); n < 3 {
		t.Fatalf("%d row groups, want several", n)
	}
	checkExactlyOnce(t, root, input)
}
