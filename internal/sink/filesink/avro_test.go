package filesink

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/avrowire"
	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/kafka"

	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// buttonClickAvro is the Avro schema of /analytics/button_click/1.0.0
// (testsupport.ButtonClickSchemaDoc); _schema carries $schema.
const buttonClickAvro = `{"type":"record","name":"ButtonClick","namespace":"analytics","fields":[
 {"name":"_schema","type":"string"},
 {"name":"dt","type":["null","string"],"default":null},
 {"name":"button","type":["null","string"],"default":null},
 {"name":"clicks","type":["null","long"],"default":null},
 {"name":"meta","type":{"type":"record","name":"Meta","fields":[
   {"name":"id","type":"string"},{"name":"dt","type":"string"},{"name":"stream","type":"string"}]}}]}`

// newAvroCodec registers the Avro schemas by subject in an in-process
// registry and returns a codec on it.
func newAvroCodec(t *testing.T, subjects map[string]string) *avrowire.Codec {
	t.Helper()
	c, err := avrowire.New(testsupport.AvroRegistry(t, subjects), 0)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// clickEvents are button_click events, 7 minutes apart, as the processor
// holds them (capsule.Decode), with the JSON and the Avro record of each.
func clickEvents(t *testing.T, codec *avrowire.Codec, n int) (jsonRecs, avroRecs []kafka.Record) {
	t.Helper()
	for i := range n {
		dt := base.Add(time.Duration(i) * 7 * time.Minute)
		fields := fmt.Sprintf(`,"button":"b%d","clicks":%d`, i, i*1000000007)
		if i%3 == 0 {
			fields = "" // optional fields missing
		}
		v, err := capsule.Decode(fmt.Appendf(nil, `{"$schema":"/analytics/button_click/1.0.0","dt":"2020-01-01T00:00:00.5Z"%s,"meta":{"id":%q,"dt":%q,"stream":"button_click"}}`,
			fields, testsupport.EventUUID("button_click", 0, int64(i)), dt.Format(time.RFC3339)))
		if err != nil {
			t.Fatal(err)
		}
		ev := v.(map[string]any)
		av, err := codec.Encode(t.Context(), "button_click-value", ev)
		if err != nil {
			t.Fatal(err)
		}
		// The Kafka timestamp is not the receive time: meta.dt must be
		// read back from the Avro record.
		ts := dt.Add(-48 * time.Hour)
		jsonRecs = append(jsonRecs, kafka.Record{Topic: "button_click", Offset: int64(i), Timestamp: ts, Value: capsule.AppendValue(nil, ev)})
		avroRecs = append(avroRecs, kafka.Record{Topic: "button_click", Offset: int64(i), Timestamp: ts, Value: av})
	}
	return jsonRecs, avroRecs
}

// TestAvroSameFilesAsJSON: the same Event Platform events from a JSON
// stream and from an Avro stream give the same files — same paths, same
// Parquet rows, byte-identical JSON lines.
func TestAvroSameFilesAsJSON(t *testing.T) {
	codec := newAvroCodec(t, map[string]string{"button_click-value": buttonClickAvro})
	jsonRecs, avroRecs := clickEvents(t, codec, 30)
	for _, format := range []Format{Parquet, JSONLines} {
		t.Run(string(format), func(t *testing.T) {
			write := func(recs []kafka.Record) (string, published) {
				root := t.TempDir()
				s := openSink(t, Config{Root: root, Format: format, Schemas: testSchemas(t), Avro: codec})
				res, err := s.Write(t.Context(), recs)
				if err != nil {
					t.Fatal(err)
				}
				if res.Written != len(recs) || len(res.Poison) != 0 {
					t.Fatalf("written %d, poison %+v", res.Written, res.Poison)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				return root, readPublished(t, root)
			}
			jsonRoot, fromJSON := write(jsonRecs)
			avroRoot, fromAvro := write(avroRecs)
			if !slices.Equal(fromJSON.files, fromAvro.files) || len(fromAvro.files) != 4 {
				t.Fatalf("files:\nJSON %v\nAvro %v", fromJSON.files, fromAvro.files)
			}
			if !reflect.DeepEqual(fromJSON.rows, fromAvro.rows) || len(fromAvro.rows) != len(avroRecs) {
				t.Errorf("rows differ:\nJSON %v\nAvro %v", fromJSON.rows, fromAvro.rows)
			}
			row := fromAvro.rows[testsupport.EventUUID("button_click", 0, 1)]
			meta, _ := row["meta"].(map[string]any)
			if format == Parquet && (row["clicks"] != int64(1000000007) || row["button"] != "b1" || row["$schema"] != "/analytics/button_click/1.0.0" ||
				meta["dt"] != base.Add(7*time.Minute).Format(time.RFC3339)) {
				t.Errorf("Avro row read back: %#v", row)
			}
			if format == JSONLines {
				for _, f := range fromAvro.files {
					if a, j := gunzip(t, filepath.Join(avroRoot, f)), gunzip(t, filepath.Join(jsonRoot, f)); a != j {
						t.Errorf("%s differs:\nJSON %s\nAvro %s", f, j, a)
					}
				}
			}
		})
	}
}

func gunzip(t *testing.T, path string) string { return testsupport.Gunzip(t, path) }

// TestAvroPoison: Avro records that can never be decoded are poison with
// the reason, and the rest of the batch is written; a registry that
// cannot be asked fails the batch (retried), it poisons nothing.
func TestAvroPoison(t *testing.T) {
	noSchemaField := strings.Replace(buttonClickAvro, `{"name":"_schema","type":"string"},`, "", 1)
	codec := newAvroCodec(t, map[string]string{"button_click-value": buttonClickAvro, "plain-value": noSchemaField})
	_, avroRecs := clickEvents(t, codec, 2)
	good := avroRecs[0].Value
	plain, err := codec.Encode(t.Context(), "plain-value", map[string]any{"meta": map[string]any{"id": "x", "dt": "2024-01-05T07:00:00Z", "stream": "s"}})
	if err != nil {
		t.Fatal(err)
	}
	rec := func(off int64, v []byte) kafka.Record {
		return kafka.Record{Topic: "button_click", Offset: off, Timestamp: base, Value: v}
	}
	batch := []kafka.Record{
		rec(0, good),
		rec(1, append(binary.BigEndian.AppendUint32([]byte{0}, 99), good[5:]...)),
		rec(2, good[:len(good)-3]),
		rec(3, plain),
		rec(4, []byte{0, 0}),
		rec(5, avroRecs[1].Value),
	}
	s := openSink(t, Config{Root: t.TempDir(), Format: Parquet, Schemas: testSchemas(t), Avro: codec})
	res, err := s.Write(t.Context(), batch)
	if err != nil {
		t.Fatal(err)
	}
	if res.Written != 2 || len(res.Poison) != 4 {
		t.Fatalf("written %d, poison %+v; want 2 and 4", res.Written, res.Poison)
	}
	for i, want := range []string{"schema id 99", "avro decode with schema id", "no _schema field", "not the wire format"} {
		if r := res.Poison[i].Reason; !strings.HasPrefix(r, "Avro wire format: ") || !strings.Contains(r, want) {
			t.Errorf("poison %d: %q, want it to mention %q", res.Poison[i].Record.Offset, r, want)
		}
	}

	// No decoder: poison, saying why.
	s2 := openSink(t, Config{Root: t.TempDir(), Format: JSONLines})
	res, err = s2.Write(t.Context(), batch[:1])
	if err != nil || len(res.Poison) != 1 || !strings.Contains(res.Poison[0].Reason, "no schema registry") {
		t.Errorf("no decoder: %+v, %v", res, err)
	}

	// The registry is down: a transient error, nothing poisoned.
	down, err := avrowire.New(testsupport.UnreachableURL(), 0)
	if err != nil {
		t.Fatal(err)
	}
	s3 := openSink(t, Config{Root: t.TempDir(), Format: JSONLines, Avro: down})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if res, err := s3.Write(ctx, batch[:1]); err == nil || len(res.Poison) != 0 {
		t.Errorf("registry down: %+v, %v; want a transient error", res, err)
	}
}
