package sink

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventlogging/eventlogging/internal/kafka"
)

// Metrics measures the sinks. A nil *Metrics counts nothing.
type Metrics struct {
	rows      *prometheus.CounterVec
	published *prometheus.CounterVec
	batch     *prometheus.HistogramVec
	write     *prometheus.HistogramVec
	errors    *prometheus.CounterVec
	retries   *prometheus.CounterVec
	canary    *prometheus.GaugeVec
	dups      *prometheus.CounterVec

	mu sync.Mutex
	// later names the sinks that publish later than they write (the file
	// sink): they count their published rows through Published.
	later map[string]bool
}

// NewMetrics registers the sink metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventlogging_sink_rows_total",
			Help: "Records a sink (sql, files) wrote and whose offsets it let commit, by topic. SQL: committed rows. Files: appended to in-progress files, not yet visible to readers (see eventlogging_sink_rows_published_total).",
		}, []string{"sink", "topic"}),
		published: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventlogging_sink_rows_published_total",
			Help: "Records a sink (sql, files) made visible to readers, by topic. SQL: at the transaction commit. Files: when a checkpoint renamed their files into place.",
		}, []string{"sink", "topic"}),
		batch: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "eventlogging_sink_batch_records",
			Help:    "Records per batch written by a sink.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 9),
		}, []string{"sink"}),
		write: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "eventlogging_sink_write_seconds",
			Help:    "Time to write and commit one batch.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"sink"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventlogging_sink_errors_total",
			Help: "Records a sink could never write, sent to the sink-error topic.",
		}, []string{"sink"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventlogging_sink_retries_total",
			Help: "Batch writes that failed and were retried.",
		}, []string{"sink"}),
		canary: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "eventlogging_canary_last_seen_timestamp_seconds",
			Help: "When a sink last saw a canary event of the stream (Unix time).",
		}, []string{"sink", "stream"}),
		dups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventlogging_sink_duplicates_dropped_total",
			Help: "Records a file or Iceberg sink did not store because an event of the same uuid is in the last sink.dedupe_window records of its partition (a batch processed again, a synchronous POST produced twice).",
		}, []string{"sink"}),
	}
	if reg != nil {
		reg.MustRegister(m.rows, m.published, m.batch, m.write, m.errors, m.retries, m.canary, m.dups)
	}
	return m
}

// Published returns the function a sink that publishes its records later
// than it writes them (the file sink, at a checkpoint) calls with the
// records of topic it made visible to readers; they count in
// eventlogging_sink_rows_published_total{sink}. From then on the written
// batches of that sink count in eventlogging_sink_rows_total only. Call it
// before the sink's first batch. A nil *Metrics returns a function that
// counts nothing.
func (m *Metrics) Published(sink string) func(topic string, records int) {
	if m == nil {
		return func(string, int) {}
	}
	m.mu.Lock()
	if m.later == nil {
		m.later = map[string]bool{}
	}
	m.later[sink] = true
	m.mu.Unlock()
	return func(topic string, records int) {
		if records > 0 {
			m.published.WithLabelValues(sink, topic).Add(float64(records))
		}
	}
}

// publishesLater reports whether sink counts its published rows itself.
func (m *Metrics) publishesLater(sink string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.later[sink]
}

// written records a batch that was written and committed; poison are the
// records of it sent to the sink-error topic instead.
func (m *Metrics) written(sink string, batch []kafka.Record, poison []Poison, start time.Time) {
	if m == nil {
		return
	}
	m.write.WithLabelValues(sink).Observe(time.Since(start).Seconds())
	m.batch.WithLabelValues(sink).Observe(float64(len(batch)))
	if len(poison) > 0 {
		m.errors.WithLabelValues(sink).Add(float64(len(poison)))
	}
	per := map[string]int{}
	for _, r := range batch {
		per[r.Topic]++
	}
	for _, p := range poison {
		per[p.Record.Topic]--
	}
	// Rows committed in the batch's transaction are visible now; a sink
	// that publishes later counts them when it does.
	visible := !m.publishesLater(sink)
	for t, n := range per {
		if n > 0 {
			m.rows.WithLabelValues(sink, t).Add(float64(n))
			if visible {
				m.published.WithLabelValues(sink, t).Add(float64(n))
			}
		}
	}
}

// sawCanary records a canary of stream seen by sink at t.
func (m *Metrics) sawCanary(sink, stream string, t time.Time) {
	if m != nil {
		m.canary.WithLabelValues(sink, stream).Set(float64(t.UnixNano()) / 1e9)
	}
}

func (m *Metrics) retried(sink string) {
	if m != nil {
		m.retries.WithLabelValues(sink).Inc()
	}
}

// duplicates counts records a sink dropped as copies of an event it holds.
func (m *Metrics) duplicates(sink string, n int) {
	if m == nil || n == 0 {
		return
	}
	m.dups.WithLabelValues(sink).Add(float64(n))
}
