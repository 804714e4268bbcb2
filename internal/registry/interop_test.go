package registry

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/sr"
)

// TestFranzGoClient drives the API with a client nobody here wrote:
// franz-go's sr, against the handler mounted under /registry.
func TestFranzGoClient(t *testing.T) {
	in := newInstance(t, nil)
	ctx := t.Context()
	cl, err := sr.NewClient(sr.URLs(in.base))
	if err != nil {
		t.Fatal(err)
	}

	const clickV1 = `{"type":"record","name":"Click","namespace":"org.example","fields":[{"name":"page","type":"string"},{"name":"count","type":"long"}]}`
	avroSS, err := cl.CreateSchema(ctx, "clicks-value", sr.Schema{Schema: clickV1, Type: sr.TypeAvro})
	if err != nil {
		t.Fatalf("CreateSchema Avro: %v", err)
	}
	if avroSS.Subject != "clicks-value" || avroSS.Version != 1 || avroSS.ID != 1 || avroSS.Type != sr.TypeAvro {
		t.Errorf("CreateSchema Avro = %+v", avroSS)
	}
	jsonText := jsonSchema("action", "editor")
	jsonSS, err := cl.CreateSchema(ctx, "analytics/edit_funnel", sr.Schema{Schema: jsonText, Type: sr.TypeJSON})
	if err != nil {
		t.Fatalf("CreateSchema JSON: %v", err)
	}
	if jsonSS.Subject != "analytics/edit_funnel" || jsonSS.ID != 2 || jsonSS.Type != sr.TypeJSON || jsonSS.Schema.Schema != jsonText {
		t.Errorf("CreateSchema JSON = %+v", jsonSS)
	}

	// By id, by version, raw, listings.
	if s, err := cl.SchemaByID(ctx, avroSS.ID); err != nil || s.Schema != clickV1 || s.Type != sr.TypeAvro {
		t.Errorf("SchemaByID(%d) = %+v, %v", avroSS.ID, s, err)
	}
	if s, err := cl.SchemaByID(ctx, jsonSS.ID); err != nil || s.Schema != jsonText || s.Type != sr.TypeJSON {
		t.Errorf("SchemaByID(%d) = %+v, %v", jsonSS.ID, s, err)
	}
	if text, err := cl.SchemaTextByID(ctx, jsonSS.ID); err != nil || text != jsonText {
		t.Errorf("SchemaTextByID = %q, %v", text, err)
	}
	if ss, err := cl.SchemaByVersion(ctx, "analytics/edit_funnel", -1); err != nil || ss.ID != jsonSS.ID || ss.Version != 1 || ss.Schema.Schema != jsonText {
		t.Errorf("SchemaByVersion latest = %+v, %v", ss, err)
	}
	if ss, err := cl.SchemaByVersion(ctx, "clicks-value", 1); err != nil || ss.ID != avroSS.ID || ss.Schema.Schema != clickV1 {
		t.Errorf("SchemaByVersion 1 = %+v, %v", ss, err)
	}
	if subjects, err := cl.Subjects(ctx); err != nil || !slices.Equal(subjects, []string{"analytics/edit_funnel", "clicks-value"}) {
		t.Errorf("Subjects = %v, %v", subjects, err)
	}
	if versions, err := cl.SubjectVersions(ctx, "clicks-value"); err != nil || !slices.Equal(versions, []int{1}) {
		t.Errorf("SubjectVersions = %v, %v", versions, err)
	}
	if types, err := cl.SupportedTypes(ctx); err != nil || !slices.Equal(types, []sr.SchemaType{sr.TypeAvro, sr.TypeJSON}) {
		t.Errorf("SupportedTypes = %v, %v", types, err)
	}
	if ss, err := cl.LookupSchema(ctx, "clicks-value", sr.Schema{Schema: clickV1}); err != nil || ss.ID != avroSS.ID || ss.Version != 1 {
		t.Errorf("LookupSchema = %+v, %v", ss, err)
	}
	if id, err := cl.RegisterSchema(ctx, "clicks-value", sr.Schema{Schema: clickV1}, -1, -1); err != nil || id != avroSS.ID {
		t.Errorf("RegisterSchema again = %d, %v", id, err)
	}

	// Compatibility.
	const clickV2 = `{"type":"record","name":"Click","namespace":"org.example","fields":[{"name":"page","type":"string"},{"name":"count","type":"long"},{"name":"wiki","type":"string","default":"enwiki"}]}`
	const clickBad = `{"type":"record","name":"Click","namespace":"org.example","fields":[{"name":"page","type":"string"}]}`
	if res, err := cl.CheckCompatibility(ctx, "clicks-value", -1, sr.Schema{Schema: clickV2}); err != nil || !res.Is {
		t.Errorf("CheckCompatibility v2 = %+v, %v", res, err)
	}
	if res, err := cl.CheckCompatibility(sr.WithParams(ctx, sr.Verbose), "clicks-value", 1, sr.Schema{Schema: clickBad}); err != nil || res.Is || len(res.Messages) == 0 {
		t.Errorf("CheckCompatibility bad = %+v, %v", res, err)
	}
	_, err = cl.RegisterSchema(ctx, "clicks-value", sr.Schema{Schema: clickBad}, -1, -1)
	if re := (*sr.ResponseError)(nil); !errors.As(err, &re) || re.StatusCode != 409 || re.SchemaError() != sr.ErrIncompatibleSchema {
		t.Errorf("incompatible RegisterSchema: %v", err)
	}
	v2, err := cl.CreateSchema(ctx, "clicks-value", sr.Schema{Schema: clickV2})
	if err != nil || v2.Version != 2 || v2.ID != 3 {
		t.Errorf("CreateSchema v2 = %+v, %v", v2, err)
	}

	// Errors are typed.
	_, err = cl.SchemaByID(ctx, 999)
	if re := (*sr.ResponseError)(nil); !errors.As(err, &re) || re.StatusCode != 404 || re.SchemaError() != sr.ErrSchemaNotFound {
		t.Errorf("SchemaByID(999): %v", err)
	}
	_, err = cl.SchemaByVersion(ctx, "nope", 1)
	if re := (*sr.ResponseError)(nil); !errors.As(err, &re) || re.SchemaError() != sr.ErrSubjectNotFound {
		t.Errorf("SchemaByVersion(nope): %v", err)
	}

	// Config and mode.
	if res := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatFull}, "clicks-value"); res[0].Err != nil || res[0].Level != sr.CompatFull {
		t.Errorf("SetCompatibility = %+v", res)
	}
	if res := cl.Compatibility(ctx, "clicks-value"); res[0].Err != nil || res[0].Level != sr.CompatFull {
		t.Errorf("Compatibility = %+v", res)
	}
	if res := cl.Compatibility(ctx); res[0].Err != nil || res[0].Level != sr.CompatBackward {
		t.Errorf("global Compatibility = %+v", res)
	}
	if res := cl.ResetCompatibility(ctx, "clicks-value"); res[0].Err != nil {
		t.Errorf("ResetCompatibility = %+v", res)
	}
	if res := cl.Mode(ctx); res[0].Err != nil || res[0].Mode != sr.ModeReadWrite {
		t.Errorf("Mode = %+v", res)
	}
	if res := cl.SetMode(ctx, sr.ModeReadOnly, "analytics/edit_funnel"); res[0].Err != nil || res[0].Mode != sr.ModeReadOnly {
		t.Errorf("SetMode = %+v", res)
	}
	if res := cl.ResetMode(ctx, "analytics/edit_funnel"); res[0].Err != nil || res[0].Mode != sr.ModeReadOnly {
		t.Errorf("ResetMode = %+v", res)
	}

	// Serde round trip in the Confluent wire format, with the schema
	// fetched back from the registry for decoding.
	type click struct {
		Page  string `avro:"page"`
		Count int64  `avro:"count"`
	}
	writer := avro.MustParse(clickV1)
	serde := sr.NewSerde()
	serde.Register(avroSS.ID, click{},
		sr.EncodeFn(func(v any) ([]byte, error) { return writer.Encode(v) }),
		sr.DecodeFn(func(b []byte, v any) error { _, err := writer.Decode(b, v); return err }))
	want := click{Page: "Main_Page", Count: 3}
	wire, err := serde.Encode(want)
	if err != nil {
		t.Fatal(err)
	}
	if wire[0] != 0 || binary.BigEndian.Uint32(wire[1:5]) != uint32(avroSS.ID) {
		t.Errorf("wire header % x, want magic 0 and id %d", wire[:5], avroSS.ID)
	}
	var got click
	if err := serde.Decode(wire, &got); err != nil || got != want {
		t.Errorf("Serde.Decode = %+v, %v; want %+v", got, err, want)
	}
	id, payload, err := serde.DecodeID(wire)
	if err != nil {
		t.Fatal(err)
	}
	fetched, err := cl.SchemaByID(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	reader, err := avro.Parse(fetched.Schema)
	if err != nil {
		t.Fatal(err)
	}
	got = click{}
	if _, err := reader.Decode(payload, &got); err != nil || got != want {
		t.Errorf("decode with the fetched schema = %+v, %v", got, err)
	}

	// Deletes.
	if versions, err := cl.DeleteSubject(ctx, "clicks-value", sr.SoftDelete); err != nil || !slices.Equal(versions, []int{1, 2}) {
		t.Errorf("soft DeleteSubject = %v, %v", versions, err)
	}
	if versions, err := cl.DeleteSubject(ctx, "clicks-value", sr.HardDelete); err != nil || !slices.Equal(versions, []int{1, 2}) {
		t.Errorf("hard DeleteSubject = %v, %v", versions, err)
	}
	if err := cl.DeleteSchema(ctx, "analytics/edit_funnel", 1, sr.HardDelete); err == nil {
		t.Error("hard DeleteSchema of a live version: no error")
	}
	if err := cl.DeleteSchema(ctx, "analytics/edit_funnel", 1, sr.SoftDelete); err != nil {
		t.Errorf("soft DeleteSchema: %v", err)
	}
	if subjects, err := cl.Subjects(ctx); err != nil || len(subjects) != 0 {
		t.Errorf("Subjects after deletes = %v, %v", subjects, err)
	}
}
