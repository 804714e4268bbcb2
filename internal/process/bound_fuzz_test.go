package process

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/eventlogging/eventlogging/internal/capsule"
)

// boundTemplates are events with one hostile part, %s: filled with the
// fuzzer's text repeated up to hundreds of kilobytes.
var boundTemplates = []string{
	`{"schema":"SearchQuery","revision":5,"event":{"query":"q","results":1,"source":"fulltext","dt":"%s"}}`,
	`{"schema":"SearchQuery","revision":5,"event":{"query":"%s","results":1,"source":"fulltext"}}`,
	`{"schema":"%s","revision":5,"event":{}}`,
	`{"schema":"SearchQuery","revision":5,"event":{"query":"q","results":1,"source":"fulltext","%s":1}}`,
	`{"schema":"SearchQuery","revision":5,"userAgent":"%s","event":{"query":"q","results":1,"source":"fulltext"}}`,
	`{"$schema":"/analytics/edit_funnel/1.0.0","meta":{"stream":"analytics.edit_funnel"},"action":"%s","editor":"wikitext","session_token":"abcdefghijkl"}`,
	`{"$schema":"/analytics/edit_funnel/1.0.0","meta":{"stream":"analytics.test.%s"},"action":"init","editor":"wikitext","session_token":"abcdefghijkl"}`,
}

// FuzzProcessBounded drives the processing function, on both its paths
// (the raw line and the synchronous POST's event), with events made
// hostile by size: a long value quoted by its violation, a long property
// name, thousands of undeclared properties, a long schema name or user
// agent, text that JSON escapes six-fold. Every output fits the record
// limit (here 100,000 bytes, to make the limits bite), and an EventError
// or a POST answer lists at most capsule.MaxViolations violations, each
// and the message within their bounds.
//
//	go test -run '^$' -fuzz '^FuzzProcessBounded$' -fuzztime 60s ./internal/process
func FuzzProcessBounded(f *testing.F) {
	f.Add(uint8(0), "x", uint16(5220), uint16(0))
	f.Add(uint8(1), "<&>", uint16(30000), uint16(0))
	f.Add(uint8(1), "\u2028", uint16(21000), uint16(0)) // valid; escaped, its capsule twice as large
	f.Add(uint8(2), "S", uint16(700), uint16(0))
	f.Add(uint8(3), "k", uint16(1000), uint16(3000))
	f.Add(uint8(4), "\u2028\x01", uint16(4000), uint16(0))
	f.Add(uint8(5), "é", uint16(2000), uint16(10))
	f.Add(uint8(6), "a", uint16(300), uint16(0))
	streams, err := ParseStreams(mustRead(f, "../../examples/streams.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	const limit = 100_000
	p := newTestProcessor(f, Config{Streams: streams, MaxRecordBytes: limit}, "01")
	format := mustFormat(f, "%j")
	f.Fuzz(func(t *testing.T, tmpl uint8, unit string, reps, keys uint16) {
		if unit == "" || !utf8.ValidString(unit) {
			return
		}
		part := strings.Repeat(unit, int(reps)%(500_000/len(unit)+1))
		var enc bytes.Buffer
		je := json.NewEncoder(&enc)
		je.SetEscapeHTML(false) // '<' stays one byte in the event, six in an output
		_ = je.Encode(part)
		part = strings.TrimSuffix(enc.String(), "\n")
		part = part[1 : len(part)-1]
		ev := strings.Replace(boundTemplates[int(tmpl)%len(boundTemplates)], "%s", part, 1)
		if keys > 0 {
			var b strings.Builder
			for i := range int(keys) {
				b.WriteString(`,"u`)
				b.WriteString(strings.Repeat("k", i%7))
				b.WriteString(string(rune('a' + i%26)))
				b.WriteString(`":1`)
			}
			ev = strings.Replace(ev, `"event":{`, `"event":{"z":0`+b.String()+`,`, 1)
		}
		outs, res := p.ProcessEvent(context.Background(), []byte(ev), testMeta, nil)
		outs = p.Process(context.Background(), format, []byte(ev), &capsule.Source{Topic: "raw"}, outs)
		for _, o := range outs {
			if len(o.Value) > limit {
				t.Fatalf("template %d, %d bytes of event: an output of %d bytes to %s, over the %d-byte limit", tmpl, len(ev), len(o.Value), o.Topic, limit)
			}
			if o.Topic != p.ErrorTopic() {
				continue
			}
			var ec capsule.ErrorCapsule
			if err := json.Unmarshal(o.Value, &ec); err != nil {
				t.Fatalf("EventError is not JSON: %v", err)
			}
			checkBounded(t, ec.Event.Message, ec.Event.Errors)
		}
		if !res.Valid() {
			checkBounded(t, res.Message, res.Errors)
		}
	})
}

func checkBounded(t *testing.T, message string, viol []capsule.Violation) {
	t.Helper()
	runes := utf8.RuneCountInString
	if runes(message) > capsule.MaxMessageBytes || len(viol) > capsule.MaxViolations {
		t.Fatalf("message of %d runes, %d violations: over the bounds", runes(message), len(viol))
	}
	for _, v := range viol {
		if runes(v.Pointer) > capsule.MaxPointerBytes || runes(v.Reason) > capsule.MaxReasonBytes {
			t.Fatalf("violation of %d and %d runes: over the bounds", runes(v.Pointer), runes(v.Reason))
		}
	}
}
