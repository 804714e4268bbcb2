package e2e

import (
	"context"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/pkg/client"
)

// TestClientGo sends events with the Go client (pkg/client) to a running
// pipeline: every event gets its Result — accepted with uuid and topic, or
// invalid with the intake's code and violation path; events logged while
// the intake is down (stopped, then started again on the same address and
// data) are delivered after it returns; they all arrive in their topics
// once; Close leaves no goroutine behind.
func TestClientGo(t *testing.T) {
	p := startClientPipeline(t)
	http.DefaultClient.CloseIdleConnections()
	before := runtime.NumGoroutine()

	var (
		mu      sync.Mutex
		results []client.Result
	)
	c, err := client.New(p.base, client.Config{
		Wiki: "gowiki", WebHost: "go.example.org",
		FlushInterval: 50 * time.Millisecond, MinBackoff: 50 * time.Millisecond, MaxBackoff: time.Second,
		DeliveryTimeout: 3 * time.Minute,
		OnResult: func(r client.Result) {
			mu.Lock()
			results = append(results, r)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	take := func() []client.Result {
		mu.Lock()
		defer mu.Unlock()
		r := results
		results = nil
		return r
	}
	ctx := t.Context()
	flush := func(what string) {
		t.Helper()
		fctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		if err := c.Flush(fctx); err != nil {
			t.Fatalf("%s: Flush: %v (stats %+v)", what, err, c.Stats())
		}
	}
	logNav := func(start int) {
		t.Helper()
		if err := c.Log(ctx, "NavigationTiming", 7, map[string]any{"responseStart": start, "loadEventEnd": start + 500, "isHttps": true}); err != nil {
			t.Fatal(err)
		}
	}

	// 1. The intake up: 10 valid events, one invalid, one Event Platform event.
	for i := range 10 {
		logNav(i)
	}
	if err := c.Log(ctx, "NavigationTiming", 7, map[string]any{"responseStart": "fast", "loadEventEnd": 1}); err != nil {
		t.Fatal(err)
	}
	if err := c.Submit(ctx, "analytics.edit_funnel", map[string]any{"$schema": "/analytics/edit_funnel/1.0.0",
		"action": "init", "editor": "visualeditor", "session_token": "f3a9c2d4e5b6a7c8", "page_id": 15580374}); err != nil {
		t.Fatal(err)
	}
	flush("before the outage")
	got := take()
	if len(got) != 12 {
		t.Fatalf("%d results, want 12: %+v", len(got), got)
	}
	var invalid []client.Result
	for _, r := range got {
		switch {
		case r.Status == client.StatusInvalid:
			invalid = append(invalid, r)
		case r.Status != client.StatusAccepted || (r.Stream == "" && len(r.UUID) != 32) || (r.Stream != "" && len(r.UUID) != 36):
			// Legacy capsules: 32 hex digits; Event Platform events: their
			// meta.id, an RFC 4122 uuid when the client sent none.
			t.Errorf("result %+v, want accepted with a uuid", r)
		case r.Stream == "" && r.Topic != p.topic("NavigationTiming"):
			t.Errorf("accepted into %q, want %q", r.Topic, p.topic("NavigationTiming"))
		case r.Stream == "analytics.edit_funnel" && r.Topic != p.topic("analytics.edit_funnel"):
			t.Errorf("Event Platform event accepted into %q", r.Topic)
		}
	}
	if len(invalid) != 1 {
		t.Fatalf("%d invalid results, want 1", len(invalid))
	}
	inv := invalid[0]
	if inv.Code != "validation" || inv.Message == "" || inv.UUID == "" || len(inv.Violations) == 0 ||
		!strings.HasSuffix(inv.Violations[0].Pointer, "/responseStart") || inv.Violations[0].Reason == "" {
		t.Errorf("the invalid event's result: %+v, want code validation and a violation at /responseStart", inv)
	}
	t.Logf("invalid event: code %s, violations %+v", inv.Code, inv.Violations)

	// 2. The intake goes down; 20 events are logged meanwhile and retried
	// until it is back.
	p.restartIntake(t, func() {
		failedBefore := c.Stats().Retries
		for i := range 20 {
			logNav(1000 + i)
		}
		deadline := time.Now().Add(30 * time.Second)
		for c.Stats().Retries <= failedBefore {
			if time.Now().After(deadline) {
				t.Fatalf("no retry while the intake is down: %+v", c.Stats())
			}
			time.Sleep(20 * time.Millisecond) // polling interval
		}
	})
	flush("after the restart")
	got = take()
	if len(got) != 20 {
		t.Fatalf("%d results after the restart, want 20", len(got))
	}
	for _, r := range got {
		if r.Status != client.StatusAccepted {
			t.Errorf("event logged during the outage: %+v", r)
		}
	}
	st := c.Stats()
	if st.Enqueued != 32 || st.Accepted != 31 || st.Invalid != 1 || st.Failed != 0 || st.Pending != 0 || st.Retries == 0 {
		t.Errorf("stats %+v", st)
	}
	t.Logf("stats: %+v", st)

	// 3. Every valid event is in its topic, once.
	var starts []int
	for _, rec := range p.read(t, p.topic("NavigationTiming"), 30) {
		starts = append(starts, int(recordField(rec, "event.responseStart").(float64)))
		if rec["wiki"] != "gowiki" || rec["webHost"] != "go.example.org" || !strings.HasPrefix(rec["userAgent"].(string), "eventlogging-go-client/") {
			t.Errorf("capsule %v", rec)
		}
	}
	slices.Sort(starts)
	want := make([]int, 0, 30)
	for i := range 10 {
		want = append(want, i)
	}
	for i := range 20 {
		want = append(want, 1000+i)
	}
	if !slices.Equal(starts, want) {
		t.Errorf("responseStart of the stored events %v, want %v", starts, want)
	}
	if ef := p.read(t, p.topic("analytics.edit_funnel"), 1)[0]; recordField(ef, "meta.stream") != "analytics.edit_funnel" || ef["dt"] == nil {
		t.Errorf("Event Platform event %v", ef)
	}
	if n := len(p.read(t, p.topic("NavigationTiming"), 0)); n != 30 {
		t.Errorf("NavigationTiming holds %d events, want 30", n)
	}

	// 4. Close: nothing left to send, no goroutine left.
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.Close(cctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		http.DefaultClient.CloseIdleConnections()
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		n := runtime.NumGoroutine()
		if n <= before && !strings.Contains(stacks, "eventlogging/pkg/client.") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after Close, %d before New:\n%s", n, before, stacks)
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
}
