package avrowire

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// event20 is a 20-field Avro record and a matching decoded JSON event.
func event20() (schema string, event map[string]any) {
	var fields []string
	event = map[string]any{}
	for i := range 20 {
		switch i % 4 {
		case 0:
			fields = append(fields, fmt.Sprintf(`{"name":"s%d","type":"string"}`, i))
			event[fmt.Sprintf("s%d", i)] = fmt.Sprintf("value %d ☆", i)
		case 1:
			fields = append(fields, fmt.Sprintf(`{"name":"l%d","type":"long"}`, i))
			event[fmt.Sprintf("l%d", i)] = json.Number(fmt.Sprint(1 << (i + 20)))
		case 2:
			fields = append(fields, fmt.Sprintf(`{"name":"d%d","type":"double"}`, i))
			event[fmt.Sprintf("d%d", i)] = json.Number("3.5")
		case 3:
			fields = append(fields, fmt.Sprintf(`{"name":"b%d","type":"boolean"}`, i))
			event[fmt.Sprintf("b%d", i)] = true
		}
	}
	return `{"type":"record","name":"Event20","fields":[` + strings.Join(fields, ",") + `]}`, event
}

func newCodec(t testing.TB, subject, schema string) (*Codec, int) {
	t.Helper()
	url, cl := testsupport.FakeRegistry(t)
	id := testsupport.RegisterAvro(t, cl, subject, schema)
	c, err := New(url, 0)
	if err != nil {
		t.Fatal(err)
	}
	return c, id
}

func TestRoundTrip(t *testing.T) {
	schema, ev := event20()
	c, id := newCodec(t, "events-value", schema)
	b, err := c.Encode(t.Context(), "events-value", ev)
	if err != nil {
		t.Fatal(err)
	}
	if !IsWire(b) || int(b[4]) != id || b[1] != 0 {
		t.Fatalf("header % x, want magic 0 and id %d", b[:5], id)
	}
	js, err := c.DecodeJSON(t.Context(), b)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if back["s0"] != "value 0 ☆" || back["l1"] != float64(1<<21) || back["b3"] != true || len(back) != 20 {
		t.Errorf("decoded %v", back)
	}
}

func TestErrors(t *testing.T) {
	schema, ev := event20()
	c, _ := newCodec(t, "events-value", schema)
	if _, err := c.Encode(t.Context(), "nope-value", ev); err == nil {
		t.Error("unknown subject encoded")
	}
	delete(ev, "s0")
	if _, err := c.Encode(t.Context(), "events-value", ev); err == nil || !strings.Contains(err.Error(), "schema id") {
		t.Errorf("missing required field: %v", err)
	}
	if _, err := c.DecodeJSON(t.Context(), []byte("{}")); err == nil {
		t.Error("non-wire record decoded")
	}
	if _, err := c.DecodeJSON(t.Context(), []byte{0, 0, 0, 0, 99, 1}); err == nil {
		t.Error("unknown id decoded")
	}
}

func BenchmarkEncode20(b *testing.B) {
	schema, ev := event20()
	c, _ := newCodec(b, "events-value", schema)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Encode(ctx, "events-value", ev); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeEvent20 is what the processor pays: Encode and the walk
// that finds the members the schema lacks (none here).
func BenchmarkEncodeEvent20(b *testing.B) {
	schema, ev := event20()
	c, _ := newCodec(b, "events-value", schema)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := c.EncodeEvent(ctx, "events-value", ev); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode20(b *testing.B) {
	schema, ev := event20()
	c, _ := newCodec(b, "events-value", schema)
	ctx := context.Background()
	rec, err := c.Encode(ctx, "events-value", ev)
	if err != nil {
		b.Fatal(err)
	}
	p, _ := c.schemaByID(ctx, int(rec[4]))
	b.ReportAllocs()
	for b.Loop() {
		var v any
		if _, err := p.schema.Decode(rec[5:], &v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeEvent20 is what a sink pays per Avro record: the decode
// and the mapping back to the JSON object.
func BenchmarkDecodeEvent20(b *testing.B) {
	schema, ev := event20()
	// An Event Platform event: s0 is its $schema.
	schema = strings.Replace(schema, `"name":"s0"`, `"name":"_schema"`, 1)
	ev["$schema"] = ev["s0"]
	delete(ev, "s0")
	c, _ := newCodec(b, "events-value", schema)
	ctx := context.Background()
	rec, err := c.Encode(ctx, "events-value", ev)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.DecodeEvent(ctx, rec); err != nil {
			b.Fatal(err)
		}
	}
}
