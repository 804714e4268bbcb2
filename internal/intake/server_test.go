package intake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/iphash"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/kafkatest"
	"github.com/eventlogging/eventlogging/internal/lineformat"
	"github.com/eventlogging/eventlogging/internal/process"
	"github.com/eventlogging/eventlogging/internal/schema"
	"github.com/eventlogging/eventlogging/internal/sink/sqlsink"
	"github.com/eventlogging/eventlogging/internal/spool"
)

// testIntake is an intake on an in-process kfake broker.
type testIntake struct {
	srv     *Server
	http    *httptest.Server
	brokers []string
	writer  *Writer
	proc    *process.Processor
}

func newTestIntake(t testing.TB, cfg Config) *testIntake {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	return newTestIntakeOn(t, cluster.ListenAddrs(), cfg)
}

// newTestIntakeOn runs an intake against brokers; topics are created on
// first use, as in production.
func newTestIntakeOn(t testing.TB, brokers []string, cfg Config) *testIntake {
	t.Helper()
	prod, err := kafka.NewProducer(kafka.ProducerConfig{Kafka: kafka.Config{Brokers: brokers}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)
	q, err := spool.Open(t.TempDir(), spool.Config{MaxBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	topics := prod.Topics(kafka.TopicDefaults{})
	if cfg.RawTopic == "" {
		cfg.RawTopic = capsule.TopicClientSide
	}
	if err := topics.Ensure(context.Background(), cfg.RawTopic); err != nil {
		t.Fatal(err)
	}
	w := NewWriter(prod, q, WriterConfig{Topics: topics})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = w.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })

	streams, err := process.NewStreams([]process.Stream{{Name: "analytics.edit_funnel", SchemaTitle: "analytics/edit_funnel", Topic: "eventlogging_analytics.edit_funnel"}})
	if err != nil {
		t.Fatal(err)
	}
	res := schema.NewResolver(schema.NewDirSource("../../examples/schemas"), schema.ResolverConfig{})
	proc, err := process.New(res, iphash.NewHasher(iphash.SHA256, []byte("k")), process.Config{Streams: streams})
	if err != nil {
		t.Fatal(err)
	}
	cfg.RecvFrom = "intake-test"
	srv, err := NewServer(w, proc, streams, cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &testIntake{srv: srv, http: hs, brokers: brokers, writer: w, proc: proc}
}

// consume reads n records of topic from the start.
func (ti *testIntake) consume(t testing.TB, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(ti.brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for len(recs) < n {
		f := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s: got %d of %d records", topic, len(recs), n)
		}
		recs = append(recs, f.Records()...)
	}
	return recs
}

const genericCapsule = `{"event":{"articleId":1,"articleTitle":"Héctor Elizondo"},"revision":13,"schema":"Generic","webHost":"test.wikipedia.org","wiki":"testwiki"}`

func TestBeaconWritesRawRecord(t *testing.T) {
	ti := newTestIntake(t, Config{})
	q := url.PathEscape(genericCapsule) + ";"
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, ti.http.URL+"/beacon/event?"+q, nil)
	req.Header.Set("User-Agent", "Mozilla/5.0\t(tab)")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("status %d", resp.StatusCode)
	}
	rec := ti.consume(t, capsule.TopicClientSide, 1)[0]
	// The raw record is a line the processor's default format parses, and
	// processing it gives the capsule.
	f, err := lineformat.Compile(lineformat.RawFormat)
	if err != nil {
		t.Fatal(err)
	}
	var fl lineformat.Fields
	if err := f.Parse(rec.Value, &fl); err != nil {
		t.Fatalf("raw record %q: %v", rec.Value, err)
	}
	if fl.ClientIP != "127.0.0.1" {
		t.Errorf("client IP %q", fl.ClientIP)
	}
	outs := ti.proc.Process(t.Context(), f, rec.Value, nil, nil)
	var c map[string]any
	if err := json.Unmarshal(outs[0].Value, &c); err != nil || outs[0].Topic != "eventlogging_Generic" {
		t.Fatalf("processed to %s: %s", outs[0].Topic, outs[0].Value)
	}
	if c["recvFrom"] != "intake-test" || c["userAgent"] != "Mozilla/5.0 (tab)" || c["seqId"] == nil {
		t.Errorf("capsule %v", c)
	}
}

