package process

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/capsule"
)

func platformProcessor(t *testing.T) *Processor {
	t.Helper()
	streams, err := NewStreams([]Stream{
		{Name: "analytics.edit_funnel", SchemaTitle: "analytics/edit_funnel", Topic: "eventlogging_analytics.edit_funnel"},
		{Name: "analytics.search_satisfaction", SchemaTitle: "analytics/search_satisfaction"},
		{Name: `/^analytics\.test\.[a-z_]+$/`},
	})
	if err != nil {
		t.Fatal(err)
	}
	return newTestProcessor(t, Config{Streams: streams}, "01")
}

var testMeta = Meta{RecvFrom: "intake1", SeqID: 42, Received: time.Unix(1764496800, 0), ClientIP: "198.51.100.7", UserAgent: "Mozilla/5.0"}

func TestProcessEventPlatform(t *testing.T) {
	p := platformProcessor(t)
	ev := `{"$schema":"/analytics/edit_funnel/1.0.0","meta":{"stream":"analytics.edit_funnel","id":"forged"},"dt":"2025-11-30T09:59:59Z","action":"init","editor":"wikitext","session_token":"abcdefghijkl","http":{"client_ip":"6.6.6.6"}}`
	outs, res := p.ProcessEvent(context.Background(), []byte(ev), testMeta, nil)
	if !res.Valid() || len(outs) != 1 {
		t.Fatalf("want valid, got %+v", res)
	}
	if outs[0].Topic != "eventlogging_analytics.edit_funnel" || res.Topic != outs[0].Topic {
		t.Errorf("topic %s", outs[0].Topic)
	}
	got := decodeValue(t, outs[0].Value)
	meta := got["meta"].(map[string]any)
	// The client's meta.id is kept, as EventGate keeps it (the schema
	// judges it): a client de-duplicates its retries with it.
	if meta["id"] != "forged" || res.UUID != "forged" {
		t.Errorf("meta.id %v (result uuid %s), want the client's %q", meta["id"], res.UUID, "forged")
	}
	if meta["dt"] != "2025-11-30T10:00:00Z" || got["dt"] != "2025-11-30T09:59:59Z" {
		t.Errorf("meta.dt %v (receive time), dt %v (client time, kept)", meta["dt"], got["dt"])
	}
	h := got["http"].(map[string]any)
	if h["client_ip"] == "6.6.6.6" || h["client_ip"] == "198.51.100.7" || len(h["client_ip"].(string)) != 40 {
		t.Errorf("http.client_ip %v: want the HMAC of the socket IP", h["client_ip"])
	}
	if h["request_headers"].(map[string]any)["user-agent"] != "Mozilla/5.0" {
		t.Errorf("user agent not filled: %v", h)
	}
}

// TestMetaID: without a client meta.id the event gets its deterministic
// uuid in RFC 4122 form (a replay gets the same); a meta.id that cannot be
// stored is refused.
func TestMetaID(t *testing.T) {
	p := platformProcessor(t)
	base := `{"$schema":"/analytics/edit_funnel/1.0.0","meta":{"stream":"analytics.edit_funnel"META},"action":"init","editor":"wikitext","session_token":"abcdefghijkl"}`
	want := capsule.Hyphenated(capsule.UUID("intake1", 42, 1764496800))
	if len(want) != 36 || strings.Count(want, "-") != 4 {
		t.Fatalf("Hyphenated = %q", want)
	}
	for _, c := range []struct{ name, meta, id, pointer string }{
		{"none", ``, want, ""},
		{"empty", `,"id":""`, want, ""},
		{"a client uuid", `,"id":"5f0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b"`, "5f0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b", ""},
		{"not a string", `,"id":7`, "", "/meta/id"},
		{"too long", `,"id":"` + strings.Repeat("a", 65) + `"`, "", "/meta/id"},
	} {
		t.Run(c.name, func(t *testing.T) {
			outs, res := p.ProcessEvent(context.Background(), []byte(strings.Replace(base, "META", c.meta, 1)), testMeta, nil)
			if c.pointer != "" {
				if res.Valid() || len(res.Errors) != 1 || res.Errors[0].Pointer != c.pointer {
					t.Fatalf("want a violation at %s, got %+v", c.pointer, res)
				}
				return
			}
			if !res.Valid() {
				t.Fatalf("invalid: %+v", res)
			}
			got := decodeValue(t, outs[0].Value)["meta"].(map[string]any)["id"]
			if got != c.id || res.UUID != c.id {
				t.Errorf("meta.id %v, result uuid %s; want %s", got, res.UUID, c.id)
			}
		})
	}
}

