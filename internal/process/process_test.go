package process

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/testsupport"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/iphash"
	"github.com/eventlogging/eventlogging/internal/lineformat"
	"github.com/eventlogging/eventlogging/internal/schema"
)

type parserRef struct {
	KeyHex   string `json:"ip_hash_key_hex"`
	Positive []struct {
		Name     string         `json:"name"`
		Format   string         `json:"format"`
		Raw      string         `json:"raw"`
		Expected map[string]any `json:"expected"`
	} `json:"positive"`
	Negative []struct {
		Name   string `json:"name"`
		Format string `json:"format"`
		Raw    string `json:"raw"`
		Code   string `json:"processor_error_code"`
	} `json:"negative"`
}

func loadReference(t testing.TB, name string, v any) { testsupport.LoadReference(t, name, v) }

var fixedNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func newTestProcessor(t testing.TB, cfg Config, keyHex string) *Processor {
	t.Helper()
	key, err := hex.DecodeString(keyHex)
	if err != nil {
		t.Fatal(err)
	}
	res := schema.NewResolver(schema.NewDirSource("../../examples/schemas"), schema.ResolverConfig{})
	cfg.ProcessorID = "test-processor"
	cfg.Now = func() time.Time { return fixedNow }
	p, err := New(res, iphash.NewHasher(iphash.SHA1, key), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustFormat(t testing.TB, s string) *lineformat.Format {
	t.Helper()
	f, err := lineformat.Compile(s)
	if err != nil {
		t.Fatalf("compile %q: %v", s, err)
	}
	return f
}

func decodeValue(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, b)
	}
	return m
}

// TestParserReferencePositive runs every positive vector of the original
// through the whole processing function. The capsule-override quirk needs
// trust_client_capsule_fields, as in 2015.
func TestParserReferencePositive(t *testing.T) {
	var ref parserRef
	loadReference(t, "parser.json", &ref)
	if len(ref.Positive) == 0 {
		t.Fatal("no positive cases")
	}
	for _, c := range ref.Positive {
		t.Run(c.Name, func(t *testing.T) {
			trust := c.Name == "capsule_fields_override_line_fields"
			p := newTestProcessor(t, Config{TrustClientCapsuleFields: trust}, ref.KeyHex)
			outs := p.Process(context.Background(), mustFormat(t, c.Format), []byte(c.Raw), nil, nil)
			if len(outs) != 2 {
				t.Fatalf("want capsule in 2 topics, got %d outputs: %s", len(outs), outs[0].Value)
			}
			schemaName := c.Expected["schema"].(string)
			if outs[0].Topic != "eventlogging_"+schemaName || outs[1].Topic != capsule.TopicValidMixed {
				t.Errorf("topics %s, %s", outs[0].Topic, outs[1].Topic)
			}
			got := decodeValue(t, outs[0].Value)
			for k, want := range c.Expected {
				if !reflect.DeepEqual(got[k], want) {
					t.Errorf("%s = %#v, want %#v", k, got[k], want)
				}
			}
			// Fields the original did not have: dt from the receive time, topic.
			ts := int64(got["timestamp"].(float64))
			if wantDT := capsule.FormatDT(time.Unix(ts, 0)); got["dt"] != wantDT {
				t.Errorf("dt = %v, want %s", got["dt"], wantDT)
			}
			if got["topic"] != "eventlogging_"+schemaName {
				t.Errorf("topic = %v", got["topic"])
			}
			// Keyed by the uuid, in every topic: every copy of the event
			// goes to one partition, where the sinks drop the copies.
			for _, o := range outs {
				if string(o.Key) != got["uuid"] || len(o.Key) == 0 {
					t.Errorf("%s: key %q, want the uuid %v", o.Topic, o.Key, got["uuid"])
				}
			}
			for k := range got {
				if _, ok := c.Expected[k]; !ok && k != "dt" && k != "topic" {
					t.Errorf("unexpected field %s = %v", k, got[k])
				}
			}
		})
	}
}

