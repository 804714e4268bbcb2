package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/inspect"
)

// sseFrame is one server-sent event as the client sees it.
type sseFrame struct {
	event   string // "" for a plain data event
	data    string
	comment string
	retry   string
}

// readFrame reads one frame (up to a blank line).
func readFrame(r *bufio.Reader) (sseFrame, error) {
	var f sseFrame
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return f, err
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			return f, nil
		}
		if c, ok := strings.CutPrefix(line, ":"); ok {
			f.comment = strings.TrimSpace(c)
			continue
		}
		field, value, _ := strings.Cut(line, ": ")
		switch field {
		case "event":
			f.event = value
		case "data":
			f.data = value
		case "retry":
			f.retry = value
		}
	}
}

// openTail starts a live tail against srv, returning the stream and a
// function that disconnects.
func openTail(t *testing.T, srv *httptest.Server, topic string) (*bufio.Reader, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/tail?topic="+topic, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		resp.Body.Close()
		t.Fatalf("tail: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	closeFn := func() {
		cancel()
		resp.Body.Close()
	}
	t.Cleanup(closeFn)
	return bufio.NewReader(resp.Body), closeFn
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond) // polling interval, not synchronisation
	}
}

func TestTailStream(t *testing.T) {
	f := newFake()
	var tailReturned atomic.Bool
	f.tail = func(ctx context.Context, topic string, fn func(inspect.TailEvent) error) error {
		defer tailReturned.Store(true)
		for i, v := range []string{`{"a":1}`, `not json <x>`, `"s"`} {
			if err := fn(inspect.TailEvent{Topic: topic, Partition: 1, Offset: int64(i), Time: testNow, Value: json.RawMessage(v)}); err != nil {
				return err
			}
		}
		<-ctx.Done()
		return ctx.Err()
	}
	h := newTestHandler(t, f, Config{})
	h.heartbeat = 20 * time.Millisecond
	srv := httptest.NewServer(h)
	defer srv.Close()

	r, disconnect := openTail(t, srv, "eventlogging_NavigationTiming")
	var events []inspect.TailEvent
	heartbeat := false
	for len(events) < 3 || !heartbeat {
		fr, err := readFrame(r)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		switch {
		case fr.comment == "heartbeat":
			heartbeat = true
		case fr.event == "" && fr.data != "":
			var ev inspect.TailEvent
			if err := json.Unmarshal([]byte(fr.data), &ev); err != nil {
				t.Fatalf("frame %q: %v", fr.data, err)
			}
			events = append(events, ev)
		}
	}
	if string(events[0].Value) != `{"a":1}` || events[0].Topic != "eventlogging_NavigationTiming" || events[0].Partition != 1 {
		t.Errorf("first event %+v", events[0])
	}
	var s string
	if err := json.Unmarshal(events[1].Value, &s); err != nil || s != "not json <x>" {
		t.Errorf("a value that is not JSON arrives as %s", events[1].Value)
	}
	disconnect()
	waitFor(t, "Tail to return after the client left", 5*time.Second, tailReturned.Load)
}

func TestTailEnds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		event string
		want  string
	}{
		{"backend error", errors.New("fetch: broker gone"), "tail-error", "broker gone"},
		{"backend done", nil, "end", "{}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			f.tail = func(_ context.Context, topic string, fn func(inspect.TailEvent) error) error {
				if err := fn(inspect.TailEvent{Topic: topic, Value: json.RawMessage(`1`)}); err != nil {
					return err
				}
				return tc.err
			}
			srv := httptest.NewServer(newTestHandler(t, f, Config{}))
			defer srv.Close()
			r, _ := openTail(t, srv, "eventlogging-client-side")
			var got []sseFrame
			for {
				fr, err := readFrame(r)
				if err != nil {
					break // the handler returned: the stream ends
				}
				got = append(got, fr)
			}
			if len(got) < 3 || got[1].data == "" || got[len(got)-1].event != tc.event || !strings.Contains(got[len(got)-1].data, tc.want) {
				t.Errorf("frames %+v, want a record then event %q with %q", got, tc.event, tc.want)
			}
		})
	}
}