func TestPostSync(t *testing.T) {
	ti := newTestIntake(t, Config{})
	valid := genericCapsule
	platform := `{"$schema":"/analytics/edit_funnel/1.0.0","meta":{"stream":"analytics.edit_funnel"},"action":"init","editor":"wikitext","session_token":"abcdefghijkl"}`
	invalid := `{"event":{"articleId":"x"},"revision":13,"schema":"Generic"}`
	cases := []struct {
		name, body string
		status     int
		statuses   []string
	}{
		{"one valid", valid, 201, []string{"accepted"}},
		{"mixed", "[" + valid + "," + invalid + "," + platform + "]", 207, []string{"accepted", "invalid", "accepted"}},
		{"all invalid", "[" + invalid + ",1]", 400, []string{"invalid", "invalid"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body := post(t, ti.http.URL+"/v1/events", "text/plain;charset=UTF-8", c.body)
			if status != c.status {
				t.Fatalf("status %d, want %d: %s", status, c.status, body)
			}
			var pr PostResponse
			if err := json.Unmarshal(body, &pr); err != nil {
				t.Fatal(err)
			}
			for i, want := range c.statuses {
				if pr.Events[i].Status != want || pr.Events[i].Index != i {
					t.Errorf("event %d: %+v, want %s", i, pr.Events[i], want)
				}
				if want == "invalid" && pr.Events[i].Message == "" {
					t.Errorf("event %d: invalid without a reason", i)
				}
			}
		})
	}
	// The valid events reached their topics before the answer.
	recs := ti.consume(t, "eventlogging_Generic", 2)
	if !bytes.Contains(recs[0].Value, []byte(`"recvFrom":"intake-test"`)) {
		t.Errorf("capsule %s", recs[0].Value)
	}
	ti.consume(t, "eventlogging_analytics.edit_funnel", 1)
	ti.consume(t, capsule.TopicEventError, 3)
}

func TestPostHasty(t *testing.T) {
	ti := newTestIntake(t, Config{})
	status, body := post(t, ti.http.URL+"/v1/events?hasty=true", "application/json", "["+genericCapsule+","+genericCapsule+"]")
	if status != http.StatusAccepted {
		t.Fatalf("status %d: %s", status, body)
	}
	recs := ti.consume(t, capsule.TopicClientSide, 2)
	f, _ := lineformat.Compile(lineformat.RawFormat)
	for _, r := range recs {
		outs := ti.proc.Process(t.Context(), f, r.Value, nil, nil)
		if outs[0].Topic != "eventlogging_Generic" {
			t.Errorf("hasty raw record does not process: %s", outs[0].Value)
		}
	}
}