// TestServerFieldsWin: without trust, a client cannot forge server fields.
func TestServerFieldsWin(t *testing.T) {
	var ref parserRef
	loadReference(t, "parser.json", &ref)
	for _, c := range ref.Positive {
		if c.Name != "capsule_fields_override_line_fields" {
			continue
		}
		p := newTestProcessor(t, Config{}, ref.KeyHex)
		outs := p.Process(context.Background(), mustFormat(t, c.Format), []byte(c.Raw), nil, nil)
		got := decodeValue(t, outs[0].Value)
		key, _ := hex.DecodeString(ref.KeyHex)
		want := map[string]any{
			"recvFrom": "cp1.example", "seqId": 77.0, "timestamp": 1443657600.0,
			"clientIp": iphash.NewHasher(iphash.SHA1, key).Hash("10.0.0.1"),
			"uuid":     capsule.UUID("cp1.example", 77, 1443657600),
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s = %v, want %v", k, got[k], w)
			}
		}
		return
	}
	t.Fatal("case capsule_fields_override_line_fields not found")
}

func TestParserReferenceNegative(t *testing.T) {
	var ref parserRef
	loadReference(t, "parser.json", &ref)
	for _, c := range ref.Negative {
		t.Run(c.Name, func(t *testing.T) {
			// keep: the original's behaviour, the raw line exactly as read
			// (hash and drop rewrite its client IP: TestEventErrorClientIP).
			p := newTestProcessor(t, Config{IPPolicy: IPKeep}, ref.KeyHex)
			outs := p.Process(context.Background(), mustFormat(t, c.Format), []byte(c.Raw), nil, nil)
			ee := onlyError(t, outs)
			if ee.Code != c.Code {
				t.Errorf("code %q, want %q (%s)", ee.Code, c.Code, ee.Message)
			}
			if ee.RawEvent != c.Raw {
				t.Errorf("rawEvent not kept exactly")
			}
		})
	}
}

// wantViolationAt fails t unless one of errs is at pointer.
func wantViolationAt(t testing.TB, errs []capsule.Violation, pointer string) {
	t.Helper()
	if !slices.ContainsFunc(errs, func(v capsule.Violation) bool { return v.Pointer == pointer }) {
		t.Errorf("no violation at %s: %+v", pointer, errs)
	}
}

func onlyError(t testing.TB, outs []Output) capsule.EventError {
	t.Helper()
	if len(outs) != 1 || outs[0].Topic != capsule.TopicEventError {
		var topics []string
		for _, o := range outs {
			topics = append(topics, o.Topic)
		}
		t.Fatalf("want one EventError, got topics %v", topics)
	}
	var ec capsule.ErrorCapsule
	if err := json.Unmarshal(outs[0].Value, &ec); err != nil {
		t.Fatalf("EventError is not JSON: %v", err)
	}
	if ec.Schema != "EventError" || ec.UUID == "" || ec.DT == "" {
		t.Errorf("error capsule fields: %+v", ec)
	}
	return ec.Event
}

const beaconFormat = "%q %{recvFrom}s %{seqId}d %t %h %{userAgent}i"

// beaconLine builds a raw client-side line around a capsule.
func beaconLine(capsuleJSON string, seq int) string {
	return "?" + url.QueryEscape(capsuleJSON) + ";\tcp1.example\t" + fmt.Sprint(seq) + "\t2026-11-30T10:00:00\t198.51.100.7\tMozilla/5.0"
}

