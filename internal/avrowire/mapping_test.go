package avrowire

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// platformAvro is an Event Platform event schema using every kind of
// Avro type the JSON → Avro mapping produces.
const platformAvro = `{"type":"record","name":"Everything","namespace":"analytics","fields":[
 {"name":"_schema","type":"string"},` + testsupport.AvroMetaHTTP + `
 {"name":"count","type":"long"},
 {"name":"small","type":"int"},
 {"name":"big","type":["null","long"],"default":null},
 {"name":"ratio","type":"double"},
 {"name":"whole_double","type":"double"},
 {"name":"tiny","type":"double"},
 {"name":"f32","type":"float"},
 {"name":"num","type":["null","long","double"],"default":null},
 {"name":"flag","type":"boolean"},
 {"name":"kind","type":{"type":"enum","name":"Kind","symbols":["a","b"]}},
 {"name":"blob","type":"bytes"},
 {"name":"code","type":{"type":"fixed","name":"Code","size":3}},
 {"name":"token","type":{"type":"fixed","name":"Uuid","size":16,"logicalType":"uuid"}},
 {"name":"client_dt","type":["null",{"type":"long","logicalType":"timestamp-millis"}],"default":null},
 {"name":"whole_ts","type":{"type":"long","logicalType":"timestamp-micros"}},
 {"name":"day","type":{"type":"int","logicalType":"date"}},
 {"name":"price","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},
 {"name":"tags","type":{"type":"array","items":"string"}},
 {"name":"items","type":{"type":"array","items":{"type":"record","name":"Item","fields":[
   {"name":"name","type":"string"},{"name":"qty","type":["null","long"],"default":null}]}}},
 {"name":"counts","type":{"type":"map","values":["null","long"]}},
 {"name":"optional","type":["null","string"],"default":null},
 {"name":"list","type":["null",{"type":"record","name":"Node","fields":[{"name":"v","type":"long"},{"name":"next","type":["null","Node"],"default":null}]}],"default":null}
]}`

// platformEvent is an event matching platformAvro, as the processor holds
// it (capsule.Decode: numbers as json.Number).
const platformEvent = `{"$schema":"/analytics/everything/1.0.0",
 "meta":{"stream":"analytics.everything","id":"a3d5f9c2-6f0e-4c5e-9d6b-2b1f3c4d5e6f","dt":"2024-05-01T12:00:01Z"},
 "http":{"client_ip":"e3b0c442","request_headers":{"user-agent":"Mozilla/5.0 (☆ 彡)"}},
 "count":9007199254740993,"small":-7,"big":42,"ratio":0.250,"whole_double":3,"tiny":1e-7,"f32":3.1,
 "num":12,"flag":true,"kind":"b","blob":"héllo","code":"abc",
 "token":"0b0c8f1e-4c3a-4b8e-9b1a-2f1c3d4e5f60",
 "client_dt":"2024-05-01T11:59:59.120Z","whole_ts":"2024-05-01T00:00:00Z","day":"2024-05-01","price":12.30,
 "tags":["x","y"],"items":[{"name":"a","qty":1},{"name":"b"}],"counts":{"k":3,"z":null},
 "list":{"v":1,"next":{"v":2}}}`

func decodeJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	v, err := capsule.Decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v.(map[string]any)
}

// TestDecodeEventRoundTrip: what the processor encodes, DecodeEvent gives
// back as the same JSON object — integers as integers, $schema from
// _schema, nested records, maps, arrays, unions, logical types — except
// number spellings and the precision of the logical type.
func TestDecodeEventRoundTrip(t *testing.T) {
	c, _ := newCodec(t, "everything-value", platformAvro)
	ev := decodeJSON(t, platformEvent)
	b, dropped, err := c.EncodeEvent(t.Context(), "everything-value", ev)
	if err != nil {
		t.Fatal(err)
	}
	if dropped != nil {
		t.Errorf("dropped %v, want none", dropped)
	}
	if _, ok := ev[SchemaField]; ok {
		t.Error("Encode modified the event")
	}
	got, err := c.DecodeEvent(t.Context(), b)
	if err != nil {
		t.Fatal(err)
	}
	want := decodeJSON(t, platformEvent)
	// Spelled differently, same value: a double in the shortest notation.
	want["ratio"] = json.Number("0.25")
	if g := string(capsule.AppendValue(nil, got)); g != string(capsule.AppendValue(nil, want)) {
		t.Errorf("round trip:\n got %s\nwant %s", g, capsule.AppendValue(nil, want))
	}
	// Types, not only text: integers stay integers.
	for path, wantV := range map[string]any{"count": "9007199254740993", "small": "-7", "ratio": "0.25", "whole_double": "3", "tiny": "1e-7", "f32": "3.1"} {
		if n, ok := got[path].(interface{ String() string }); !ok || n.String() != wantV {
			t.Errorf("%s = %#v, want json.Number %s", path, got[path], wantV)
		}
	}
	if _, ok := got["optional"]; ok {
		t.Error("a null optional field came back")
	}
	if counts := got["counts"].(map[string]any); !reflect.DeepEqual(counts, map[string]any{"k": want["counts"].(map[string]any)["k"], "z": nil}) {
		t.Errorf("counts = %#v: a map keeps its null values", counts)
	}
}

