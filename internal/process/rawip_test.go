package process

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/iphash"
	"github.com/eventlogging/eventlogging/internal/lineformat"
	"github.com/eventlogging/eventlogging/internal/schema"
)

// ipLine is a raw beacon line from client ip.
func ipLine(capsuleJSON, ip string) string {
	return "?" + url.QueryEscape(capsuleJSON) + ";\tcp1.example\t7\t2026-11-30T10:00:00\t" + ip + "\tMozilla/5.0"
}

// TestEventErrorClientIP: under hash and drop, no EventError holds the
// client IP of its raw line — not in rawEvent, not in the message — and
// the line keeps its layout (it still parses with the same format); under
// keep, the line is stored as it is.
func TestEventErrorClientIP(t *testing.T) {
	streams, err := NewStreams([]Stream{{Name: "analytics.edit_funnel", SchemaTitle: "analytics/edit_funnel", Topic: "eventlogging_analytics.edit_funnel"}})
	if err != nil {
		t.Fatal(err)
	}
	hasher := iphash.NewHasher(iphash.SHA1, []byte{1})
	f := mustFormat(t, beaconFormat)
	invalid := `{"schema":"Generic","revision":13,"event":{"articleId":"one"}}`
	cases := []struct {
		name, raw, ip string
		parses        bool // the original line parses with the format
	}{
		{"validation failure", ipLine(invalid, "203.0.113.77"), "203.0.113.77", true},
		{"IPv6", ipLine(invalid, "2001:db8::77"), "2001:db8::77", true},
		{"unknown schema", ipLine(`{"schema":"Nope","revision":1,"event":{}}`, "203.0.113.77"), "203.0.113.77", true},
		{"Event Platform", ipLine(`{"$schema":"/analytics/edit_funnel/1.0.0","meta":{"stream":"analytics.edit_funnel"},"action":"explode","editor":"wikitext","session_token":"abcdefghijkl","http":{"client_ip":"x"}}`, "203.0.113.77"), "203.0.113.77", true},
		// Parse errors quote the line from where it fails: here the bad
		// timestamp, followed by the IP.
		{"bad timestamp", strings.Replace(ipLine(invalid, "203.0.113.77"), "2026-11-30T10:00:00", "2026-13-30T10:00:00", 1), "203.0.113.77", false},
		{"no match", "?%7B%7D;\tcp1.example\tnot-a-number\t2026-11-30T10:00:00\t203.0.113.77\tMozilla/5.0", "203.0.113.77", false},
		{"too large", ipLine(`{"schema":"Generic","revision":13,"event":{"articleTitle":"`+strings.Repeat("x", 600<<10)+`"}}`, "203.0.113.77"), "203.0.113.77", false},
	}
	for _, policy := range []IPPolicy{IPHash, IPDrop, IPKeep} {
		p := newTestProcessor(t, Config{IPPolicy: policy, Streams: streams}, "01")
		for _, c := range cases {
			t.Run(policy.String()+"/"+c.name, func(t *testing.T) {
				ee := onlyError(t, p.Process(context.Background(), f, []byte(c.raw), nil, nil))
				if policy == IPKeep {
					if !strings.HasPrefix(c.raw, ee.RawEvent) {
						t.Errorf("keep: rawEvent changed: %q", ee.RawEvent)
					}
					return
				}
				if strings.Contains(ee.RawEvent, c.ip) || strings.Contains(ee.Message, c.ip) || strings.Contains(string(ee.RawEventBase64), c.ip) {
					t.Fatalf("client IP %s in the EventError:\nrawEvent %.300q\nmessage %q", c.ip, ee.RawEvent, ee.Message)
				}
				want := "\t-\t"
				if policy == IPHash {
					want = "\t" + iphash.Mark(hasher.Hash(c.ip)) + "\t"
				}
				if !strings.Contains(ee.RawEvent, want) && len(c.raw) < 64<<10 {
					t.Errorf("rawEvent %q lacks %q", ee.RawEvent, want)
				}
				if c.parses {
					var fl lineformat.Fields
					if err := f.Parse([]byte(ee.RawEvent), &fl); err != nil {
						t.Errorf("the stored line no longer parses: %v", err)
					}
				} else if !strings.HasPrefix(ee.Message, "parse raw event: ") && !strings.Contains(ee.Message, "exceeds") {
					t.Errorf("message %q", ee.Message)
				}
			})
		}
	}
}

