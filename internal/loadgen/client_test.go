package loadgen

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
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
			if r.Host != r.Context().Value(http.LocalAddrContextKey).(net.Addr).String() || r.ContentLength != 0 {
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

// TestRawClientGivesUp: a server that does not answer fails the request
// after the timeout, cancelling the context ends a request at once, and
// an address nobody listens on is an error (no retry loop).
func TestRawClientGivesUp(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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

	c = rawTestClient(t, srv.URL, "", time.Minute)
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
