package logging

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/eventlogging/eventlogging/internal/testsupport"
)

func TestHandlerKeysOnce(t *testing.T) {
	tests := []struct {
		name string
		log  func(l *slog.Logger)
		want string // the JSON line without time and level
	}{
		{"component given twice", func(l *slog.Logger) {
			l.With("component", "sink").With("component", "sqlsink", "dialect", "sqlite").Info("batch written", "rows", 3)
		}, `{"msg":"batch written","component":"sqlsink","dialect":"sqlite","rows":3}`},
		{"same key in one With", func(l *slog.Logger) {
			l.With("component", "a", "component", "b").Info("m")
		}, `{"msg":"m","component":"b"}`},
		{"record repeats a With key", func(l *slog.Logger) {
			l.With("component", "registry", "topic", "t1").Info("m", "topic", "t2")
		}, `{"msg":"m","component":"registry","topic":"t2"}`},
		{"record repeats its own key", func(l *slog.Logger) {
			l.Info("m", "n", 1, "n", 2)
		}, `{"msg":"m","n":2}`},
		{"built-in keys", func(l *slog.Logger) {
			l.With("level", "x").Info("m", "msg", "y", "time", "z")
		}, `{"msg":"m","attr_level":"x","attr_msg":"y","attr_time":"z"}`},
		{"groups are separate objects", func(l *slog.Logger) {
			l.With("component", "c").WithGroup("g").With("component", "d").Info("m", "component", "e", "k", 1)
		}, `{"msg":"m","component":"c","g":{"k":1,"component":"e"}}`},
		{"inside a group value", func(l *slog.Logger) {
			l.Info("m", slog.Group("g", "a", 1, "a", 2))
		}, `{"msg":"m","g":{"a":2}}`},
		{"inlined group", func(l *slog.Logger) {
			l.With("a", 1).Info("m", slog.Group("", "a", 2, "b", 3))
		}, `{"msg":"m","a":2,"b":3}`},
		{"no attributes", func(l *slog.Logger) { l.Warn("m") }, `{"msg":"m"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			tt.log(slog.New(NewHandler(&buf, JSON, slog.LevelDebug)))
			line := buf.Bytes()
			if dups, err := testsupport.DuplicateKeys(line); err != nil || len(dups) > 0 {
				t.Fatalf("%s: duplicate keys %v (%v)", line, dups, err)
			}
			var got map[string]any
			if err := json.Unmarshal(line, &got); err != nil {
				t.Fatal(err)
			}
			if got["time"] == nil || got["level"] == nil {
				t.Errorf("%s: no time or level", line)
			}
			delete(got, "time")
			delete(got, "level")
			var want map[string]any
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			if string(g) != string(w) {
				t.Errorf("got  %s\nwant %s", g, w)
			}
		})
	}
}

func TestHandlerText(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(NewHandler(&buf, Text, slog.LevelInfo))
	l.With("component", "sink").With("component", "sqlsink").Info("batch written", "rows", 3)
	l.Debug("hidden")
	got := buf.String()
	if strings.Count(got, "component=") != 1 || !strings.Contains(got, "component=sqlsink rows=3") || strings.Contains(got, "hidden") {
		t.Errorf("text line: %q", got)
	}
}

func TestHandlerLevelChanges(t *testing.T) {
	var buf bytes.Buffer
	var level slog.LevelVar
	level.Set(slog.LevelWarn)
	l := slog.New(NewHandler(&buf, JSON, &level)).With("component", "x")
	l.Info("before")
	level.Set(slog.LevelDebug)
	l.Debug("after")
	if s := buf.String(); strings.Contains(s, "before") || !strings.Contains(s, `"msg":"after"`) {
		t.Errorf("log: %q", s)
	}
}

func TestHandlerConcurrentLines(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	w := writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	})
	l := slog.New(NewHandler(w, JSON, slog.LevelInfo))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			cl := l.With("component", "c", "worker", i)
			for j := range 100 {
				cl.Info("m", "j", j, "worker", i)
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 800 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, line := range lines {
		if dups, err := testsupport.DuplicateKeys([]byte(line)); err != nil || len(dups) > 0 {
			t.Fatalf("%s: %v %v", line, dups, err)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]Format{"": Text, "text": Text, "json": JSON} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseFormat("JSON "); err == nil {
		t.Error("ParseFormat accepts a bad format")
	}
}

func TestRequests(t *testing.T) {
	next := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if _, ok := rw.(http.Flusher); !ok {
			t.Error("the request log hides http.Flusher")
		}
		rw.WriteHeader(http.StatusTeapot)
		_, _ = rw.Write([]byte("short and stout"))
	})
	for _, tt := range []struct {
		sample float64
		want   int
	}{{0, 0}, {1, 20}} {
		var buf bytes.Buffer
		h := Requests(next, slog.New(NewHandler(&buf, JSON, slog.LevelInfo)).With("component", "http"), tt.sample)
		for range 20 {
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/beacon/event?%7B%22secret%22%3A1%7D;", nil))
		}
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if buf.Len() == 0 {
			lines = nil
		}
		if len(lines) != tt.want {
			t.Fatalf("sample %v: %d lines, want %d", tt.sample, len(lines), tt.want)
		}
		for _, line := range lines {
			var got map[string]any
			if err := json.Unmarshal([]byte(line), &got); err != nil {
				t.Fatal(err)
			}
			if got["msg"] != "http request" || got["path"] != "/beacon/event" || got["status"] != float64(418) || got["bytes"] != float64(15) || got["method"] != "GET" || got["duration_ms"] == nil || got["component"] != "http" {
				t.Errorf("request line %s", line)
			}
			if strings.Contains(line, "secret") || strings.Contains(line, "192.0.2.1") {
				t.Errorf("request line logs the query or the client address: %s", line)
			}
		}
	}
	// A share in between logs some, not all.
	var buf bytes.Buffer
	h := Requests(next, slog.New(NewHandler(&buf, JSON, slog.LevelInfo)), 0.5)
	for range 400 {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/", nil))
	}
	if n := strings.Count(buf.String(), "\n"); n < 100 || n > 300 {
		t.Errorf("sample 0.5 logged %d of 400 requests", n)
	}
}

func BenchmarkHandler(b *testing.B) {
	l := slog.New(NewHandler(io.Discard, JSON, slog.LevelInfo)).With("component", "process", "topic", "t")
	b.ReportAllocs()
	for b.Loop() {
		l.Info("batch committed", "records", 1000, "partition", 3)
	}
}
