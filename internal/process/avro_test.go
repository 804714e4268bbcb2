package process

import (
	"strings"
	"testing"

	"github.com/eventlogging/eventlogging/internal/avrowire"
	"github.com/eventlogging/eventlogging/internal/testsupport"
)

const editFunnelAvro = testsupport.EditFunnelAvroClient

func TestProcessEventAvroStream(t *testing.T) {
	url, cl := testsupport.FakeRegistry(t)
	testsupport.RegisterAvro(t, cl, "edits-value", editFunnelAvro)
	codec, err := avrowire.New(url, 0)
	if err != nil {
		t.Fatal(err)
	}
	streams, err := NewStreams([]Stream{{Name: "analytics.edit_funnel", SchemaTitle: "analytics/edit_funnel", Topic: "edits", Format: "avro"}})
	if err != nil {
		t.Fatal(err)
	}
	p := newTestProcessor(t, Config{Streams: streams, Avro: codec}, "01")
	ev := `{"$schema":"/analytics/edit_funnel/1.0.0","meta":{"stream":"analytics.edit_funnel"},"action":"init","editor":"wikitext","session_token":"abcdefghijkl"}`
	outs, res := p.ProcessEvent(t.Context(), []byte(ev), testMeta, nil)
	if !res.Valid() || len(outs) != 1 || outs[0].Topic != "edits" {
		t.Fatalf("result %+v", res)
	}
	if !avrowire.IsWire(outs[0].Value) {
		t.Fatalf("not wire format: % x", outs[0].Value[:8])
	}
	js, err := codec.DecodeJSON(t.Context(), outs[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"session_token":"abcdefghijkl"`) || !strings.Contains(string(js), res.UUID) {
		t.Errorf("decoded %s", js)
	}

	// Without an encoder the event is an EventError, not dropped.
	p = newTestProcessor(t, Config{Streams: streams}, "01")
	if _, res := p.ProcessEvent(t.Context(), []byte(ev), testMeta, nil); res.Valid() || !strings.Contains(res.Message, "Avro") {
		t.Errorf("no encoder: %+v", res)
	}
}