func TestTailRefusesUnknownTopics(t *testing.T) {
	f := newFake()
	h := newTestHandler(t, f, Config{})
	for target, status := range map[string]int{
		"/api/tail":                  http.StatusBadRequest,
		"/api/tail?topic=__internal": http.StatusNotFound,
	} {
		var e apiError
		decodeJSON(t, get(t, h, target), status, &e)
	}
	if f.tailsRun != 0 {
		t.Errorf("Tail ran %d times for refused requests", f.tailsRun)
	}
}

// TestTailSlowClient runs a backend that produces as fast as it can to a
// client that stops reading: the handler must queue at most TailBuffer
// frames, drop and report the rest, keep its memory bounded, and stop its
// Tail and every goroutine when the client leaves.
func TestTailSlowClient(t *testing.T) {
	const (
		buffer    = 64
		valueSize = 4 << 10
		// produced while the client does not read: 160 MB if buffered.
		produceWhileStalled = 40_000
	)
	baseline := runtime.NumGoroutine()

	var produced, tails atomic.Int64
	f := newFake()
	f.tail = func(ctx context.Context, topic string, fn func(inspect.TailEvent) error) error {
		tails.Add(1)
		defer tails.Add(-1)
		pad := strings.Repeat("x", valueSize)
		for i := int64(0); ; i++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			// A fresh value per record, as a real consumer delivers.
			v := fmt.Appendf(make([]byte, 0, valueSize+32), `{"n":%d,"pad":%q}`, i, pad)
			if err := fn(inspect.TailEvent{Topic: topic, Offset: i, Value: v}); err != nil {
				return err
			}
			produced.Add(1)
		}
	}
	h := newTestHandler(t, f, Config{TailBuffer: buffer})
	h.dropReport = 5 * time.Millisecond
	var maxQueued atomic.Int64
	h.onQueued = func(n int) {
		for {
			m := maxQueued.Load()
			if int64(n) <= m || maxQueued.CompareAndSwap(m, int64(n)) {
				return
			}
		}
	}
	var active atomic.Int64 // handlers running
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		active.Add(1)
		defer active.Add(-1)
		h.ServeHTTP(rw, r)
	}))

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	r, disconnect := openTail(t, srv, "eventlogging-client-side")
	for {
		fr, err := readFrame(r)
		if err != nil {
			t.Fatal(err)
		}
		if fr.data != "" {
			break // the stream is live
		}
	}
	// Stall: read nothing while the backend produces.
	start := produced.Load()
	waitFor(t, "the backend to produce while the client stalls", 60*time.Second, func() bool {
		return produced.Load()-start >= produceWhileStalled
	})
	runtime.GC()
	var during runtime.MemStats
	runtime.ReadMemStats(&during)
	grown := int64(during.HeapAlloc) - int64(before.HeapAlloc)
	const bound = 32 << 20 // generous: the queue holds buffer × 4 KiB
	if grown > bound {
		t.Errorf("heap grew by %d MiB while the client stalled, want < %d MiB", grown>>20, bound>>20)
	}
	if q := maxQueued.Load(); q > buffer || q == 0 {
		t.Errorf("at most %d frames queued, want 1..%d", q, buffer)
	}

	// Resume reading: the count of dropped frames arrives.
	var dropped int64
	for dropped == 0 {
		fr, err := readFrame(r)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if fr.event == "dropped" {
			dropped, err = strconv.ParseInt(fr.data, 10, 64)
			if err != nil {
				t.Fatalf("dropped %q: %v", fr.data, err)
			}
		}
	}
	t.Logf("produced %d, dropped %d, heap grew by %d KiB", produced.Load(), dropped, grown>>10)

	// Disconnect: the handler and its Tail stop, and every goroutine
	// with them.
	disconnect()
	waitFor(t, "the handler to return", 10*time.Second, func() bool { return active.Load() == 0 })
	if n := tails.Load(); n != 0 {
		t.Errorf("%d Tail calls still running after the handler returned", n)
	}
	srv.Close()
	srv.Client().CloseIdleConnections()
	waitFor(t, fmt.Sprintf("goroutines back to %d", baseline), 10*time.Second, func() bool {
		return runtime.NumGoroutine() <= baseline
	})
}