func TestBadInput(t *testing.T) {
	p := newTestProcessor(t, Config{}, "00")
	hasher := iphash.NewHasher(iphash.SHA1, []byte{0})
	f := mustFormat(t, beaconFormat)
	big := `{"schema":"Generic","revision":13,"event":{"articleId":1,"articleTitle":"` + strings.Repeat("x", 1<<20) + `"}}`
	cases := []struct {
		name, raw, code, schema string
		revision                int64
		pointer                 string
	}{
		{"non-matching line", "this is not a beacon", capsule.CodeProcessor, "unknown", -1, ""},
		{"broken JSON", beaconLine(`{"schema":"Generic","revision":13,"event":{"articleId":1,`, 1), capsule.CodeProcessor, "Generic", 13, ""},
		{"invalid UTF-8 in a percent escape", "?%7B%22schema%22%3A%22Generic%22%2C%22revision%22%3A13%2C%22event%22%3A%7B%22articleTitle%22%3A%22%C3%28%22%7D%7D;\tcp1\t1\t2026-11-30T10:00:00\t1.2.3.4\tUA", capsule.CodeProcessor, "Generic", 13, ""},
		{"truncated query", "?%7B%22schema%22%3A%22Generic%22%2C%22revision%22%3A13%2C%22ev\tcp1\t1\t2026-11-30T10:00:00\t1.2.3.4\tUA", capsule.CodeProcessor, "Generic", 13, ""},
		{"truncated percent escape", "?%7B%22schema%22%3A%22Generic%22%2C%22revision%22%3A13%2C%2\tcp1\t1\t2026-11-30T10:00:00\t1.2.3.4\tUA", capsule.CodeProcessor, "Generic", 13, ""},
		{"1 MB line", beaconLine(big, 2), capsule.CodeProcessor, "Generic", 13, ""},
		{"event is an array", beaconLine(`{"schema":"Generic","revision":13,"event":[1,2]}`, 3), capsule.CodeValidation, "Generic", 13, "/event"},
		{"capsule is an array", beaconLine(`[{"schema":"Generic"}]`, 4), capsule.CodeProcessor, "Generic", -1, ""},
		{"unknown schema", beaconLine(`{"schema":"NoSuchSchema","revision":1,"event":{}}`, 5), capsule.CodeProcessor, "NoSuchSchema", 1, ""},
		{"unknown revision", beaconLine(`{"schema":"Generic","revision":14,"event":{"articleId":1,"articleTitle":"t"}}`, 6), capsule.CodeProcessor, "Generic", 14, ""},
		{"revision -1 (schema not loaded)", beaconLine(`{"schema":"Foo","revision":-1,"event":{"action":"click"}}`, 7), capsule.CodeValidation, "Foo", -1, "/revision"},
		{"missing required", beaconLine(`{"schema":"Generic","revision":13,"event":{"articleId":1}}`, 8), capsule.CodeValidation, "Generic", 13, "/event/articleTitle"},
		{"wrong type", beaconLine(`{"schema":"Generic","revision":13,"event":{"articleId":"1","articleTitle":"t"}}`, 9), capsule.CodeValidation, "Generic", 13, "/event/articleId"},
		{"extra event property", beaconLine(`{"schema":"Generic","revision":13,"event":{"articleId":1,"articleTitle":"t","x":1}}`, 10), capsule.CodeValidation, "Generic", 13, "/event/x"},
		{"extra capsule property", beaconLine(`{"schema":"Generic","revision":13,"event":{"articleId":1,"articleTitle":"t"},"evil":1}`, 11), capsule.CodeValidation, "Generic", 13, "/evil"},
		{"nested object follows its schema", beaconLine(`{"schema":"PageView","revision":2,"event":{"title":"t","namespace":0,"timing":{"domReady":1.5}}}`, 12), capsule.CodeValidation, "PageView", 2, "/event/timing/firstPaint"},
		{"format asserted", beaconLine(`{"schema":"SearchQuery","revision":5,"event":{"query":"q","results":1,"source":"fulltext","dt":"yesterday"}}`, 13), capsule.CodeValidation, "SearchQuery", 5, "/event/dt"},
		{"trailing data", beaconLine(`{"schema":"Generic","revision":13,"event":{"articleId":1,"articleTitle":"t"}} {}`, 14), capsule.CodeProcessor, "Generic", 13, ""},
		{"empty line", "", capsule.CodeProcessor, "unknown", -1, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := &capsule.Source{Topic: "raw", Partition: 3, Offset: 42}
			ee := onlyError(t, p.Process(context.Background(), f, []byte(c.raw), src, nil))
			if ee.Code != c.code {
				t.Errorf("code %q, want %q: %s", ee.Code, c.code, ee.Message)
			}
			if ee.Schema != c.schema || ee.Revision != c.revision {
				t.Errorf("schema/revision %s/%d, want %s/%d", ee.Schema, ee.Revision, c.schema, c.revision)
			}
			if ee.Source == nil || *ee.Source != *src {
				t.Errorf("source %+v", ee.Source)
			}
			if ee.ProcessorID != "test-processor" || ee.Message == "" {
				t.Errorf("processorId %q message %q", ee.ProcessorID, ee.Message)
			}
			if c.pointer != "" {
				wantViolationAt(t, ee.Errors, c.pointer)
			}
			if len(c.raw) > 64<<10 {
				if ee.RawEventBytes != len(c.raw) || len(ee.RawEvent) != 64<<10 {
					t.Errorf("big raw event: kept %d of %d bytes, rawEventBytes %d", len(ee.RawEvent), len(c.raw), ee.RawEventBytes)
				}
			} else if want := hashIPs(c.raw, hasher); ee.RawEvent != want && ee.RawEventBase64 == nil {
				t.Errorf("rawEvent not kept (with the client IP hashed):\n got %q\nwant %q", ee.RawEvent, want)
			}
			if strings.Contains(ee.RawEvent, "198.51.100.7") || strings.Contains(ee.RawEvent, "1.2.3.4") || strings.Contains(ee.Message, "1.2.3.4") {
				t.Errorf("raw client IP in the EventError: %q / %q", ee.RawEvent, ee.Message)
			}
		})
	}
}

