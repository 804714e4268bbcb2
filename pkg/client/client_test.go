package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeIntake answers POST /v1/events like the intake's synchronous path: an
// event with a "bad" field (in the event, or the capsule's event) is
// invalid with a violation at /bad, the others are accepted. answer, when
// set, may take over a request (return true when it answered).
type fakeIntake struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	posts  [][]map[string]any // the decoded batches, in order
	seq    int
	answer func(rw http.ResponseWriter, r *http.Request, n int) bool // n: 0-based request number
	reqs   int
}

func newFakeIntake(t *testing.T) *fakeIntake {
	t.Helper()
	f := &fakeIntake{t: t}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeIntake) serve(rw http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/events" {
		http.Error(rw, "not found", http.StatusNotFound)
		return
	}
	f.mu.Lock()
	n := f.reqs
	f.reqs++
	answer := f.answer
	f.mu.Unlock()
	if answer != nil && answer(rw, r, n) {
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		f.t.Errorf("Content-Type %q", ct)
	}
	var batch []map[string]any
	if err := json.NewDecoder(r.Body).Decode(&batch); err != nil {
		rw.WriteHeader(http.StatusBadRequest)
		_, _ = fmt.Fprintf(rw, `{"status":400,"error":%q}`, err.Error())
		return
	}
	f.mu.Lock()
	f.posts = append(f.posts, batch)
	type res struct {
		Index   int         `json:"index"`
		Status  string      `json:"status"`
		UUID    string      `json:"uuid,omitempty"`
		Topic   string      `json:"topic,omitempty"`
		Code    string      `json:"code,omitempty"`
		Message string      `json:"message,omitempty"`
		Errors  []Violation `json:"errors,omitempty"`
	}
	var out struct {
		Accepted int   `json:"accepted"`
		Invalid  int   `json:"invalid"`
		Events   []res `json:"events"`
	}
	for i, ev := range batch {
		f.seq++
		fields := ev
		if inner, ok := ev["event"].(map[string]any); ok {
			fields = inner
		}
		uuid := fmt.Sprintf("%032x", f.seq)
		if _, bad := fields["bad"]; bad {
			out.Invalid++
			out.Events = append(out.Events, res{Index: i, Status: "invalid", UUID: uuid, Code: "validation", Message: "/bad: not allowed",
				Errors: []Violation{{Pointer: "/bad", Reason: "additional property not allowed"}}})
			continue
		}
		out.Accepted++
		topic := "stream-topic"
		if s, ok := ev["schema"].(string); ok {
			topic = "eventlogging_" + s
		}
		out.Events = append(out.Events, res{Index: i, Status: "accepted", UUID: uuid, Topic: topic})
	}
	f.mu.Unlock()
	code := http.StatusCreated
	switch {
	case out.Accepted == 0:
		code = http.StatusBadRequest
	case out.Invalid > 0:
		code = http.StatusMultiStatus
	}
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(code)
	_ = json.NewEncoder(rw).Encode(out)
}

func (f *fakeIntake) setAnswer(a func(rw http.ResponseWriter, r *http.Request, n int) bool) {
	f.mu.Lock()
	f.answer = a
	f.mu.Unlock()
}

// events returns every event the fake stored.
func (f *fakeIntake) events() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	var all []map[string]any
	for _, b := range f.posts {
		all = append(all, b...)
	}
	return all
}

func (f *fakeIntake) batches() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.posts)
}

// results collects what OnResult gets.
type results struct {
	mu  sync.Mutex
	all []Result
}

func (r *results) add(res Result) {
	r.mu.Lock()
	r.all = append(r.all, res)
	r.mu.Unlock()
}

func (r *results) get() []Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Result(nil), r.all...)
}

func newTestClient(t *testing.T, base string, cfg Config, rs *results) *Client {
	t.Helper()
	if rs != nil {
		cfg.OnResult = rs.add
	}
	c, err := New(base, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c
}

func flush(t *testing.T, c *Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := c.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v (stats %+v)", err, c.Stats())
	}
}

