package sink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventlogging/eventlogging/internal/kafka"
)

const testTopic = "eventlogging_Test"

// memSink is a Sink in memory that also resumes from offsets of its own
// (Resumer) and counts its maintenance (Maintainer).
type memSink struct {
	mu         sync.Mutex
	stored     []string
	writes     int
	failFirst  error // returned by the first WriteRecords
	maintErr   error // returned by Maintain
	maintained int
	resumeAt   int64 // StartOffsets' offset for every partition; <0: none
	starts     int
	closed     int
	lateWrite  bool // a call after Close
	done       func(stored int) bool
	cancel     context.CancelFunc
}

func (s *memSink) WriteRecords(_ context.Context, batch []kafka.Record) ([]Poison, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lateWrite = s.lateWrite || s.closed > 0
	s.writes++
	if s.writes == 1 && s.failFirst != nil {
		return nil, s.failFirst
	}
	var bad []Poison
	for _, r := range batch {
		if string(r.Value) == "not json" {
			bad = append(bad, Poison{Record: r, Reason: "not a JSON object"})
			continue
		}
		s.stored = append(s.stored, string(r.Value))
	}
	if s.done != nil && s.done(len(s.stored)) {
		s.cancel()
	}
	return bad, nil
}

func (s *memSink) StartOffsets(_ context.Context, assigned map[string][]int32) (map[string]map[int32]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.starts++
	if s.resumeAt < 0 {
		return nil, nil
	}
	out := map[string]map[int32]int64{}
	for t, ps := range assigned {
		out[t] = map[int32]int64{}
		for _, p := range ps {
			out[t][p] = s.resumeAt
		}
	}
	return out, nil
}

func (s *memSink) Maintain(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lateWrite = s.lateWrite || s.closed > 0
	s.maintained++
	return s.maintErr
}

func (s *memSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed++
	return nil
}

// cluster starts kfake with the test topic and the error topic, and
// produces values to the test topic (offsets in order).
func cluster(t *testing.T, values ...string) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, testTopic, DefaultErrorTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	if len(values) == 0 {
		return brokers
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for _, v := range values {
		recs = append(recs, &kgo.Record{Topic: testTopic, Value: []byte(v)})
	}
	if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return brokers
}

func testConfig(t *testing.T, brokers []string, m *Metrics) Config {
	t.Helper()
	prod, err := kafka.NewProducer(kafka.ProducerConfig{Kafka: kafka.Config{Brokers: brokers}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)
	return Config{
		Kafka: kafka.Config{Brokers: brokers}, Name: "mem", Group: "sink-" + t.Name(),
		Topics: []string{testTopic}, MaxBatch: 100, BatchTime: 20 * time.Millisecond,
		Producer: prod, Logger: slog.New(slog.DiscardHandler), Metrics: m,
	}
}

// readErrors reads n records of the error topic.
func readErrors(t *testing.T, brokers []string, n int) []ErrorRecord {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(DefaultErrorTopic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var out []ErrorRecord
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("error topic: %d records of %d", len(out), n)
		}
		fs.EachRecord(func(r *kgo.Record) {
			var e ErrorRecord
			if err := json.Unmarshal(r.Value, &e); err != nil {
				t.Fatal(err)
			}
			out = append(out, e)
		})
	}
	return out
}