func post(t testing.TB, u, ct, body string) (status int, respBody []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestBadInput is the catalogue of hostile or broken requests and the
// answer each gets.
func TestBadInput(t *testing.T) {
	ti := newTestIntake(t, Config{})
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	var many strings.Builder
	many.WriteString("[")
	for i := range 100_000 {
		if i > 0 {
			many.WriteString(",")
		}
		many.WriteString("{}")
	}
	many.WriteString("]")
	cases := []struct {
		name, method, path, ct, body string
		status                       int
	}{
		{"malformed JSON", "POST", "/v1/events", "application/json", `{"schema":`, 400},
		{"wrong content type", "POST", "/v1/events", "application/xml", `<event/>`, 415},
		{"empty body", "POST", "/v1/events", "application/json", ``, 400},
		{"5 MB body", "POST", "/v1/events", "application/json", `["` + strings.Repeat("x", 5<<20) + `"]`, 413},
		{"3,000-character beacon URL", "GET", "/beacon/event?" + strings.Repeat("a", 3000) + ";", "", "", 414},
		{"invalid UTF-8", "POST", "/v1/events", "application/json", "{\"schema\":\"\xff\"}", 400},
		{"JSON nested 10,000 deep", "POST", "/v1/events", "application/json", deep, 400},
		{"null", "POST", "/v1/events", "application/json", `null`, 400},
		{"a number", "POST", "/v1/events", "application/json", `42`, 400},
		{"array of 100,000 events", "POST", "/v1/events", "application/json", many.String(), 413},
		{"empty array", "POST", "/v1/events", "application/json", `[]`, 400},
		{"empty beacon", "GET", "/beacon/event", "", "", 400},
		{"truncated beacon is accepted raw (becomes an EventError)", "GET", "/beacon/event?%7B%22schema%22%3A%22Gen", "", "", 204},
		{"wrong method", "DELETE", "/v1/events", "", "", 405},
		{"unknown path", "GET", "/nope", "", "", 404},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), c.method, ti.http.URL+c.path, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if c.ct != "" {
				req.Header.Set("Content-Type", c.ct)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %.300s", resp.StatusCode, c.status, body)
			}
			if c.status >= 400 && c.status != 404 && c.status != 405 && !bytes.Contains(body, []byte(`"error"`)) {
				t.Errorf("error answer without a reason: %.300s", body)
			}
		})
	}
}

func TestHealthAndCORS(t *testing.T) {
	ti := newTestIntake(t, Config{CORSOrigin: "https://example.org"})
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/v1/streams": 200} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, ti.http.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want || resp.Header.Get("Access-Control-Allow-Origin") != "https://example.org" {
			t.Errorf("%s: %d, CORS %q", path, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
		}
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodOptions, ti.http.URL+"/v1/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 || !strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "POST") {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
}

func TestClientIPTrustedProxies(t *testing.T) {
	proxies, err := ParseTrustedProxies([]string{"10.0.0.0/8", "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		remote, xff, want string
	}{
		{"198.51.100.7:5000", "1.2.3.4", "198.51.100.7"},            // untrusted peer: header ignored
		{"127.0.0.1:5000", "1.2.3.4", "1.2.3.4"},                    // trusted peer
		{"127.0.0.1:5000", "6.6.6.6, 1.2.3.4, 10.1.1.1", "1.2.3.4"}, // right-most untrusted hop
		{"127.0.0.1:5000", "garbage", "127.0.0.1"},
		{"127.0.0.1:5000", "", "127.0.0.1"},
		{"[::ffff:127.0.0.1]:5000", "2001:db8::1", "2001:db8::1"},
	}
	for _, c := range cases {
		r := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/", nil)
		r.RemoteAddr = c.remote
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		if got := clientIP(r, proxies); got != c.want {
			t.Errorf("%s via %q: %s, want %s", c.remote, c.xff, got, c.want)
		}
	}
	if _, err := ParseTrustedProxies([]string{"nope"}); err == nil {
		t.Error("bad proxy accepted")
	}
}

func TestQueryEscapeMatchesBrowser(t *testing.T) {
	// The beacon reference: encodeURIComponent(JSON.stringify(capsule)).
	want := "%7B%22event%22%3A%7B%22articleId%22%3A1%2C%22articleTitle%22%3A%22H%C3%A9ctor%20Elizondo%22%7D%7D"
	if got := string(lineformat.AppendQueryEscape(nil, []byte(`{"event":{"articleId":1,"articleTitle":"Héctor Elizondo"}}`))); got != want {
		t.Errorf("got %s", got)
	}
}

// BenchmarkBeacon measures the beacon handler in process against kfake:
// request parsing, raw line building and the producer's buffer.
func BenchmarkBeacon(b *testing.B) {
	ti := newTestIntake(b, Config{})
	target := "/beacon/event?" + url.PathEscape(genericCapsule) + ";"
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rw := httptest.NewRecorder()
			r := httptest.NewRequestWithContext(context.Background(), http.MethodGet, target, nil)
			ti.srv.ServeHTTP(rw, r)
			if rw.Code != http.StatusNoContent {
				panic(fmt.Sprintf("status %d", rw.Code))
			}
		}
	})
}