// TestLogSubmitAndResults: capsules and Event Platform events are sent in
// batches; a 207 gives every event its Result: accepted with uuid and
// topic, invalid with code, message and violations.
func TestLogSubmitAndResults(t *testing.T) {
	f := newFakeIntake(t)
	var rs results
	c := newTestClient(t, f.srv.URL+"/", Config{Wiki: "enwiki", WebHost: "en.wikipedia.org", BatchSize: 3, FlushInterval: time.Hour}, &rs)
	ctx := t.Context()
	for i := range 4 {
		if err := c.Log(ctx, "SearchQuery", 5, map[string]any{"query": fmt.Sprint("q", i), "results": i}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Log(ctx, "SearchQuery", 5, map[string]any{"bad": true}); err != nil {
		t.Fatal(err)
	}
	ev := map[string]any{"$schema": "/analytics/search_satisfaction/1.0.0", "action": "click", "meta": map[string]any{"domain": "en.wikipedia.org"}}
	if err := c.Submit(ctx, "analytics.search_satisfaction", ev); err != nil {
		t.Fatal(err)
	}
	flush(t, c)

	got := rs.get()
	if len(got) != 6 {
		t.Fatalf("%d results, want 6: %+v", len(got), got)
	}
	for i, r := range got[:4] {
		if r.Status != StatusAccepted || r.UUID == "" || r.Topic != "eventlogging_SearchQuery" || r.Schema != "SearchQuery" || r.Revision != 5 || r.Err != nil {
			t.Errorf("result %d: %+v", i, r)
		}
	}
	inv := got[4]
	if inv.Status != StatusInvalid || inv.Code != "validation" || inv.Message == "" || len(inv.Violations) != 1 || inv.Violations[0].Pointer != "/bad" {
		t.Errorf("invalid event: %+v", inv)
	}
	if sub := got[5]; sub.Status != StatusAccepted || sub.Stream != "analytics.search_satisfaction" || sub.Schema != "" {
		t.Errorf("submitted event: %+v", sub)
	}
	// BatchSize 3: a full batch went at once, Flush sent the other three.
	if n := f.batches(); n != 2 {
		t.Errorf("%d POSTs, want 2", n)
	}
	sent := f.events()
	capsule := sent[0]
	if capsule["schema"] != "SearchQuery" || capsule["revision"] != 5.0 || capsule["wiki"] != "enwiki" || capsule["webHost"] != "en.wikipedia.org" {
		t.Errorf("capsule %v", capsule)
	}
	if e, _ := capsule["event"].(map[string]any); e["query"] != "q0" {
		t.Errorf("capsule event %v", capsule["event"])
	}
	ep := sent[5]
	meta, _ := ep["meta"].(map[string]any)
	if meta["stream"] != "analytics.search_satisfaction" || meta["domain"] != "en.wikipedia.org" {
		t.Errorf("meta %v", ep["meta"])
	}
	if dt, _ := ep["dt"].(string); dt == "" {
		t.Errorf("no dt in %v", ep)
	} else if _, err := time.Parse(time.RFC3339, dt); err != nil {
		t.Errorf("dt %q: %v", dt, err)
	}
	// The caller's map is not modified.
	if _, ok := ev["dt"]; ok || ev["meta"].(map[string]any)["stream"] != nil {
		t.Errorf("Submit modified the caller's event: %v", ev)
	}
	st := c.Stats()
	if st.Enqueued != 6 || st.Accepted != 5 || st.Invalid != 1 || st.Failed != 0 || st.Pending != 0 || st.Requests != 2 || st.Retries != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestSubmitNeedsSchema(t *testing.T) {
	c := newTestClient(t, "http://127.0.0.1:1", Config{}, nil)
	if err := c.Submit(t.Context(), "s", map[string]any{"a": 1}); !errors.Is(err, ErrNoSchema) {
		t.Errorf("Submit without $schema: %v, want ErrNoSchema", err)
	}
	if err := c.Submit(t.Context(), "s", map[string]any{"$schema": "/a/1.0.0", "meta": "x"}); err == nil {
		t.Error("Submit with a string meta: no error")
	}
	if err := c.Log(t.Context(), "S", 1, map[string]any{"f": func() {}}); err == nil {
		t.Error("Log of an event JSON cannot encode: no error")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := c.Log(ctx, "S", 1, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Log with a done context: %v", err)
	}
	if st := c.Stats(); st.Enqueued != 0 {
		t.Errorf("refused events were counted: %+v", st)
	}
}

func TestNewValidates(t *testing.T) {
	for _, tc := range []struct {
		url string
		cfg Config
	}{
		{"", Config{}},
		{"localhost:8080", Config{}},
		{"ftp://host", Config{}},
		{"http://", Config{}},
		{"http://host", Config{QueueSize: -1}},
		{"http://host", Config{DeliveryTimeout: -time.Second}},
	} {
		if _, err := New(tc.url, tc.cfg); err == nil {
			t.Errorf("New(%q, %+v): no error", tc.url, tc.cfg)
		}
	}
	if _, err := New("https://intake.example.org/base/", Config{}); err != nil {
		t.Errorf("New with a path: %v", err)
	}
}

// TestRetries: a dropped connection, a 500 and a 503 with Retry-After are
// retried (waiting at least Retry-After), and every event is stored once.
func TestRetries(t *testing.T) {
	f := newFakeIntake(t)
	var (
		mu    sync.Mutex
		times []time.Time
	)
	f.setAnswer(func(rw http.ResponseWriter, r *http.Request, n int) bool {
		mu.Lock()
		times = append(times, time.Now())
		mu.Unlock()
		if n < 3 {
			_, _ = io.Copy(io.Discard, r.Body)
		}
		switch n {
		case 0: // the connection drops without an answer
			conn, _, err := rw.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return true
			}
			conn.Close()
			return true
		case 1:
			http.Error(rw, "boom", http.StatusInternalServerError)
			return true
		case 2:
			rw.Header().Set("Retry-After", "1")
			rw.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(rw, `{"status":503,"error":"cannot accept events now; retry later"}`)
			return true
		}
		return false
	})
	var rs results
	c := newTestClient(t, f.srv.URL, Config{MinBackoff: 10 * time.Millisecond, MaxBackoff: 5 * time.Second}, &rs)
	for i := range 10 {
		if err := c.Log(t.Context(), "Generic", 13, map[string]any{"articleId": i, "articleTitle": "t"}); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, c)
	if got := f.events(); len(got) != 10 {
		t.Fatalf("the intake stored %d events, want 10", len(got))
	}
	for _, r := range rs.get() {
		if r.Status != StatusAccepted {
			t.Errorf("result %+v", r)
		}
	}
	st := c.Stats()
	if st.Requests != 4 || st.Retries != 3 || st.Accepted != 10 {
		t.Errorf("stats %+v, want 4 requests, 3 retries", st)
	}
	mu.Lock()
	defer mu.Unlock()
	if gap := times[3].Sub(times[2]); gap < 900*time.Millisecond {
		t.Errorf("retried %v after a 503 with Retry-After: 1", gap)
	}
	if gap := times[1].Sub(times[0]); gap > 2*time.Second {
		t.Errorf("first backoff %v, want about MinBackoff", gap)
	}
}

// TestPermanentErrors: a 400 without per-event results, a 404 and a 413
// for one event fail at once (no retry); a 413 for a batch splits it.
func TestPermanentErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"malformed", http.StatusBadRequest, `{"status":400,"error":"body is not valid JSON"}`, "body is not valid JSON"},
		{"not found", http.StatusNotFound, "404 page not found", "404 page not found"},
		{"too large", http.StatusRequestEntityTooLarge, `{"status":413,"error":"body exceeds the 4194304-byte limit"}`, "4194304"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeIntake(t)
			f.setAnswer(func(rw http.ResponseWriter, _ *http.Request, _ int) bool {
				rw.WriteHeader(tc.status)
				_, _ = io.WriteString(rw, tc.body)
				return true
			})
			var rs results
			c := newTestClient(t, f.srv.URL, Config{MinBackoff: time.Millisecond}, &rs)
			if err := c.Log(t.Context(), "S", 1, nil); err != nil {
				t.Fatal(err)
			}
			flush(t, c)
			got := rs.get()
			var he *HTTPError
			if len(got) != 1 || got[0].Status != StatusFailed || !errors.As(got[0].Err, &he) || he.StatusCode != tc.status || !strings.Contains(he.Message, tc.want) {
				t.Fatalf("results %+v", got)
			}
			if st := c.Stats(); st.Requests != 1 || st.Failed != 1 {
				t.Errorf("stats %+v", st)
			}
		})
	}
	t.Run("split", func(t *testing.T) {
		f := newFakeIntake(t)
		f.setAnswer(func(rw http.ResponseWriter, r *http.Request, _ int) bool {
			var batch []json.RawMessage
			body, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(body, &batch)
			if len(batch) > 2 {
				rw.WriteHeader(http.StatusRequestEntityTooLarge)
				return true
			}
			r.Body = io.NopCloser(strings.NewReader(string(body)))
			return false
		})
		var rs results
		c := newTestClient(t, f.srv.URL, Config{FlushInterval: time.Hour}, &rs)
		for i := range 7 {
			if err := c.Log(t.Context(), "S", 1, map[string]any{"i": i}); err != nil {
				t.Fatal(err)
			}
		}
		flush(t, c)
		if got := f.events(); len(got) != 7 {
			t.Fatalf("stored %d events, want 7", len(got))
		}
		if st := c.Stats(); st.Accepted != 7 || st.Failed != 0 {
			t.Errorf("stats %+v", st)
		}
	})
}

