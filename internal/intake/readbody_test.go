package intake

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// TestReadBody: bodies with and without a Content-Length, empty, at the
// limit and past it come back whole, or as *http.MaxBytesError.
func TestReadBody(t *testing.T) {
	const limit = readAhead + 10_000
	for _, tt := range []struct {
		name     string
		size     int
		declared bool // Content-Length set; else chunked (-1)
		tooBig   bool
	}{
		{"empty", 0, true, false},
		{"small", 100, true, false},
		{"10-event POST", 8_421, true, false},
		{"past what is read ahead", readAhead + 5_000, true, false},
		{"at the limit", limit, true, false},
		{"past the limit", limit + 1, true, true},
		{"chunked, small", 100, false, false},
		{"chunked, grows several times", 9_000, false, false},
		{"chunked, at the limit", limit, false, false},
		{"chunked, past the limit", 3 * limit, false, true},
		{"declared past the limit", 2 * limit, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := bytes.Repeat([]byte("0123456789abcdef"), tt.size/16+1)[:tt.size]
			r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/v1/events", bytes.NewReader(body))
			if !tt.declared {
				r.ContentLength = -1
			}
			got, err := readBody(httptest.NewRecorder(), r, limit, nil)
			var tooBig *http.MaxBytesError
			switch {
			case tt.tooBig:
				if !errors.As(err, &tooBig) {
					t.Fatalf("err = %v, want *http.MaxBytesError", err)
				}
			case err != nil:
				t.Fatal(err)
			case !bytes.Equal(got, body):
				t.Fatalf("read %d bytes, want the %d sent", len(got), len(body))
			}
		})
	}
}

// TestReadBodyShortOfContentLength: a body that ends before its declared
// Content-Length is an error, not a shorter body.
func TestReadBodyShortOfContentLength(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if _, err := readBody(rw, r, 1<<20, nil); err != nil {
			rw.WriteHeader(http.StatusBadRequest)
			return
		}
		rw.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	conn, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// 100 bytes declared, 10 sent, then the client closes its side.
	if _, err := conn.Write([]byte("POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n[{\"a\":1}]\n")); err != nil {
		t.Fatal(err)
	}
	_ = conn.(*net.TCPConn).CloseWrite()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d, want 400 for a body short of its Content-Length", resp.StatusCode)
	}
}

// BenchmarkReadBody: a 10-event POST's body of the standard workload's
// size (8,421 bytes), read by readBody and, for comparison, by
// io.ReadAll as before.
func BenchmarkReadBody(b *testing.B) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 8_421/16+1)[:8_421]
	for _, bb := range []struct {
		name string
		read func(rw http.ResponseWriter, r *http.Request) ([]byte, error)
	}{
		{"readBody", func(rw http.ResponseWriter, r *http.Request) ([]byte, error) { return readBody(rw, r, 1<<20, nil) }},
		{"io.ReadAll", func(rw http.ResponseWriter, r *http.Request) ([]byte, error) {
			return io.ReadAll(http.MaxBytesReader(rw, r.Body, 1<<20))
		}},
	} {
		b.Run(bb.name, func(b *testing.B) {
			rw := httptest.NewRecorder()
			rd := bytes.NewReader(body)
			r := httptest.NewRequestWithContext(b.Context(), http.MethodPost, "/v1/events", rd)
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				rd.Reset(body)
				r.Body = io.NopCloser(rd)
				if got, err := bb.read(rw, r); err != nil || len(got) != len(body) {
					b.Fatal(len(got), err)
				}
			}
		})
	}
}

// TestReadBodyBoundsReadAhead: a request that declares 4 MiB and sends 10
// bytes gets a buffer of at most readAhead, not of the declared size.
func TestReadBodyBoundsReadAhead(t *testing.T) {
	r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/v1/events", strings.NewReader(`[{"a":1}]`))
	r.ContentLength = 4 << 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b, err := readBody(httptest.NewRecorder(), r, 4<<20, nil)
	runtime.ReadMemStats(&after)
	if err != nil || string(b) != `[{"a":1}]` {
		t.Fatalf("%q, %v", b, err)
	}
	if cap(b) > readAhead+1 {
		t.Fatalf("buffer of %d bytes for a body of %d", cap(b), len(b))
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 2*readAhead {
		t.Fatalf("%d bytes allocated for a body of %d that declared 4 MiB", got, len(b))
	}
}