// TestReplayHashedIP: the raw line of an EventError written under the hash
// policy, replayed once its schema exists, gives the event the clientIp it
// would have had in the first place (the marked hash is taken as it is, not
// hashed again); drop drops it; a malformed marker is hashed like any value.
func TestReplayHashedIP(t *testing.T) {
	key := []byte{1}
	hasher := iphash.NewHasher(iphash.SHA1, key)
	f := mustFormat(t, beaconFormat)
	line := ipLine(`{"schema":"Generic","revision":13,"event":{"articleId":1,"articleTitle":"t"}}`, "203.0.113.77")

	// Before the schema is registered: an EventError.
	empty := schema.NewResolver(schema.NewDirSource(t.TempDir()), schema.ResolverConfig{})
	before, err := New(empty, hasher, Config{IPPolicy: IPHash})
	if err != nil {
		t.Fatal(err)
	}
	ee := onlyError(t, before.Process(context.Background(), f, []byte(line), nil, nil))
	if ee.Code != capsule.CodeProcessor || strings.Contains(ee.RawEvent, "203.0.113.77") {
		t.Fatalf("EventError %q: %q", ee.Message, ee.RawEvent)
	}

	// Replayed after: valid, with the hash the direct path gives.
	after := newTestProcessor(t, Config{IPPolicy: IPHash}, "01")
	direct := decodeValue(t, after.Process(context.Background(), f, []byte(line), nil, nil)[0].Value)
	replayed := decodeValue(t, after.Process(context.Background(), f, []byte(ee.RawEvent), nil, nil)[0].Value)
	if replayed["clientIp"] != hasher.Hash("203.0.113.77") || replayed["clientIp"] != direct["clientIp"] {
		t.Errorf("replayed clientIp %v, direct %v", replayed["clientIp"], direct["clientIp"])
	}
	if replayed["uuid"] != direct["uuid"] {
		t.Errorf("replayed uuid %v, direct %v", replayed["uuid"], direct["uuid"])
	}
	for _, c := range []struct {
		policy IPPolicy
		field  string
		want   any
	}{
		{IPDrop, ee.RawEvent, nil},
		{IPKeep, ee.RawEvent, hasher.Hash("203.0.113.77")}, // all there is
		{IPHash, ipLine(`{"schema":"Generic","revision":13,"event":{"articleId":1,"articleTitle":"t"}}`, "h:nothex"), hasher.Hash("h:nothex")},
		{IPHash, ipLine(`{"schema":"Generic","revision":13,"event":{"articleId":1,"articleTitle":"t"}}`, "-"), nil},
	} {
		p := newTestProcessor(t, Config{IPPolicy: c.policy}, "01")
		got := decodeValue(t, p.Process(context.Background(), f, []byte(c.field), nil, nil)[0].Value)
		if got["clientIp"] != c.want {
			t.Errorf("%s %.40q…: clientIp %v, want %v", c.policy, c.field[len(c.field)-60:], got["clientIp"], c.want)
		}
	}
}

// TestProcessEventNoIPInError: an EventError of the synchronous HTTP path
// holds the event, which never carries the intake's client IP.
func TestProcessEventNoIPInError(t *testing.T) {
	p := newTestProcessor(t, Config{}, "01")
	m := testMeta
	m.ClientIP = "203.0.113.77"
	outs, res := p.ProcessEvent(context.Background(), []byte(`{"schema":"Generic","revision":13,"event":{}}`), m, nil)
	if res.Valid() || len(outs) != 1 || strings.Contains(string(outs[0].Value), "203.0.113.77") {
		t.Errorf("%+v: %s", res, outs[0].Value)
	}
}
