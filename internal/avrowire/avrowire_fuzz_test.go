package avrowire

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/eventlogging/eventlogging/internal/capsule"

	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// fuzzSchemas are registered in this order, so their ids are 1 to 5: a
// flat record, a record using every complex type, a bare primitive, a JSON
// Schema (which DecodeJSON must refuse) and an Event Platform event with
// every type (the only one DecodeEvent accepts, as it has _schema).
var fuzzSchemas = []sr.Schema{
	{Type: sr.TypeAvro, Schema: func() string { s, _ := event20(); return s }()},
	{Type: sr.TypeAvro, Schema: `{"type":"record","name":"Nested","fields":[
		{"name":"tags","type":{"type":"array","items":"string"}},
		{"name":"counts","type":{"type":"map","values":["null","long","double"]}},
		{"name":"kind","type":{"type":"enum","name":"Kind","symbols":["A","B","C"]}},
		{"name":"hash","type":{"type":"fixed","name":"Hash","size":4}},
		{"name":"blob","type":"bytes"},
		{"name":"inner","type":{"type":"record","name":"Inner","fields":[{"name":"f","type":"float"},{"name":"ok","type":"boolean"}]}},
		{"name":"opt","type":["null","string"],"default":null},
		{"name":"list","type":{"type":"array","items":{"type":"array","items":"null"}}},
		{"name":"when","type":{"type":"long","logicalType":"timestamp-millis"}},
		{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}}
	]}`},
	{Type: sr.TypeAvro, Schema: `"string"`},
	{Type: sr.TypeJSON, Schema: `{"type":"object"}`},
	{Type: sr.TypeAvro, Schema: platformAvro},
}

// newFuzzCodec is a Codec on a fake registry holding fuzzSchemas.
func newFuzzCodec(t testing.TB) *Codec {
	t.Helper()
	url, cl := testsupport.FakeRegistry(t)
	for i, s := range fuzzSchemas {
		ss, err := cl.CreateSchema(context.Background(), "fuzz-"+string(rune('a'+i)), s)
		if err != nil {
			t.Fatal(err)
		}
		if ss.ID != i+1 {
			t.Fatalf("schema %d registered with id %d", i, ss.ID)
		}
	}
	c, err := New(url, 0)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fuzzSeeds are wire-format records for the decoding fuzz targets.
func fuzzSeeds(f *testing.F, c *Codec) {
	_, ev := event20()
	valid, err := c.Encode(context.Background(), "fuzz-a", ev)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add(valid[:len(valid)/2])
	v, err := capsule.Decode([]byte(platformEvent))
	if err != nil {
		f.Fatal(err)
	}
	platform, err := c.Encode(context.Background(), "fuzz-e", v.(map[string]any))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(platform)
	wire := func(id uint32, payload ...byte) []byte {
		b := binary.BigEndian.AppendUint32([]byte{Magic}, id)
		return append(b, payload...)
	}
	f.Add(wire(2,
		2, 2, 'x', 0, // tags: one string "x", end
		2, 2, 'k', 2, 4, 0, // counts: {"k": long 2}
		2,          // kind: B
		1, 2, 3, 4, // hash
		0,                // blob: empty
		0, 0, 128, 63, 1, // inner: f=1.0, ok=true
		2, 2, 'o', // opt: "o"
		2, 2, 0, 0, // list: [[null]]
		4,              // when: 2 ms
		4, 0x02, 0x30)) // amount: 5.60
	f.Add(wire(3, 6, 'a', 'b', 'c'))
	f.Add(wire(4, '{', '}'))
	f.Add(wire(99))
	f.Add(wire(2, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)) // array block count near 2^63
	f.Add(wire(2, 0, 0, 0xfe, 0xff, 0xff, 0xff, 0x0f))                         // map block count
	f.Add(wire(3, 0xff, 0xff, 0xff, 0xff, 0x0f))                               // string length 2^31
	f.Add([]byte{1, 0, 0, 0, 1})
	f.Add([]byte{})
}

// FuzzDecodeEvent decodes arbitrary bytes as a wire-format record to the
// event object the sinks store: an error wrapping ErrUndecodable (the
// registry is in-process and up, so no other error), or an object that
// capsule.AppendValue writes as JSON capsule.Decode reads back unchanged
// (no float, time or byte value left over). Never a panic.
func FuzzDecodeEvent(f *testing.F) {
	c := newFuzzCodec(f)
	fuzzSeeds(f, c)
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := c.DecodeEvent(t.Context(), b)
		if err != nil {
			if !errors.Is(err, ErrUndecodable) || ev != nil {
				t.Fatalf("DecodeEvent(%x) = %v, %v; want nil and ErrUndecodable", b, ev, err)
			}
			return
		}
		if id := binary.BigEndian.Uint32(b[1:5]); id != 5 {
			t.Fatalf("DecodeEvent(%x) decoded with schema id %d: %v", b, id, ev)
		}
		js := capsule.AppendValue(nil, ev)
		back, err := capsule.Decode(js)
		if err != nil {
			t.Fatalf("DecodeEvent(%x) = %v, written as %s: not JSON: %v", b, ev, js, err)
		}
		if again := capsule.AppendValue(nil, back); !bytes.Equal(again, js) {
			t.Fatalf("DecodeEvent(%x): %s reads back as %s", b, js, again)
		}
	})
}

// FuzzDecodeJSON decodes arbitrary bytes as a Confluent wire-format record
// (magic byte, schema id, Avro binary): an error or JSON, never a panic
// and never an unbounded allocation, whatever the id or the payload claim
// (block counts, string lengths, union branches). Records shorter than the
// 5-byte header, with another magic byte, an unknown id or a non-Avro
// schema are errors.
func FuzzDecodeJSON(f *testing.F) {
	c := newFuzzCodec(f)
	fuzzSeeds(f, c)
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := c.DecodeJSON(t.Context(), b)
		if err != nil {
			if out != nil {
				t.Fatalf("DecodeJSON(%x): output %q with error %v", b, out, err)
			}
			return
		}
		if !IsWire(b) {
			t.Fatalf("DecodeJSON(%x) decoded a record that is not in the wire format: %s", b, out)
		}
		if id := binary.BigEndian.Uint32(b[1:5]); id < 1 || id > 5 || id == 4 {
			t.Fatalf("DecodeJSON(%x) decoded with schema id %d: %s", b, id, out)
		}
		if !json.Valid(out) {
			t.Fatalf("DecodeJSON(%x) = %q, not JSON", b, out)
		}
	})
}
