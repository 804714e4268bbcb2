package registry

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkGetSchemaByID measures GET /schemas/ids/{id} through the
// handler (no network): the request deserializers make for every id they
// have not cached.
func BenchmarkGetSchemaByID(b *testing.B) {
	in := newInstance(b, nil)
	stats, err := in.r.ImportDir(b.Context(), examples)
	if err != nil || stats.Registered == 0 {
		b.Fatalf("ImportDir = %+v, %v", stats, err)
	}
	h := in.r.Handler()
	req := httptest.NewRequestWithContext(b.Context(), http.MethodGet, "/schemas/ids/13317883", nil)
	rw := httptest.NewRecorder()
	h.ServeHTTP(rw, req)
	if rw.Code != http.StatusOK {
		b.Fatalf("status %d: %s", rw.Code, rw.Body)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rw := &discardWriter{h: http.Header{}}
		h.ServeHTTP(rw, req)
		if rw.code != http.StatusOK {
			b.Fatalf("status %d", rw.code)
		}
	}
}

// discardWriter is a ResponseWriter that keeps only the status.
type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }
