package process

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/lineformat"
)

// fuzzFormats are the raw line formats FuzzProcess parses with: the
// varnishkafka beacon line (2016, %o), the 2015 one (%h hashes the IP)
// and the server-side line carrying JSON (%j).
var fuzzFormats = []string{
	"%q %{recvFrom}s %{seqId}d %t %o %{userAgent}i",
	"%q %{recvFrom}s %{seqId}d %t %h %{userAgent}i",
	"%{seqId}d EventLogging %j",
}

// FuzzProcess runs arbitrary raw records through the whole processing
// function (parse, decode, resolve, validate, capsule): it never panics
// and every record becomes either the same capsule in its topics or
// exactly one EventError, both JSON objects that encoding/json reads, with
// a uuid; the same record processed twice gives the same outputs. Seeds:
// the reference parser vectors, and testdata/fuzz/FuzzProcess.
func FuzzProcess(f *testing.F) {
	var ref parserRef
	loadReference(f, "parser.json", &ref)
	for _, c := range ref.Positive {
		for i, fm := range fuzzFormats {
			if fm == c.Format {
				f.Add(uint8(i), false, []byte(c.Raw))
			}
		}
	}
	for _, c := range ref.Negative {
		f.Add(uint8(1), false, []byte(c.Raw))
	}
	f.Add(uint8(2), false, []byte(`99 EventLogging {"schema":"Generic","revision":13,"event":{"articleId":1,"articleTitle":"x"},"wiki":"w","webHost":"h"}`))
	f.Add(uint8(2), true, []byte(`1 EventLogging {"schema":"Generic","revision":13,"event":{"articleId":1,"articleTitle":"x"},"wiki":"w","webHost":"h","recvFrom":"spoofed","seqId":1,"timestamp":5,"clientIp":"1.2.3.4"}`))
	f.Add(uint8(2), false, []byte(`2 EventLogging {"$schema":"/analytics/edit_funnel/1.0.0","meta":{"stream":"analytics.edit_funnel"},"action":"init","session_id":"s"}`))
	f.Add(uint8(2), false, []byte(`3 EventLogging {"schema":"x'; DROP TABLE y; --","revision":1,"event":{}}`))
	f.Add(uint8(2), false, []byte(`4 EventLogging {"schema":"Generic","schema":"Generic","revision":13,"event":{"articleId":123456789012345678901234567890,"articleTitle":"x"}}`))
	f.Add(uint8(2), false, []byte(`5 EventLogging {"schema":"Generic","revision":1e400,"event":{}}`))
	f.Add(uint8(0), false, []byte("?%7B%22schema%22%3A%22Generic%22%7D%00; h 1 2015-09-21T21:55:27 - \"UA\xff\""))

	streams, err := ParseStreams(mustRead(f, "../../examples/streams.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	formats := make([]*lineformat.Format, len(fuzzFormats))
	for i, s := range fuzzFormats {
		formats[i] = mustFormat(f, s)
	}
	procs := map[bool]*Processor{
		false: newTestProcessor(f, Config{Streams: streams}, ref.KeyHex),
		true:  newTestProcessor(f, Config{Streams: streams, TrustClientCapsuleFields: true}, ref.KeyHex),
	}
	f.Fuzz(func(t *testing.T, format uint8, trust bool, raw []byte) {
		p, fm := procs[trust], formats[int(format)%len(formats)]
		outs := p.Process(context.Background(), fm, raw, &capsule.Source{Topic: "raw", Partition: 1, Offset: 2}, nil)
		if len(outs) == 0 {
			t.Fatalf("%q: no output", raw)
		}
		var first map[string]any
		for i, o := range outs {
			if !capsule.ValidTopicName(o.Topic) {
				t.Fatalf("%q: output to topic %q", raw, o.Topic)
			}
			if !utf8.Valid(o.Value) {
				t.Fatalf("%q: output is not UTF-8: %q", raw, o.Value)
			}
			var v map[string]any
			if err := json.Unmarshal(o.Value, &v); err != nil {
				t.Fatalf("%q: output %q is not a JSON object: %v", raw, o.Value, err)
			}
			if i == 0 {
				first = v
			} else if !bytes.Equal(o.Value, outs[0].Value) {
				t.Fatalf("%q: outputs differ:\n%s\n%s", raw, outs[0].Value, o.Value)
			}
		}
		if uuid, _ := first["uuid"].(string); len(uuid) != 32 {
			t.Fatalf("%q: uuid %v in %s", raw, first["uuid"], outs[0].Value)
		}
		if outs[0].Topic == p.ErrorTopic() {
			ev, _ := first["event"].(map[string]any)
			code, _ := ev["code"].(string)
			if len(outs) != 1 || first["schema"] != capsule.EventErrorSchema || ev["message"] == "" ||
				(code != capsule.CodeProcessor && code != capsule.CodeValidation) {
				t.Fatalf("%q: malformed EventError (%d outputs): %s", raw, len(outs), outs[0].Value)
			}
		}
		again := p.Process(context.Background(), fm, raw, &capsule.Source{Topic: "raw", Partition: 1, Offset: 2}, nil)
		if len(again) != len(outs) || !reflect.DeepEqual(sameOrder(t, again[0].Value), sameOrder(t, outs[0].Value)) {
			t.Fatalf("%q: processed twice, different outputs:\n%s\n%s", raw, outs[0].Value, again[0].Value)
		}
	})
}

// sameOrder decodes an output for comparison: processing the same record
// twice must give the same bytes, violations in the same order
// (testdata/fuzz/FuzzProcess/capsule-violations-in-map-order).
func sameOrder(t *testing.T, value []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(value, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func mustRead(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzParseStreams reads arbitrary stream configuration files: an error
// or a configuration whose streams are valid and whose list (served at
// GET /v1/streams) encodes as JSON; looking a name up never panics and
// finds a stream with a valid topic.
func FuzzParseStreams(f *testing.F) {
	f.Add(mustRead(f, "../../examples/streams.yaml"), "analytics.test.abc")
	f.Add([]byte("streams:\n  - name: /(/\n"), "x")
	f.Add([]byte("streams:\n  - name: a\n  - name: a\n"), "a")
	f.Add([]byte("streams:\n  - {name: /.*/, topic: t, sample_rate: 1e400}\n"), "../x")
	f.Add([]byte("streams: [{name: x, format: avro, avro_subject: \"x'; DROP TABLE y; --\"}]\n"), "x")
	f.Add([]byte("streams:\n  - name: s\n    sample_rate: -0.0\n"), "s")
	f.Fuzz(func(t *testing.T, data []byte, name string) {
		st, err := ParseStreams(data)
		if err != nil {
			if st != nil {
				t.Fatal("streams and an error")
			}
			return
		}
		for _, s := range st.List() {
			if math.IsNaN(s.SampleRate) || s.SampleRate < 0 || s.SampleRate > 1 || (s.Topic != "" && !capsule.ValidTopicName(s.Topic)) {
				t.Fatalf("invalid stream accepted: %+v", s)
			}
		}
		if _, err := json.Marshal(st.List()); err != nil {
			t.Fatalf("stream list does not encode: %v", err)
		}
		if s, ok := st.Lookup(name); ok && (!capsule.ValidTopicName(s.Topic) || s.Name != name) {
			t.Fatalf("Lookup(%q) = %+v", name, s)
		}
	})
}
