package process

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/eventlogging/eventlogging/internal/capsule"
)

// TestLegacyQuirks: what the 2013-2016 clients sent and the original
// accepted: server-side (%j) capsules with a millisecond timestamp, and the
// JavaScript client's clientValidated and isTruncated capsule flags,
// dropped before validation and never stored.
func TestLegacyQuirks(t *testing.T) {
	reg := prometheus.NewRegistry()
	p := newTestProcessor(t, Config{IPPolicy: IPDrop, Metrics: NewMetrics(reg)}, "00")
	serverSide := mustFormat(t, "%j")
	clientSide := mustFormat(t, "%q %{recvFrom}s %{seqId}d %t")
	cases := []struct {
		name    string
		f       string // "j" or "q"
		capsule string
		// want: the capsule's timestamp and uuid, or the violation pointer
		timestamp int64
		uuid      string
		dt        string
		violation string
	}{
		{
			name:      "milliseconds, the original's fixture",
			f:         "j",
			capsule:   `{"schema":"FakeSchema","revision":123,"recvFrom":"fenari","seqId":12345,"timestamp":1358791834912,"wiki":"enwiki","webHost":"en.m.wikipedia.org","event":{"action":"a"}}`,
			timestamp: 1358791834, uuid: "babb66f34a0a5de3be0c6513088be33e", dt: "2013-01-21T18:10:34Z",
		},
		{
			name:      "seconds",
			f:         "j",
			capsule:   `{"schema":"FakeSchema","revision":123,"recvFrom":"fenari","seqId":12345,"timestamp":1358791834,"event":{"action":"a"}}`,
			timestamp: 1358791834, uuid: "babb66f34a0a5de3be0c6513088be33e", dt: "2013-01-21T18:10:34Z",
		},
		{
			name:      "more digits than milliseconds: out of range",
			f:         "j",
			capsule:   `{"schema":"FakeSchema","revision":123,"recvFrom":"fenari","seqId":12345,"timestamp":1358791834912123,"event":{"action":"a"}}`,
			violation: "/timestamp",
		},
		{
			name:      "still out of range",
			f:         "j",
			capsule:   `{"schema":"FakeSchema","revision":123,"recvFrom":"fenari","seqId":12345,"timestamp":-99999999999999,"event":{"action":"a"}}`,
			violation: "/timestamp",
		},
		{
			name:      "clientValidated and isTruncated dropped",
			f:         "q",
			capsule:   `{"schema":"FakeSchema","revision":123,"clientValidated":true,"isTruncated":false,"wiki":"enwiki","webHost":"en.wikipedia.org","event":{"action":"a"}}`,
			timestamp: 1764500000,
		},
		{
			name:      "other unknown capsule fields still refused",
			f:         "q",
			capsule:   `{"schema":"FakeSchema","revision":123,"clientValidated":true,"isTrunkated":false,"event":{"action":"a"}}`,
			violation: "/isTrunkated",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, raw := serverSide, c.capsule
			if c.f == "q" {
				f, raw = clientSide, "?"+url.QueryEscape(c.capsule)+"; cp1 7 2025-11-30T10:53:20"
			}
			out := p.Process(t.Context(), f, []byte(raw), nil, nil)
			if len(out) == 0 {
				t.Fatal("no output")
			}
			if c.violation != "" {
				var ec capsule.ErrorCapsule
				if err := json.Unmarshal(out[0].Value, &ec); err != nil || out[0].Topic != capsule.TopicEventError {
					t.Fatalf("want an EventError, got %s: %s", out[0].Topic, out[0].Value)
				}
				if len(ec.Event.Errors) == 0 || ec.Event.Errors[0].Pointer != c.violation {
					t.Fatalf("violations %+v, want %s", ec.Event.Errors, c.violation)
				}
				return
			}
			if out[0].Topic == capsule.TopicEventError {
				t.Fatalf("refused: %s", out[0].Value)
			}
			got := decodeValue(t, out[0].Value)
			if ts, _ := got["timestamp"].(float64); int64(ts) != c.timestamp {
				t.Errorf("timestamp %v, want %d", got["timestamp"], c.timestamp)
			}
			if c.uuid != "" && got["uuid"] != c.uuid {
				t.Errorf("uuid %v, want %s (the original's)", got["uuid"], c.uuid)
			}
			if c.dt != "" && got["dt"] != c.dt {
				t.Errorf("dt %v, want %s", got["dt"], c.dt)
			}
			for _, k := range []string{"clientValidated", "isTruncated"} {
				if _, kept := got[k]; kept || strings.Contains(string(out[0].Value), k) {
					t.Errorf("%s stored: %s", k, out[0].Value)
				}
			}
		})
	}
	// Both flags were counted (the valid case and the refused one each
	// carried clientValidated; only the valid case isTruncated).
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "eventlogging_process_legacy_flags_dropped_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			counts[labelOf(m, "flag")] = m.GetCounter().GetValue()
		}
	}
	if counts["clientValidated"] != 2 || counts["isTruncated"] != 1 {
		t.Errorf("legacy flag counts %v, want clientValidated 2, isTruncated 1", counts)
	}
}

func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
