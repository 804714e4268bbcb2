package process

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestRegexStreamMaxStreams: a client cannot make topics at will (issue 30,
// finding 6). A regex stream without a topic admits its first max_streams
// names; events of the others become EventErrors that say why, and neither
// topics nor metric series grow past the cap. A regex stream with a fixed
// topic takes any name into its one topic, under one metric label.
func TestRegexStreamMaxStreams(t *testing.T) {
	streams, err := NewStreams([]Stream{
		{Name: `/^analytics\.test\.[a-z_]+$/`, MaxStreams: 5},
		{Name: `/^analytics\.fixed\.[a-z_]+$/`, Topic: "eventlogging_analytics.fixed"},
	})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	p := newTestProcessor(t, Config{Streams: streams, Metrics: NewMetrics(reg)}, "01")
	topics := map[string]int{}
	invalid := 0
	for _, family := range []string{"test", "fixed"} {
		for i := range 40 {
			name := fmt.Sprintf("analytics.%s.s%s", family, strings.Repeat("x", i))
			ev := `{"$schema":"/analytics/edit_funnel/1.0.0","meta":{"stream":"` + name + `"},"dt":"2025-11-30T09:59:59Z","action":"init","editor":"wikitext","session_token":"abcdefghijkl"}`
			for range 2 { // the same name again: still admitted, or still refused
				outs, res := p.ProcessEvent(context.Background(), []byte(ev), testMeta, nil)
				if !res.Valid() {
					invalid++
					if family == "fixed" || !strings.Contains(res.Message, "max_streams") || i < 5 {
						t.Fatalf("%s: %+v", name, res)
					}
					continue
				}
				for _, o := range outs {
					topics[o.Topic]++
				}
			}
		}
	}
	if invalid != 2*35 {
		t.Errorf("%d events refused, want the 70 of the 35 names past the cap", invalid)
	}
	if len(topics) != 5+1 || topics["eventlogging_analytics.fixed"] != 80 {
		t.Errorf("topics %v: want 5 of analytics.test and the fixed one with all 80 events", topics)
	}
	// Metric series: one per admitted name, one for the fixed-topic
	// regex, and the refused ones under no stream's name.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		if mf.GetName() == "eventlogging_process_events_total" {
			n = len(mf.GetMetric())
		}
	}
	if n > 5+1+2 {
		t.Errorf("%d series of eventlogging_process_events_total, want at most 8", n)
	}
}

// TestMaxStreamsConfig: max_streams belongs to a regex stream that makes a
// topic a name.
func TestMaxStreamsConfig(t *testing.T) {
	for _, c := range []struct {
		s    Stream
		want string
	}{
		{Stream{Name: "a.b", MaxStreams: 3}, "regex stream"},
		{Stream{Name: "/^a$/", Topic: "t", MaxStreams: 3}, "remove max_streams"},
		{Stream{Name: "/^a$/", MaxStreams: -1}, "positive"},
	} {
		if _, err := NewStreams([]Stream{c.s}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error saying %q", c.s, err, c.want)
		}
	}
	st, err := ParseStreams([]byte("streams:\n  - name: /^a\\..+$/\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s, err := st.LookupErr("a.b"); err != nil || s.MaxStreams != DefaultMaxStreams {
		t.Errorf("a regex stream without max_streams: %+v %v, want max_streams %d", s, err, DefaultMaxStreams)
	}
}

// TestMaxStreamsAdmitsValidEventsOnly: invalid events of new names do not
// use up a regex stream's places (found by review: 20 junk events took
// them all until a restart), and a reload keeps the names admitted.
func TestMaxStreamsAdmitsValidEventsOnly(t *testing.T) {
	cfg := []Stream{{Name: `/^analytics\.test\.[a-z_]+$/`, MaxStreams: 3}}
	streams, err := NewStreams(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := newTestProcessor(t, Config{Streams: streams}, "01")
	send := func(name, action string) Result {
		ev := `{"$schema":"/analytics/edit_funnel/1.0.0","meta":{"stream":"` + name + `"},"dt":"2025-11-30T09:59:59Z","action":"` + action + `","editor":"wikitext","session_token":"abcdefghijkl"}`
		_, res := p.ProcessEvent(context.Background(), []byte(ev), testMeta, nil)
		return res
	}
	for i := range 30 {
		if res := send("analytics.test.junk"+strings.Repeat("j", i), "explode"); res.Valid() || strings.Contains(res.Message, "max_streams") {
			t.Fatalf("junk event %d: %+v, want invalid for its action", i, res)
		}
	}
	for _, name := range []string{"analytics.test.a", "analytics.test.b", "analytics.test.c"} {
		if res := send(name, "init"); !res.Valid() {
			t.Fatalf("%s after the junk: %+v, want admitted", name, res)
		}
	}
	if res := send("analytics.test.d", "init"); res.Valid() || !strings.Contains(res.Message, "max_streams") {
		t.Fatalf("a fourth name: %+v, want refused for max_streams", res)
	}
	// A reload of the same configuration: the three stay, no fourth.
	next, err := NewStreams(cfg)
	if err != nil {
		t.Fatal(err)
	}
	streams.Replace(next)
	if res := send("analytics.test.a", "init"); !res.Valid() {
		t.Fatalf("an admitted name after the reload: %+v", res)
	}
	if res := send("analytics.test.e", "init"); res.Valid() {
		t.Fatalf("a new name after the reload: %+v, want refused (the reload must not admit 3 more)", res)
	}
}
