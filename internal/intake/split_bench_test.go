package intake

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/iphash"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/process"
	"github.com/eventlogging/eventlogging/internal/schema"
	"github.com/eventlogging/eventlogging/internal/spool"
)

// BenchmarkPostBatch10 is the synchronous POST's work per request without
// Kafka: split a 10-event body into events and process each (decode,
// validate, capsule), as handlePost does. Small hand-written events (the
// Generic schema), not the standard workload.
func BenchmarkPostBatch10(b *testing.B) {
	ti := newTestIntake(b, Config{})
	body := []byte("[" + strings.TrimSuffix(strings.Repeat(genericCapsule+",", 10), ",") + "]")
	ctx := context.Background()
	meta := process.Meta{RecvFrom: "bench", Received: time.Unix(1764496800, 0)}
	var outs []process.Output
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		events, status, msg := ti.srv.split(body, nil)
		if status != 0 {
			b.Fatal(msg)
		}
		outs = outs[:0]
		for i, ev := range events {
			meta.SeqID = int64(i)
			var res process.Result
			outs, res = ti.proc.ProcessEvent(ctx, ev, meta, outs)
			if !res.Valid() {
				b.Fatal(res.Message)
			}
		}
	}
	b.ReportMetric(float64(b.N*10)/b.Elapsed().Seconds(), "events/s")
}

// workloadBodies are 10-event POST bodies of the standard workload
// (testdata/workload/raw.tsv at the repository root): the events of its
// first 1,000 lines, ten to a body, those the schemas refuse included;
// the lines that are not JSON (truncated, bad escapes) left out, as a
// client that POSTs sends JSON it wrote.
func workloadBodies(b *testing.B) [][]byte {
	b.Helper()
	raw, err := os.ReadFile("../../testdata/workload/raw.tsv")
	if err != nil {
		b.Fatalf("standard workload missing (testdata/workload at the repository root): %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	var bodies [][]byte
	var events []string
	for _, line := range lines[:min(len(lines), 1000)] {
		q, _, _ := strings.Cut(line, "\t")
		ev, err := url.QueryUnescape(strings.TrimSuffix(strings.TrimPrefix(q, "?"), ";"))
		if err != nil || !json.Valid([]byte(ev)) {
			continue
		}
		if events = append(events, ev); len(events) == 10 {
			bodies = append(bodies, []byte("["+strings.Join(events, ",")+"]"))
			events = events[:0]
		}
	}
	return bodies
}

// meanSize is the mean length of bodies.
func meanSize(bodies [][]byte) int64 {
	var size int
	for _, body := range bodies {
		size += len(body)
	}
	return int64(size / len(bodies))
}

// BenchmarkSplitWorkload is split alone (the body's checks and its split
// into events) on 10-event bodies of the standard workload.
func BenchmarkSplitWorkload(b *testing.B) {
	bodies := workloadBodies(b)
	s := &Server{cfg: Config{MaxBatchEvents: 1000}}
	b.SetBytes(meanSize(bodies))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		events, status, msg := s.split(bodies[i%len(bodies)], nil)
		if status != 0 || len(events) != 10 {
			b.Fatalf("%d events, %d %s", len(events), status, msg)
		}
		i++
	}
}

// ackAll is a Producer that acknowledges every record at once, so that a
// benchmark measures the intake's own work and not a broker's.
type ackAll struct{}

func (ackAll) TryProduce(_ kafka.Message, cb func(error))           { cb(nil) }
func (x ackAll) produceSync(context.Context, []kafka.Message) error { return nil }
func (ackAll) Ping(context.Context) error                           { return nil }

// BenchmarkPostWorkload is the whole POST handler (ServeHTTP: read,
// split, process each event, deliver, answer) on 10-event bodies of the
// standard workload, the 5 % invalid events included, with a producer
// that acknowledges at once: the intake's own CPU and allocations per
// request, without franz-go's or a broker's.
func BenchmarkPostWorkload(b *testing.B) {
	bodies := workloadBodies(b)
	q, err := spool.Open(b.TempDir(), spool.Config{MaxBytes: 64 << 20})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = q.Close() })
	res := schema.NewResolver(schema.NewDirSource("../../testdata/workload/schemas"), schema.ResolverConfig{})
	proc, err := process.New(res, iphash.NewHasher(iphash.SHA256, []byte("k")), process.Config{})
	if err != nil {
		b.Fatal(err)
	}
	srv, err := NewServer(NewWriter(ackAll{}, q, WriterConfig{}), proc, nil, Config{RecvFrom: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(meanSize(bodies))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		body := bodies[i%len(bodies)]
		i++
		rw := httptest.NewRecorder()
		r := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/v1/events", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		srv.ServeHTTP(rw, r)
		if rw.Code != http.StatusCreated && rw.Code != http.StatusMultiStatus {
			b.Fatalf("status %d: %s", rw.Code, rw.Body)
		}
	}
	b.ReportMetric(float64(b.N*10)/b.Elapsed().Seconds(), "events/s")
}

func (x ackAll) ProduceEach(ctx context.Context, msgs []kafka.Message, _ error) kafka.Outcome {
	return outcomeOf(len(msgs), x.produceSync(ctx, msgs))
}

// BenchmarkPostPlatform10 is the whole POST handler on the peer matrix's
// 10-event body (testdata/peer-matrix: ten copies of its valid Event
// Platform event, 408 bytes each, the test.event stream), with a producer
// that acknowledges at once: the intake's own CPU and allocations per
// request of the matrix's 10-event cells, without franz-go, a broker or
// the HTTP server.
func BenchmarkPostPlatform10(b *testing.B) {
	ev := matrixEvent(b)
	body := []byte("[" + strings.TrimSuffix(strings.Repeat(string(ev)+",", 10), ",") + "]")
	srv := newPlatformServer(b, ackAll{})
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		rw := httptest.NewRecorder()
		r := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/v1/events", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		srv.ServeHTTP(rw, r)
		if rw.Code != http.StatusCreated {
			b.Fatalf("status %d: %s", rw.Code, rw.Body)
		}
	}
	b.ReportMetric(float64(b.N*10)/b.Elapsed().Seconds(), "events/s")
}

// matrixEvent returns the peer matrix's valid test event.
func matrixEvent(tb testing.TB) []byte {
	tb.Helper()
	ev, err := os.ReadFile("../../testdata/peer-matrix/event-valid.json")
	if err != nil {
		tb.Fatal(err)
	}
	return bytes.TrimSpace(ev)
}

// newPlatformServer is an intake for the peer matrix's stream and schema
// (testdata/peer-matrix), writing through prod.
func newPlatformServer(tb testing.TB, prod Producer) *Server {
	tb.Helper()
	q, err := spool.Open(tb.TempDir(), spool.Config{MaxBytes: 64 << 20})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = q.Close() })
	streams, err := process.NewStreams([]process.Stream{{Name: "test.event", SchemaTitle: "test/event"}})
	if err != nil {
		tb.Fatal(err)
	}
	res := schema.NewResolver(schema.NewDirSource("../../testdata/peer-matrix/schemas"), schema.ResolverConfig{})
	proc, err := process.New(res, iphash.NewHasher(iphash.SHA256, []byte("k")), process.Config{Streams: streams, IPPolicy: process.IPHash})
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := NewServer(NewWriter(prod, q, WriterConfig{}), proc, nil, Config{RecvFrom: "test"})
	if err != nil {
		tb.Fatal(err)
	}
	return srv
}