// hashIPs is raw with the test lines' client IPs replaced as the hash
// policy stores them in EventErrors.
func hashIPs(raw string, h *iphash.Hasher) string {
	for _, ip := range []string{"198.51.100.7", "1.2.3.4"} {
		raw = strings.ReplaceAll(raw, "\t"+ip+"\t", "\t"+iphash.Mark(h.Hash(ip))+"\t")
	}
	return raw
}

func TestIPPolicies(t *testing.T) {
	line := beaconLine(`{"schema":"Generic","revision":13,"event":{"articleId":1,"articleTitle":"t"}}`, 1)
	for _, c := range []struct {
		policy IPPolicy
		want   any
	}{
		{IPDrop, nil},
		{IPKeep, "198.51.100.7"},
		{IPHash, iphash.NewHasher(iphash.SHA1, []byte{1}).Hash("198.51.100.7")},
	} {
		p := newTestProcessor(t, Config{IPPolicy: c.policy}, "01")
		got := decodeValue(t, p.Process(context.Background(), mustFormat(t, beaconFormat), []byte(line), nil, nil)[0].Value)
		if got["clientIp"] != c.want {
			t.Errorf("%s: clientIp %v, want %v", c.policy, got["clientIp"], c.want)
		}
	}
}

func TestMixedTopicExclusion(t *testing.T) {
	line := beaconLine(`{"schema":"Generic","revision":13,"event":{"articleId":1,"articleTitle":"t"}}`, 1)
	f := mustFormat(t, beaconFormat)
	p := newTestProcessor(t, Config{MixedExclude: regexpMust(`^Gen`)}, "01")
	if outs := p.Process(context.Background(), f, []byte(line), nil, nil); len(outs) != 1 || outs[0].Topic != "eventlogging_Generic" {
		t.Errorf("excluded schema reached %d topics", len(outs))
	}
	p = newTestProcessor(t, Config{MixedTopic: "-"}, "01")
	if outs := p.Process(context.Background(), f, []byte(line), nil, nil); len(outs) != 1 {
		t.Errorf("mixed topic disabled, got %d outputs", len(outs))
	}
	p = newTestProcessor(t, Config{TopicTemplate: "{schema}_{revision}"}, "01")
	if outs := p.Process(context.Background(), f, []byte(line), nil, nil); outs[0].Topic != "Generic_13" {
		t.Errorf("template topic %s", outs[0].Topic)
	}
}

func TestCheckFormat(t *testing.T) {
	if err := CheckFormat(beaconFormat); err != nil {
		t.Error(err)
	}
	if err := CheckFormat("%q %{bogus}s"); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("want error naming the field, got %v", err)
	}
}