// TestEncodeDroppedFields: members the schema has no field for are
// reported at any depth, $schema only when there is no _schema field.
func TestEncodeDroppedFields(t *testing.T) {
	c, _ := newCodec(t, "everything-value", platformAvro)
	ev := decodeJSON(t, platformEvent)
	ev["extra"] = "x"
	ev["meta"].(map[string]any)["request_id"] = "r-1"
	ev["http"].(map[string]any)["odd/name~"] = true
	ev["items"].([]any)[1].(map[string]any)["colour"] = "red"
	ev["items"].([]any)[0].(map[string]any)["colour"] = "blue"
	ev["list"].(map[string]any)["next"].(map[string]any)["deep"] = 1
	b, dropped, err := c.EncodeEvent(t.Context(), "everything-value", ev)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/extra", "/http/odd~1name~0", "/items/*/colour", "/list/next/deep", "/meta/request_id"}
	if !slices.Equal(dropped, want) {
		t.Errorf("dropped %v, want %v", dropped, want)
	}
	got, err := c.DecodeEvent(t.Context(), b)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got["extra"]; ok || got["meta"].(map[string]any)["request_id"] != nil {
		t.Errorf("dropped members came back: %v", got)
	}

	// Without a _schema field, $schema itself is dropped (and the record
	// cannot tell its schema).
	c2, _ := newCodec(t, "plain-value", `{"type":"record","name":"P","fields":[{"name":"a","type":"long"},
		{"name":"m","type":{"type":"map","values":{"type":"record","name":"V","fields":[{"name":"x","type":"long"}]}}}]}`)
	_, dropped, err = c2.EncodeEvent(t.Context(), "plain-value", decodeJSON(t, `{"$schema":"/p/1.0.0","a":1,"m":{"k":{"x":1,"y":2}}}`))
	if err != nil || !slices.Equal(dropped, []string{"/$schema", "/m/*/y"}) {
		t.Errorf("dropped %v (%v), want /$schema and /m/*/y", dropped, err)
	}
	// Encode does not report; a clean event reports nil.
	if _, dropped, _ := c2.EncodeEvent(t.Context(), "plain-value", decodeJSON(t, `{"a":1,"m":{}}`)); dropped != nil {
		t.Errorf("clean event: dropped %v", dropped)
	}
}

// TestDecodeEventErrors: undecodable records are ErrUndecodable with the
// reason; a registry that cannot be asked is a transient error.
func TestDecodeEventErrors(t *testing.T) {
	c, id := newCodec(t, "everything-value", platformAvro)
	good, err := c.Encode(t.Context(), "everything-value", decodeJSON(t, platformEvent))
	if err != nil {
		t.Fatal(err)
	}
	wire := func(id uint32, payload ...byte) []byte {
		return append(binary.BigEndian.AppendUint32([]byte{Magic}, id), payload...)
	}
	for name, tc := range map[string]struct {
		rec  []byte
		want string
	}{
		"not wire":       {[]byte(`{"a":1}`), "not the wire format"},
		"short":          {[]byte{0, 0, 0}, "not the wire format"},
		"unknown id":     {wire(99, 2), "schema id 99"},
		"truncated":      {good[:len(good)-3], "avro decode with schema id"},
		"trailing bytes": {append(append([]byte{}, good...), 1, 2), "2 bytes after the record"},
		"garbage":        {wire(uint32(id), 0xff, 0xff, 0xff), "avro decode"},
	} {
		t.Run(name, func(t *testing.T) {
			ev, err := c.DecodeEvent(t.Context(), tc.rec)
			if !errors.Is(err, ErrUndecodable) || !strings.Contains(err.Error(), tc.want) || ev != nil {
				t.Errorf("DecodeEvent = %v, %v; want ErrUndecodable mentioning %q", ev, err, tc.want)
			}
		})
	}

	// A non-record schema and a JSON Schema under the id.
	url, cl := testsupport.FakeRegistry(t)
	c, err = New(url, 0)
	if err != nil {
		t.Fatal(err)
	}
	prim, err := cl.CreateSchema(t.Context(), "prim", sr.Schema{Schema: `"string"`, Type: sr.TypeAvro})
	if err != nil {
		t.Fatal(err)
	}
	js, err := cl.CreateSchema(t.Context(), "js", sr.Schema{Schema: `{"type":"object"}`, Type: sr.TypeJSON})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		rec  []byte
		want string
	}{
		{wire(uint32(prim.ID), 2, 'x'), "not a record"},
		{wire(uint32(js.ID), '{', '}'), "not Avro"},
	} {
		if _, err := c.DecodeEvent(t.Context(), tc.rec); !errors.Is(err, ErrUndecodable) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("DecodeEvent(% x) = %v, want ErrUndecodable mentioning %q", tc.rec[:5], err, tc.want)
		}
	}

	// Transient: the registry is down, or answers 404 without the
	// schema-not-found code (a wrong registry URL), or 500.
	for name, h := range map[string]http.HandlerFunc{
		"404 page": func(w http.ResponseWriter, _ *http.Request) { http.NotFound(w, nil) },
		"500": func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"error_code":50001,"message":"store unavailable"}`))
		},
	} {
		srv := httptest.NewServer(h)
		bad, err := New(srv.URL, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bad.DecodeEvent(t.Context(), good); err == nil || errors.Is(err, ErrUndecodable) {
			t.Errorf("%s: DecodeEvent = %v, want a transient error", name, err)
		}
		srv.Close()
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	down, err := New(srv.URL, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if _, err := down.DecodeEvent(ctx, good); err == nil || errors.Is(err, ErrUndecodable) {
		t.Errorf("registry down: DecodeEvent = %v, want a transient error", err)
	}
}