func counter(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// Run resumes where the Resumer says, retries a failed write, stores what
// is not a canary, sends the poison to the error topic, measures, and
// closes the sink after the last write.
func TestRun(t *testing.T) {
	values := []string{`{"n":0}`, `{"n":1}`, // before the Resumer's offset
		`{"n":2}`, `{"schema":"Test","webHost":"canary"}`, `not json`, `{"n":5}`, `{"n":6}`}
	brokers := cluster(t, values...)
	m := NewMetrics(prometheus.NewRegistry())
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s := &memSink{failFirst: errors.New("database away"), resumeAt: 2, cancel: cancel,
		done: func(n int) bool { return n >= 3 }}
	if err := Run(ctx, testConfig(t, brokers, m), s); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != context.Canceled {
		t.Fatalf("run ended before the records were stored: %v", s.stored)
	}
	if want := []string{`{"n":2}`, `{"n":5}`, `{"n":6}`}; !slices.Equal(s.stored, want) {
		t.Errorf("stored %q, want %q", s.stored, want)
	}
	if s.starts == 0 || s.closed != 1 || s.lateWrite {
		t.Errorf("StartOffsets called %d times, Close %d times, called after Close: %v", s.starts, s.closed, s.lateWrite)
	}
	errs := readErrors(t, brokers, 1)
	want := ErrorRecord{Sink: "mem", Reason: "not a JSON object", Value: "not json"}
	want.Source.Topic, want.Source.Offset = testTopic, 4
	if errs[0] != want {
		t.Errorf("error record %+v, want %+v", errs[0], want)
	}
	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{
		{"rows", counter(t, m.rows.WithLabelValues("mem", testTopic)), 3},
		{"errors", counter(t, m.errors.WithLabelValues("mem")), 1},
		{"retries", counter(t, m.retries.WithLabelValues("mem")), 1},
	} {
		if c.got != c.want {
			t.Errorf("%s counter %v, want %v", c.name, c.got, c.want)
		}
	}
	var g dto.Metric
	if err := m.canary.WithLabelValues("mem", "Test").Write(&g); err != nil || g.GetGauge().GetValue() == 0 {
		t.Errorf("canary of stream Test not seen: %v", err)
	}
}

// An error wrapping ErrFatal, from WriteRecords or Maintain, stops Run at
// once (no retry), and the sink is closed.
func TestRunFatal(t *testing.T) {
	broken := fmt.Errorf("%w: disk gone", ErrFatal)
	for _, tc := range []struct {
		name   string
		values []string
		s      *memSink
	}{
		{"write", []string{`{"n":0}`}, &memSink{failFirst: broken, resumeAt: -1}},
		{"maintain", nil, &memSink{maintErr: broken, resumeAt: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			brokers := cluster(t, tc.values...)
			m := NewMetrics(prometheus.NewRegistry())
			cfg := testConfig(t, brokers, m)
			cfg.MaintainEvery = 10 * time.Millisecond
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			err := Run(ctx, cfg, tc.s)
			if !errors.Is(err, ErrFatal) || ctx.Err() != nil {
				t.Fatalf("Run: %v (context: %v), want ErrFatal before the deadline", err, ctx.Err())
			}
			if tc.s.writes > 1 || tc.s.closed != 1 {
				t.Errorf("%d writes, %d closes; want at most 1 and 1", tc.s.writes, tc.s.closed)
			}
			if n := counter(t, m.retries.WithLabelValues("mem")); n != 0 {
				t.Errorf("%v retries of a fatal error", n)
			}
		})
	}
}

// pacedSink asks to be maintained every 20 ms (MaintainInterval).
type pacedSink struct{ memSink }

func (*pacedSink) MaintainInterval() time.Duration { return 20 * time.Millisecond }

// TestRunMaintainInterval: a sink that says how often it must be
// maintained is maintained that often (the Iceberg sink commits from
// Maintain: at the default minute, rows waited up to two commit
// intervals); Config.MaintainEvery, when set, wins.
func TestRunMaintainInterval(t *testing.T) {
	brokers := cluster(t)
	s := &pacedSink{memSink{resumeAt: -1}}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, testConfig(t, brokers, NewMetrics(prometheus.NewRegistry())), s) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		n := s.maintained
		s.mu.Unlock()
		if n >= 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("maintained %d times in 10 s, want every 20 ms", n)
		}
		time.Sleep(10 * time.Millisecond) // polling the count
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestRunNeedsName(t *testing.T) {
	s := &memSink{}
	if err := Run(t.Context(), Config{}, s); err == nil || s.closed != 1 {
		t.Errorf("Run without a name: %v, %d closes", err, s.closed)
	}
}

// stuckSink is a memSink whose store hangs on the batch holding offset at:
// that WriteRecords returns only once its context is cancelled.
type stuckSink struct {
	memSink
	at      int64
	writing chan struct{} // closed when the hanging write begins
	once    sync.Once
}

func (s *stuckSink) WriteRecords(ctx context.Context, batch []kafka.Record) ([]Poison, error) {
	for _, r := range batch {
		if r.Offset == s.at {
			s.once.Do(func() { close(s.writing) })
			<-ctx.Done()
			return nil, ctx.Err()
		}
	}
	return s.memSink.WriteRecords(ctx, batch)
}

// committedOffset returns group's committed offset of the test topic's
// partition 0, -1 when there is none.
func committedOffset(t *testing.T, brokers []string, group string) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).FetchOffsets(t.Context(), group)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := offs.Lookup(testTopic, 0)
	if !ok {
		return -1
	}
	return o.At
}

// TestRunShutdownBound: a store that hangs does not hold the sink's
// shutdown for ever. Once ctx is done Run returns within
// Config.ShutdownTimeout, having closed the sink; the batch in hand is not
// committed, and the group's next run writes it.
func TestRunShutdownBound(t *testing.T) {
	const at = 2
	brokers := cluster(t, `{"n":0}`, `{"n":1}`, `{"n":2}`, `{"n":3}`, `{"n":4}`)
	cfg := testConfig(t, brokers, NewMetrics(prometheus.NewRegistry()))
	const bound = 300 * time.Millisecond
	cfg.ShutdownTimeout = bound
	s := &stuckSink{memSink: memSink{resumeAt: -1}, at: at, writing: make(chan struct{})}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, s) }()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	select {
	case <-s.writing:
	case <-deadline.C:
		t.Fatalf("no write of offset %d within 10 s", at)
	}
	stopped := time.Now()
	cancel()
	var err error
	select {
	case err = <-done:
	case <-deadline.C:
		t.Fatal("Run still running 10 s after the test began")
	}
	if took := time.Since(stopped); took < bound || took > bound+5*time.Second {
		t.Errorf("Run returned %v after ctx was done, want about %v", took, bound)
	}
	if !errors.Is(err, context.Canceled) || s.closed != 1 {
		t.Errorf("Run: %v, %d closes; want the write's context.Canceled and 1", err, s.closed)
	}
	if o := committedOffset(t, brokers, cfg.Group); o > at {
		t.Errorf("committed offset %d, past %d, which was never written", o, at)
	}

	ctx2, cancel2 := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel2()
	s2 := &memSink{resumeAt: -1, cancel: cancel2}
	s2.done = func(int) bool { return slices.Contains(s2.stored, `{"n":4}`) }
	if err := Run(ctx2, cfg, s2); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(s2.stored, `{"n":2}`) {
		t.Errorf("the next run stored %q, without offset %d", s2.stored, at)
	}
}