// BenchmarkBeaconHTTP drives the intake over loopback HTTP with 32
// keep-alive clients, against kfake in process, and reports requests/s and
// the p50/p99 latency of the 204 answers.
func BenchmarkBeaconHTTP(b *testing.B) {
	benchBeaconHTTP(b, newTestIntake(b, Config{}))
}

// BenchmarkBeaconHTTPRealKafka is the same against the real broker
// (EVENTLOGGING_KAFKA_BROKERS).
func BenchmarkBeaconHTTPRealKafka(b *testing.B) {
	brokers := kafkatest.Brokers(b)
	benchBeaconHTTP(b, newTestIntakeOn(b, brokers, Config{RawTopic: kafkatest.Topic(b, "bench-raw")}))
}

func benchBeaconHTTP(b *testing.B, ti *testIntake) {
	const clients = 32
	target := ti.http.URL + "/beacon/event?" + url.PathEscape(genericCapsule) + ";"
	tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	var next atomic.Int64
	lat := make([][]time.Duration, clients)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, target, nil)
				t0 := time.Now()
				resp, err := hc.Do(req)
				if err != nil {
					panic(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				lat[c] = append(lat[c], time.Since(t0))
				if resp.StatusCode != http.StatusNoContent {
					panic(fmt.Sprintf("status %d", resp.StatusCode))
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
}

// TestJSONOrText: the shortcut for common Content-Types answers as
// mime.ParseMediaType does.
func TestJSONOrText(t *testing.T) {
	ref := func(ct string) bool {
		mt, _, err := mime.ParseMediaType(ct)
		return ct == "" || (err == nil && (mt == "application/json" || mt == "text/plain"))
	}
	for _, ct := range []string{"", "application/json", "text/plain", "application/json; charset=utf-8", "text/plain;charset=UTF-8",
		"APPLICATION/JSON", "application/json;charset=utf-8", "text/plain; charset=x", "application/jsonx", "application/xml",
		"multipart/form-data; boundary=x", "application/json; bad", "application/json;", " application/json", "text/", "json"} {
		if got, want := jsonOrText(ct), ref(ct); got != want {
			t.Errorf("jsonOrText(%q) = %v, want %v", ct, got, want)
		}
	}
}

// TestPostAnswerUUIDIsStoredUUID: a mixed batch (legacy and Event Platform
// events, valid and invalid, an Event Platform event with the client's own
// meta.id) answers each event with the uuid it is stored under, so that a
// client can look it up: for an accepted event the value of the uuid
// column the SQL sink writes from its record (a legacy capsule's uuid, 32
// hex digits; an Event Platform event's meta.id, RFC 4122 with dashes or
// the client's own), for an invalid one the uuid of its EventError.
func TestPostAnswerUUIDIsStoredUUID(t *testing.T) {
	ti := newTestIntake(t, Config{})
	const clientID = "0f3c9a2e-client-chosen-id"
	platform := func(id, action string) string {
		meta := `{"stream":"analytics.edit_funnel"}`
		if id != "" {
			meta = `{"stream":"analytics.edit_funnel","id":"` + id + `"}`
		}
		return `{"$schema":"/analytics/edit_funnel/1.0.0","meta":` + meta + `,"action":"` + action + `","editor":"wikitext","session_token":"abcdefghijkl"}`
	}
	batch := []string{
		genericCapsule,              // 0 legacy, accepted
		platform("", "init"),        // 1 Event Platform, accepted, meta.id set by the intake
		platform(clientID, "ready"), // 2 Event Platform, accepted, the client's meta.id
		`{"event":{"articleId":"x"},"revision":13,"schema":"Generic"}`, // 3 legacy, invalid
		platform("", "explode"), // 4 Event Platform, invalid
		strings.Replace(genericCapsule, `"articleId":1`, `"articleId":2`, 1), // 5 legacy, accepted
	}
	status, body := post(t, ti.http.URL+"/v1/events", "application/json", "["+strings.Join(batch, ",")+"]")
	if status != http.StatusMultiStatus {
		t.Fatalf("status %d, want 207: %s", status, body)
	}
	var pr PostResponse
	if err := json.Unmarshal(body, &pr); err != nil {
		t.Fatal(err)
	}
	if len(pr.Events) != len(batch) {
		t.Fatalf("%d entries for %d events: %s", len(pr.Events), len(batch), body)
	}
	accepted := map[string]int{} // answered uuid → index
	invalid := map[string]int{}
	for i, e := range pr.Events {
		if e.UUID == "" {
			t.Errorf("event %d: no uuid in %+v", i, e)
			continue
		}
		if e.Status == "accepted" {
			accepted[e.UUID] = i
		} else {
			invalid[e.UUID] = i
		}
	}
	if len(accepted) != 4 || len(invalid) != 2 {
		t.Fatalf("%d accepted and %d invalid distinct uuids, want 4 and 2: %s", len(accepted), len(invalid), body)
	}
	if got := pr.Events[2].UUID; got != clientID {
		t.Errorf("event 2: uuid %q, want the client's meta.id %q", got, clientID)
	}

	// Store the accepted events' records as the SQL sink does, and read
	// back its uuid column.
	recs := append(ti.consume(t, "eventlogging_Generic", 2), ti.consume(t, "eventlogging_analytics.edit_funnel", 2)...)
	db, err := sqlsink.Open(sqlsink.SQLite, filepath.Join(t.TempDir(), "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	res := schema.NewResolver(schema.NewDirSource("../../examples/schemas"), schema.ResolverConfig{})
	w, err := sqlsink.NewWriter(db, res, sqlsink.Config{Dialect: sqlsink.SQLite})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	batchRecs := make([]kafka.Record, len(recs))
	for i, r := range recs {
		batchRecs[i] = kafka.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Value: r.Value}
	}
	if poison, err := w.WriteRecords(t.Context(), batchRecs); err != nil || len(poison) != 0 {
		t.Fatalf("SQL sink: poison %v, %v", poison, err)
	}
	stored := map[string]bool{}
	tables, err := db.QueryContext(t.Context(), `SELECT name FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for tables.Next() {
		var n string
		if err := tables.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if err := errors.Join(tables.Err(), tables.Close()); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		rows, err := db.QueryContext(t.Context(), `SELECT "uuid" FROM "`+n+`"`)
		if err != nil {
			continue // not an event table
		}
		for rows.Next() {
			var u string
			if err := rows.Scan(&u); err != nil {
				t.Fatal(err)
			}
			stored[u] = true
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			t.Fatal(err)
		}
	}
	for u, i := range accepted {
		if !stored[u] {
			t.Errorf("event %d answered uuid %q; the uuid column holds %v", i, u, slices.Sorted(maps.Keys(stored)))
		}
	}
	if len(stored) != len(accepted) {
		t.Errorf("the uuid column holds %d uuids, the answer has %d accepted", len(stored), len(accepted))
	}

	// The invalid events: their EventErrors' uuids.
	for _, r := range ti.consume(t, capsule.TopicEventError, 2) {
		var ec capsule.ErrorCapsule
		if err := json.Unmarshal(r.Value, &ec); err != nil {
			t.Fatal(err)
		}
		if _, ok := invalid[ec.UUID]; !ok {
			t.Errorf("EventError uuid %q is not an invalid event's answered uuid %v", ec.UUID, invalid)
		}
	}
}
