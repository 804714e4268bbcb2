package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/eventlogging/eventlogging/internal/kafka/schemalog"
)

// instance is a Registry running on a memLog, served by an httptest
// server under the /registry prefix, as standalone mounts it.
type instance struct {
	r     *Registry
	log   *memLog
	srv   *httptest.Server
	base  string // srv.URL + "/registry"
	topic *memTopic
}

// newInstance starts a registry on topic (a new one when nil). The first
// instance of a topic is its leader.
func newInstance(t testing.TB, topic *memTopic, opts ...func(*Config)) *instance {
	t.Helper()
	if topic == nil {
		topic = newMemTopic()
	}
	l := topic.view()
	cfg := Config{Log: l, Check: stubCheck, Logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(&cfg)
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/registry/", http.StripPrefix("/registry", r.Handler()))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	in := &instance{r: r, log: l, srv: srv, base: srv.URL + "/registry", topic: topic}
	l.setURL(in.base)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := r.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	if err := l.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	return in
}

// stubCheck stands in for internal/registry/compat: a candidate is
// compatible when it declares every property (JSON Schema) or field
// (Avro) of each existing schema.
func stubCheck(schemaType, level, candidate string, existing []string) ([]string, error) {
	names := func(text string) (map[string]bool, error) {
		var doc map[string]any
		if err := json.Unmarshal([]byte(text), &doc); err != nil {
			return nil, err
		}
		out := map[string]bool{}
		if schemaType == typeJSON {
			props, _ := doc["properties"].(map[string]any)
			for k := range props {
				out[k] = true
			}
			return out, nil
		}
		fields, _ := doc["fields"].([]any)
		for _, f := range fields {
			if m, ok := f.(map[string]any); ok {
				out[fmt.Sprint(m["name"])] = true
			}
		}
		return out, nil
	}
	cand, err := names(candidate)
	if err != nil {
		return nil, err
	}
	var msgs []string
	for _, e := range existing {
		old, err := names(e)
		if err != nil {
			return nil, err
		}
		for n := range old {
			if !cand[n] {
				msgs = append(msgs, fmt.Sprintf("{errorType:'FIELD_REMOVED', description:'%s removed (%s)'}", n, level))
			}
		}
	}
	slices.Sort(msgs)
	return slices.Compact(msgs), nil
}

// step is one request of a scenario and what it must answer.
type step struct {
	name     string
	method   string
	path     string // relative to the registry's base, escaped
	body     string
	header   http.Header
	status   int
	code     int    // error_code, when the answer is an error
	wantJSON string // the answer, compared as JSON
	wantText string // the answer, compared as text
	contains string // a substring of the answer
}

// run performs the steps in order against in.
func (in *instance) run(t *testing.T, steps []step) {
	t.Helper()
	for _, s := range steps {
		name := s.name
		if name == "" {
			name = s.method + " " + s.path
		}
		status, body, _ := in.do(t, s.method, s.path, s.body, s.header)
		if status != s.status {
			t.Errorf("%s: status %d, want %d; body %s", name, status, s.status, trunc(body))
			continue
		}
		if s.code != 0 {
			var ae apiError
			if err := json.Unmarshal(body, &ae); err != nil || ae.Code != s.code || ae.Message == "" {
				t.Errorf("%s: body %s, want error_code %d with a message", name, trunc(body), s.code)
			}
		}
		if s.wantJSON != "" && !jsonEqual(body, []byte(s.wantJSON)) {
			t.Errorf("%s: body\n%s\nwant\n%s", name, trunc(body), s.wantJSON)
		}
		if s.wantText != "" && string(body) != s.wantText {
			t.Errorf("%s: body %q, want %q", name, trunc(body), s.wantText)
		}
		if s.contains != "" && !strings.Contains(string(body), s.contains) {
			t.Errorf("%s: body %s does not contain %q", name, trunc(body), s.contains)
		}
	}
}

// do sends one request.
func (in *instance) do(t testing.TB, method, path, body string, header http.Header) (int, []byte, http.Header) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, in.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := in.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b, resp.Header
}

// register registers a schema and returns its id, failing the test
// otherwise.
func (in *instance) register(t testing.TB, subject, body string) int {
	t.Helper()
	status, b, _ := in.do(t, http.MethodPost, "/subjects/"+subject+"/versions", body, nil)
	var resp idResponse
	if status != http.StatusOK || json.Unmarshal(b, &resp) != nil {
		t.Fatalf("register %s: status %d: %s", subject, status, trunc(b))
	}
	return resp.ID
}

// schemaBody is a request body holding a schema of a type.
func schemaBody(schemaType, text string) string {
	b, _ := json.Marshal(map[string]any{"schema": text, "schemaType": schemaType})
	return string(b)
}

func jsonSchema(props ...string) string {
	m := map[string]any{}
	for _, p := range props {
		m[p] = map[string]any{"type": "string"}
	}
	b, _ := json.Marshal(map[string]any{"type": "object", "properties": m})
	return string(b)
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func trunc(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "…"
	}
	return string(bytes.TrimSpace(b))
}

// newRecorder serves one request with r's handler, without a server.
func newRecorder(t testing.TB, r *Registry, method, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequestWithContext(t.Context(), method, path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	}
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, req)
	return rec
}

func kafkaRecord(key, value string) schemalog.Record {
	return schemalog.Record{Key: []byte(key), Value: []byte(value)}
}
