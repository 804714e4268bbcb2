package logging

import (
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"
)

// Requests returns next logging a share sample (0 to 1) of its requests,
// chosen at random, each as one line "http request" with method, path,
// status, bytes and duration_ms, after the answer. The query string, the
// client address and the headers are never logged: beacons carry the event
// in the query, and client IPs stay out of the logs (process.ip). With
// sample 0 or less next is returned as it is.
func Requests(next http.Handler, log *slog.Logger, sample float64) http.Handler {
	if sample <= 0 || log == nil {
		return next
	}
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if sample < 1 && rand.Float64() >= sample {
			next.ServeHTTP(rw, r)
			return
		}
		start := time.Now()
		w := &recorder{ResponseWriter: rw}
		defer func() {
			status := w.status
			if status == 0 {
				status = http.StatusOK
			}
			log.Info("http request", "method", r.Method, "path", r.URL.Path, "status", status,
				"bytes", w.bytes, "duration_ms", float64(time.Since(start).Microseconds())/1000)
		}()
		next.ServeHTTP(w, r)
	})
}

// recorder records the status and the body size of an answer; it keeps
// http.Flusher (the dashboard's live tail) and http.ResponseController
// working.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code // not an informational 1xx
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Flush implements http.Flusher when the underlying writer does.
func (w *recorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