// TestDeliveryTimeout: an intake that always answers 503 fails the batch
// with ErrDeliveryTimeout wrapping the last answer.
func TestDeliveryTimeout(t *testing.T) {
	f := newFakeIntake(t)
	f.setAnswer(func(rw http.ResponseWriter, _ *http.Request, _ int) bool {
		rw.WriteHeader(http.StatusServiceUnavailable)
		return true
	})
	var rs results
	c := newTestClient(t, f.srv.URL, Config{MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, DeliveryTimeout: 300 * time.Millisecond}, &rs)
	if err := c.Log(t.Context(), "S", 1, nil); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	flush(t, c)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("gave up after %v, DeliveryTimeout is 300ms", d)
	}
	got := rs.get()
	var he *HTTPError
	if len(got) != 1 || got[0].Status != StatusFailed || !errors.Is(got[0].Err, ErrDeliveryTimeout) || !errors.As(got[0].Err, &he) || he.StatusCode != 503 {
		t.Fatalf("results %+v", got)
	}
	if st := c.Stats(); st.Retries < 2 {
		t.Errorf("stats %+v: want several retries", st)
	}
}

// TestQueueFull: while the intake hangs, the queue fills and Log refuses
// with ErrQueueFull; once it answers, the queued events are delivered.
func TestQueueFull(t *testing.T) {
	f := newFakeIntake(t)
	release := make(chan struct{})
	arrived := make(chan struct{}, 10)
	f.setAnswer(func(_ http.ResponseWriter, _ *http.Request, n int) bool {
		if n == 0 {
			arrived <- struct{}{}
			<-release
		}
		return false
	})
	c := newTestClient(t, f.srv.URL, Config{QueueSize: 3, BatchSize: 1}, nil)
	if err := c.Log(t.Context(), "S", 1, map[string]any{"i": 0}); err != nil {
		t.Fatal(err)
	}
	<-arrived // event 0 is in flight; the queue is empty
	for i := 1; i <= 3; i++ {
		if err := c.Log(t.Context(), "S", 1, map[string]any{"i": i}); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
	if err := c.Log(t.Context(), "S", 1, map[string]any{"i": 4}); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("fifth event: %v, want ErrQueueFull", err)
	}
	if st := c.Stats(); st.QueueFull != 1 || st.Enqueued != 4 || st.Pending != 4 {
		t.Errorf("stats %+v", st)
	}
	close(release)
	flush(t, c)
	if got := f.events(); len(got) != 4 {
		t.Fatalf("stored %d events, want 4", len(got))
	}
}

// TestFlushAndClose: nothing is sent before FlushInterval unless Flush
// asks; Close sends what is queued; Log after Close is refused.
func TestFlushAndClose(t *testing.T) {
	f := newFakeIntake(t)
	c := newTestClient(t, f.srv.URL, Config{FlushInterval: time.Hour}, nil)
	for i := range 3 {
		if err := c.Log(t.Context(), "S", 1, map[string]any{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.batches(); n != 0 {
		t.Fatalf("%d POSTs before the flush interval", n)
	}
	flush(t, c)
	if n := len(f.events()); n != 3 {
		t.Fatalf("after Flush the intake has %d events, want 3", n)
	}
	if err := c.Log(t.Context(), "S", 1, map[string]any{"i": 3}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := len(f.events()); n != 4 {
		t.Fatalf("after Close the intake has %d events, want 4", n)
	}
	if err := c.Log(t.Context(), "S", 1, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Log after Close: %v, want ErrClosed", err)
	}
	if err := c.Close(t.Context()); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := c.Flush(t.Context()); err != nil {
		t.Errorf("Flush after Close: %v", err)
	}
}

// TestCloseDeadline: with the intake down, Close gives up when its context
// ends: the events fail with ErrClosed and Close returns the context error.
func TestCloseDeadline(t *testing.T) {
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // connections are refused
	var rs results
	c := newTestClient(t, "http://"+addr, Config{MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}, &rs)
	for i := range 5 {
		if err := c.Log(t.Context(), "S", 1, map[string]any{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := c.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close: %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close took %v with a 300ms deadline", d)
	}
	got := rs.get()
	if len(got) != 5 {
		t.Fatalf("%d results, want 5", len(got))
	}
	for _, r := range got {
		// The last error: the refused connection, or the request Close
		// abandoned.
		if r.Status != StatusFailed || !errors.Is(r.Err, ErrClosed) || (!strings.Contains(r.Err.Error(), "refused") && !strings.Contains(r.Err.Error(), "canceled")) {
			t.Errorf("result %+v", r)
		}
	}
	if st := c.Stats(); st.Failed != 5 || st.Pending != 0 || st.Retries == 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestConcurrentUse: many goroutines log while others flush; every event
// gets exactly one Result and the intake stores each once.
func TestConcurrentUse(t *testing.T) {
	f := newFakeIntake(t)
	var rs results
	c := newTestClient(t, f.srv.URL, Config{BatchSize: 50, FlushInterval: 5 * time.Millisecond}, &rs)
	var wg sync.WaitGroup
	const writers, each = 8, 250
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := c.Log(t.Context(), "S", 1, map[string]any{"w": w, "i": i}); err != nil {
					t.Error(err)
					return
				}
				if i%100 == 0 {
					flush(t, c)
				}
			}
		})
	}
	wg.Wait()
	if err := c.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range f.events() {
		ev := e["event"].(map[string]any)
		seen[fmt.Sprint(ev["w"], "/", ev["i"])] = true
	}
	if len(seen) != writers*each || len(f.events()) != writers*each || len(rs.get()) != writers*each {
		t.Fatalf("%d distinct events stored, %d stored, %d results; want %d", len(seen), len(f.events()), len(rs.get()), writers*each)
	}
}

// TestNoGoroutineLeak: after Close, the client leaves no goroutine: not
// its sender, not its connections — also when Close gave up on a dead
// intake, and when nothing was ever logged.
func TestNoGoroutineLeak(t *testing.T) {
	f := newFakeIntake(t)
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	before := runtime.NumGoroutine()
	for i := range 5 {
		c, err := New(f.srv.URL, Config{FlushInterval: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		for j := range 20 {
			if err := c.Log(t.Context(), "S", 1, map[string]any{"i": i, "j": j}); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	idle, err := New(f.srv.URL, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := idle.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	down, err := New(dead, Config{MinBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := down.Log(t.Context(), "S", 1, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if err := down.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close with the intake down: %v", err)
	}
	// Server-side connection goroutines end when they see the client's
	// close: poll with a deadline.
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after Close, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond) // polling interval
	}
	if n := len(f.events()); n != 100 {
		t.Errorf("stored %d events, want 100", n)
	}
}