// BenchmarkProcess measures the processing function on a small hand-written
// event: one raw beacon line (a 4-field ButtonClick event, about 320 bytes)
// to capsule bytes, the same line again and again, in memory, on one
// goroutine. The performance targets are stated on the standard workload:
// BenchmarkProcessStandard.
func BenchmarkProcess(b *testing.B) {
	p := newTestProcessor(b, Config{}, "000102030405060708090a0b0c0d0e0f")
	f := mustFormat(b, beaconFormat)
	line := []byte(beaconLine(`{"event":{"button":"save","page":"Main_Page","count":3,"loggedIn":true},"revision":1,"schema":"ButtonClick","webHost":"en.wikipedia.org","wiki":"enwiki"}`, 4724275))
	ctx := context.Background()
	var outs []Output
	if outs = p.Process(ctx, f, line, nil, outs[:0]); len(outs) != 2 {
		b.Fatalf("benchmark event is invalid: %s", outs[0].Value)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		outs = p.Process(ctx, f, line, nil, outs[:0])
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

func regexpMust(s string) *regexp.Regexp { return regexp.MustCompile(s) }

// BenchmarkProcessInvalidShare measures the processing function on a mix of
// valid events and validation failures (an enum violated): the cost of an
// invalid-event spike, which slowed the original sharply.
func BenchmarkProcessInvalidShare(b *testing.B) {
	p := newTestProcessor(b, Config{}, "000102030405060708090a0b0c0d0e0f")
	f := mustFormat(b, beaconFormat)
	valid := []byte(beaconLine(`{"event":{"button":"save","page":"Main_Page","count":3,"loggedIn":true},"revision":1,"schema":"ButtonClick","webHost":"en.wikipedia.org","wiki":"enwiki"}`, 4724275))
	invalid := []byte(beaconLine(`{"event":{"button":"explode","page":"Main_Page","count":3,"loggedIn":true},"revision":1,"schema":"ButtonClick","webHost":"en.wikipedia.org","wiki":"enwiki"}`, 4724276))
	ctx := context.Background()
	for _, pct := range []int{0, 10, 50, 100} {
		b.Run(fmt.Sprintf("invalid=%d%%", pct), func(b *testing.B) {
			var outs []Output
			lines := make([][]byte, 100)
			for i := range lines {
				lines[i] = valid
				if i < pct {
					lines[i] = invalid
				}
			}
			if outs = p.Process(ctx, f, invalid, nil, outs[:0]); len(outs) != 1 || outs[0].Topic != p.ErrorTopic() {
				b.Fatal("the invalid benchmark event is valid")
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				outs = p.Process(ctx, f, lines[i%100], nil, outs[:0])
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkProcessWithMetrics is BenchmarkProcess counting every event in
// eventlogging_process_events_total, as the deployed processor does.
func BenchmarkProcessWithMetrics(b *testing.B) {
	p := newTestProcessor(b, Config{Metrics: NewMetrics(prometheus.NewRegistry())}, "000102030405060708090a0b0c0d0e0f")
	f := mustFormat(b, beaconFormat)
	line := []byte(beaconLine(`{"event":{"button":"save","page":"Main_Page","count":3,"loggedIn":true},"revision":1,"schema":"ButtonClick","webHost":"en.wikipedia.org","wiki":"enwiki"}`, 4724275))
	ctx := context.Background()
	var outs []Output
	b.ReportAllocs()
	for b.Loop() {
		outs = p.Process(ctx, f, line, nil, outs[:0])
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// TestClientTimestampRange: a client timestamp (trusted) outside years 1 to
// 9999 is a validation error, not a capsule with a seven-digit year.
func TestClientTimestampRange(t *testing.T) {
	p := newTestProcessor(t, Config{TrustClientCapsuleFields: true}, "01")
	for ts, valid := range map[string]bool{"999999999999999": false, "-62135596801": false, "253402300799": true, "1358637398": true} {
		ev := `{"schema":"Generic","revision":13,"event":{"articleId":1,"articleTitle":"X"},"timestamp":` + ts + `}`
		_, res := p.ProcessEvent(context.Background(), []byte(ev), Meta{RecvFrom: "t", SeqID: 1, Received: fixedNow}, nil)
		if res.Valid() != valid {
			t.Errorf("timestamp %s: valid=%v (%s), want %v", ts, res.Valid(), res.Message, valid)
		}
		if !valid && (len(res.Errors) != 1 || res.Errors[0].Pointer != "/timestamp") {
			t.Errorf("timestamp %s: errors %+v, want one at /timestamp", ts, res.Errors)
		}
	}
}
