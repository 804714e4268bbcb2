package loadgen

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// rawTestClient returns the client a worker would use for srv's URL plus
// path.
func rawTestClient(t *testing.T, srvURL, path string, timeout time.Duration) client {
	t.Helper()
	u, err := url.Parse(srvURL + path)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(u, http.DefaultClient, timeout)
	if _, ok := c.(*rawClient); !ok {
		t.Fatalf("client for %s is %T, want *rawClient", u, c)
	}
	t.Cleanup(c.close)
	return c
}

// startCounting starts srv, counting the connections it accepts.
func startCounting(srv *httptest.Server, conns *atomic.Int32) {
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
}

// TestRawClientRequests: what the server receives is the request meant
// (method, target under the URL's path, Host, Content-Type and
// Content-Length, body), answers are read whole (Content-Length or
// chunked) or discarded, and one connection carries all the requests.
func TestRawClientRequests(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/intake/beacon/event" && r.URL.RawQuery == "a%20b;":
			if r.Host != r.Context().Value(http.LocalAddrContextKey).(net.Addr).String() || r.Header.Get("Content-Length") != "" || r.Header.Get("Authorization") != "" {
				http.Error(w, "host "+r.Host, http.StatusBadRequest)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		case r.Method == http.MethodPost && r.URL.Path == "/intake/v1/events" && r.URL.RawQuery == "":
			if r.Header.Get("Content-Type") != "application/json" || r.ContentLength != int64(len(body)) || string(body) != `[{"a":1}]` {
				http.Error(w, "bad post", http.StatusBadRequest)
				return
			}
			// Written in two flushed parts: a chunked answer.
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"events":`)
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, `[{"index":0,"status":"accepted"}]}`)
		case r.URL.RawQuery == "hasty=true":
			w.WriteHeader(http.StatusAccepted)
			_, _ = io.WriteString(w, strings.Repeat("x", 100_000)) // discarded
		default:
			http.Error(w, r.Method+" "+r.URL.String(), http.StatusNotFound)
		}
	}))
	startCounting(srv, &conns)
	defer srv.Close()
	c := rawTestClient(t, srv.URL, "/intake", 5*time.Second)
	ctx := t.Context()
	for range 3 {
		status, _, err := c.do(ctx, http.MethodGet, "/intake/beacon/event?a%20b;", nil, false, nil)
		if err != nil || status != http.StatusNoContent {
			t.Fatalf("beacon: %d, %v", status, err)
		}
		status, answer, err := c.do(ctx, http.MethodPost, "/intake/v1/events", []byte(`[{"a":1}]`), true, nil)
		if err != nil || status != http.StatusCreated || string(answer) != `{"events":[{"index":0,"status":"accepted"}]}` {
			t.Fatalf("post: %d %q, %v", status, answer, err)
		}
		status, answer, err = c.do(ctx, http.MethodPost, "/intake/v1/events?hasty=true", []byte(`[{"a":1}]`), false, answer)
		if err != nil || status != http.StatusAccepted || len(answer) != 0 {
			t.Fatalf("hasty: %d, %d bytes kept, %v", status, len(answer), err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

// TestRawClientClosedConnections: a server that closes the connection
// after its answer (Connection: close) or while it is idle (its idle
// timeout) costs no request: the client dials again.
func TestRawClientClosedConnections(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("close") != "" {
			w.Header().Set("Connection", "close")
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	srv.Config.IdleTimeout = 20 * time.Millisecond
	startCounting(srv, &conns)
	defer srv.Close()
	c := rawTestClient(t, srv.URL, "", 5*time.Second)
	c.(*rawClient).idleRedial = 100 * time.Millisecond
	ctx := t.Context()
	for i, target := range []string{"/a?close=1", "/b", "/c"} {
		if i == 2 {
			time.Sleep(200 * time.Millisecond) // the server closes the idle connection
		}
		if status, _, err := c.do(ctx, http.MethodGet, target, nil, false, nil); err != nil || status != http.StatusNoContent {
			t.Fatalf("request %d (%s): %d, %v", i, target, status, err)
		}
	}
	if n := conns.Load(); n != 3 {
		t.Errorf("%d connections, want 3 (a close, then an idle timeout)", n)
	}
}

// rawServer accepts connections on a loopback port and hands each to
// serve, for answers net/http's server would not give.
func rawServer(t *testing.T, serve func(conn net.Conn, br *bufio.Reader)) string {
	t.Helper()
	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				serve(conn, bufio.NewReader(conn))
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// TestRawClientNoResend: a POST written to a reused connection whose
// server then closes it without an answer is an error, not sent again:
// the server may have taken its events.
func TestRawClientNoResend(t *testing.T) {
	var posts atomic.Int32
	url := rawServer(t, func(conn net.Conn, br *bufio.Reader) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, req.Body)
			if req.Method == http.MethodPost {
				posts.Add(1)
				return // taken, then the connection is gone
			}
			_, _ = io.WriteString(conn, "HTTP/1.1 204 No Content\r\n\r\n")
		}
	})
	c := rawTestClient(t, url, "", 5*time.Second)
	ctx := t.Context()
	if status, _, err := c.do(ctx, http.MethodGet, "/beacon/event?x;", nil, false, nil); err != nil || status != http.StatusNoContent {
		t.Fatalf("first request: %d, %v", status, err)
	}
	if status, _, err := c.do(ctx, http.MethodPost, "/v1/events", []byte(`[{}]`), true, nil); err == nil {
		t.Errorf("unanswered POST: status %d, no error", status)
	}
	if n := posts.Load(); n != 1 {
		t.Errorf("the server received the POST %d times, want 1", n)
	}
}

// TestRawClientInformational: 1xx answers before the answer are skipped,
// and the next request reads its own answer.
func TestRawClientInformational(t *testing.T) {
	url := rawServer(t, func(conn net.Conn, br *bufio.Reader) {
		for n := 0; ; n++ {
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			_, _ = io.WriteString(conn, "HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n")
			if n%2 == 1 {
				_, _ = io.WriteString(conn, "HTTP/1.1 100 Continue\r\n\r\n")
			}
			_, _ = io.WriteString(conn, "HTTP/1.1 20"+strconv.Itoa(n%2)+" OK\r\nContent-Length: 0\r\n\r\n")
		}
	})
	c := rawTestClient(t, url, "", 5*time.Second)
	for i, want := range []int{200, 201, 200} {
		if status, _, err := c.do(t.Context(), http.MethodGet, "/", nil, false, nil); err != nil || status != want {
			t.Errorf("request %d: %d, %v; want %d", i, status, err, want)
		}
	}
}

// TestRunURLPathAndUser: the URL's path prefixes the intake's routes, and
// its user and password are sent as Basic authentication, as net/http
// would.
func TestRunURLPathAndUser(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pw, ok := r.BasicAuth()
		mu.Lock()
		seen[fmt.Sprintf("%s %s %v %s %s", r.Method, r.URL.Path, ok, user, pw)]++
		mu.Unlock()
		if r.Method == http.MethodGet {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	u := strings.Replace(srv.URL, "http://", "http://ann:s%3Dcret@", 1) + "/in%20take"
	for _, mode := range []Mode{ModeBeacon, ModeHasty} {
		rep, err := Run(t.Context(), Config{
			URL: u, Mode: mode, Batch: 2, Events: 4, Concurrency: 1,
			Generator: testGenerator(t, "path1", 0), RunID: "path1", Logger: quietLogger(),
		})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Events.Accepted != 4 {
			t.Errorf("%s: %d of 4 events accepted", mode, rep.Events.Accepted)
		}
	}
	want := map[string]int{"GET /in take/beacon/event true ann s=cret": 4, "POST /in take/v1/events true ann s=cret": 2}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("requests %v, want %v", seen, want)
	}
}

// TestRawClientGivesUp: a server that does not answer fails the request
// after the timeout, cancelling the context ends a request at once, and
// an address nobody listens on is an error (no retry loop).
func TestRawClientGivesUp(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fast" {
			return
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)

	c := rawTestClient(t, srv.URL, "", 100*time.Millisecond)
	t0 := time.Now()
	_, _, err := c.do(t.Context(), http.MethodGet, "/slow", nil, false, nil)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || time.Since(t0) > 5*time.Second {
		t.Errorf("unanswered request: %v after %v, want a timeout after 100ms", err, time.Since(t0))
	}

	// A request whose context is cancelled ends at once, also when the
	// connection was opened for an earlier request's context.
	c = rawTestClient(t, srv.URL, "", time.Minute)
	if _, _, err := c.do(t.Context(), http.MethodGet, "/fast", nil, false, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	t0 = time.Now()
	if _, _, err := c.do(ctx, http.MethodGet, "/slow", nil, false, nil); err == nil || time.Since(t0) > 5*time.Second {
		t.Errorf("cancelled request: %v after %v, want an error at once", err, time.Since(t0))
	}

	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	c = rawTestClient(t, "http://"+addr, "", time.Second)
	if _, _, err := c.do(t.Context(), http.MethodGet, "/", nil, false, nil); err == nil {
		t.Error("a request to a closed port succeeded")
	}
}