func TestProcessEventPlatformInvalid(t *testing.T) {
	p := platformProcessor(t)
	cases := []struct {
		name, ev, code, pointer, reason string
	}{
		{"unknown stream", `{"$schema":"/analytics/edit_funnel/1.0.0","meta":{"stream":"nope"},"action":"init","editor":"wikitext","session_token":"abcdefghijkl"}`, capsule.CodeValidation, "/meta/stream", "not configured"},
		{"stream/schema mismatch", `{"$schema":"/analytics/search_satisfaction/1.0.0","meta":{"stream":"analytics.edit_funnel"},"search_session_id":"abcdefgh","action":"click"}`, capsule.CodeValidation, "/$schema", `accepts schema title "analytics/edit_funnel"`},
		{"no meta", `{"$schema":"/analytics/edit_funnel/1.0.0","action":"init"}`, capsule.CodeValidation, "/meta", "required"},
		{"schema violation", `{"$schema":"/analytics/edit_funnel/1.0.0","meta":{"stream":"analytics.edit_funnel"},"action":"explode","editor":"wikitext","session_token":"abcdefghijkl"}`, capsule.CodeValidation, "/action", ""},
		{"unknown schema", `{"$schema":"/analytics/nothing/9.9.9","meta":{"stream":"analytics.test.x"}}`, capsule.CodeProcessor, "", "unknown schema"},
		{"path traversal", `{"$schema":"/../../../etc/passwd","meta":{"stream":"analytics.test.x"}}`, capsule.CodeProcessor, "", "unknown schema"},
		{"$schema not a string", `{"$schema":5,"meta":{"stream":"analytics.test.x"}}`, capsule.CodeValidation, "/$schema", "want string"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			outs, res := p.ProcessEvent(context.Background(), []byte(c.ev), testMeta, nil)
			if res.Valid() || len(outs) != 1 || outs[0].Topic != capsule.TopicEventError {
				t.Fatalf("want one EventError, got %+v", res)
			}
			if res.Code != c.code {
				t.Errorf("code %s, want %s (%s)", res.Code, c.code, res.Message)
			}
			if !strings.Contains(res.Message, c.reason) {
				t.Errorf("message %q lacks %q", res.Message, c.reason)
			}
			if c.pointer != "" {
				wantViolationAt(t, res.Errors, c.pointer)
			}
		})
	}
}

func TestProcessEventLegacy(t *testing.T) {
	p := platformProcessor(t)
	outs, res := p.ProcessEvent(context.Background(), []byte(`{"schema":"Generic","revision":13,"event":{"articleId":1,"articleTitle":"t"},"wiki":"enwiki","recvFrom":"forged","seqId":1}`), testMeta, nil)
	if !res.Valid() || len(outs) != 2 {
		t.Fatalf("want valid in 2 topics: %+v", res)
	}
	got := decodeValue(t, outs[0].Value)
	if got["recvFrom"] != "intake1" || got["seqId"] != 42.0 || got["userAgent"] != "Mozilla/5.0" || got["timestamp"] != 1764496800.0 {
		t.Errorf("server fields not from the request: %v", got)
	}
	_, res = p.ProcessEvent(context.Background(), []byte(`{"schema":"Generic","revision":13,"event":{"articleId":"x"}}`), testMeta, nil)
	if res.Valid() || res.Code != capsule.CodeValidation || len(res.Errors) < 2 || res.UUID == "" {
		t.Errorf("invalid legacy event: %+v", res)
	}
	_, res = p.ProcessEvent(context.Background(), []byte(`{"schema":`), testMeta, nil)
	if res.Code != capsule.CodeProcessor {
		t.Errorf("broken JSON: %+v", res)
	}
}

func TestStreamsConfig(t *testing.T) {
	for _, bad := range [][]Stream{
		{{Name: "a b"}},
		{{Name: "/([/"}},
		{{Name: "a"}, {Name: "a"}},
		{{Name: "a", SampleRate: 2}},
		{{Name: "a", Topic: "bad topic"}},
	} {
		if _, err := NewStreams(bad); err == nil {
			t.Errorf("%+v: want error", bad)
		}
	}
	st, _ := NewStreams([]Stream{{Name: `/^x\..+$/`, SchemaTitle: "x"}, {Name: "x.exact", Topic: "t"}})
	if s, ok := st.Lookup("x.exact"); !ok || s.Topic != "t" {
		t.Errorf("exact: %+v", s)
	}
	if s, ok := st.Lookup("x.other"); !ok || s.Topic != "x.other" || s.SampleRate != 1 {
		t.Errorf("regex: %+v", s)
	}
	if _, ok := st.Lookup("y"); ok {
		t.Error("y matched")
	}
}

func TestParseStreamsExample(t *testing.T) {
	data, err := os.ReadFile("../../examples/streams.yaml")
	if err != nil {
		t.Fatal(err)
	}
	st, err := ParseStreams(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.List()) != 3 {
		t.Errorf("streams: %+v", st.List())
	}
	if _, err := ParseStreams([]byte("streams:\n  - nme: x\n")); err == nil {
		t.Error("unknown key accepted")
	}
}
