package kafka

import (
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kprom"
)

// Metrics are the Kafka metrics of one process: produce outcomes of every
// client, consumed batch sizes, consumer lag (see LagMonitor) and franz-go's
// own client metrics (kprom). Give the same *Metrics to every Config of the
// process; nil disables them.
type Metrics struct {
	reg       prometheus.Registerer
	produced  *prometheus.CounterVec
	errors    *prometheus.CounterVec
	latency   prometheus.Histogram
	batch     prometheus.Histogram
	lag       *prometheus.GaugeVec
	members   *prometheus.GaugeVec
	lagErrors prometheus.Counter
	refused   *prometheus.CounterVec
	clientSeq atomic.Int64

	lagMu  sync.Mutex
	lagSet map[[3]string]bool // label values of the lag gauge last set
}

// NewMetrics registers the Kafka metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		reg: reg,
		produced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventlogging_kafka_produced_records_total",
			Help: "Records acknowledged by Kafka, by topic.",
		}, []string{"topic"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventlogging_kafka_produce_errors_total",
			Help: "Records Kafka failed to acknowledge (they are retried or spooled), by topic.",
		}, []string{"topic"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "eventlogging_kafka_produce_latency_seconds",
			Help:    "Time from produce to acknowledgement of a record.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		batch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "eventlogging_process_batch_records",
			Help:    "Records per batch consumed by the processor.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 9),
		}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "eventlogging_kafka_consumer_lag_records",
			Help: "Records between a group's committed offset and the partition's high watermark.",
		}, []string{"group", "topic", "partition"}),
		members: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "eventlogging_kafka_consumer_group_members",
			Help: "Members of a consumer group (0: nobody consumes).",
		}, []string{"group"}),
		lagErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "eventlogging_kafka_lag_scrape_errors_total",
			Help: "Failed consumer-lag computations.",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventlogging_kafka_refused_records_total",
			Help: "Output records Kafka refused for good (too large, invalid, a topic name it refuses), never retried: replaced by an EventError, or skipped; by Kafka's error.",
		}, []string{"reason"}),
	}
	if reg != nil {
		reg.MustRegister(m.produced, m.errors, m.latency, m.batch, m.lag, m.members, m.lagErrors, m.refused)
	}
	return m
}

// hooks returns the client hooks: produce outcomes and kprom's client
// metrics, labelled client="<id>-<n>" so several clients of one process
// can share the registry.
func (m *Metrics) hooks(clientID string) []kgo.Opt {
	if m == nil {
		return nil
	}
	hooks := []kgo.Hook{produceHook{m}}
	if m.reg != nil {
		n := m.clientSeq.Add(1)
		hooks = append(hooks, kprom.NewMetrics("eventlogging_kafka_client",
			kprom.Registerer(m.reg),
			kprom.WithStaticLabel(prometheus.Labels{"client": clientID + "-" + strconv.FormatInt(n, 10)})))
	}
	return []kgo.Opt{kgo.WithHooks(hooks...)}
}

// refuse counts an output record Kafka refused for good.
func (m *Metrics) refuse(err error) {
	if m == nil {
		return
	}
	m.refused.WithLabelValues(RefusedReason(err)).Inc()
}

// RefusedReason names a permanent produce error for a metric label: Kafka's
// error name (MESSAGE_TOO_LARGE, INVALID_RECORD, …), "TOPIC_REFUSED" or
// "OTHER"; a small, fixed set.
func RefusedReason(err error) string {
	var ke *kerr.Error
	switch {
	case errors.Is(err, errTopicRefused):
		return "TOPIC_REFUSED"
	case errors.As(err, &ke):
		return ke.Message
	}
	return "OTHER"
}

func (m *Metrics) observeBatch(n int) {
	if m != nil {
		m.batch.Observe(float64(n))
	}
}

// produceHook counts every record when Kafka acknowledges or fails it.
type produceHook struct{ m *Metrics }

// OnProduceRecordUnbuffered implements kgo.HookProduceRecordUnbuffered.
func (h produceHook) OnProduceRecordUnbuffered(r *kgo.Record, err error) {
	if err != nil {
		h.m.errors.WithLabelValues(r.Topic).Inc()
		return
	}
	h.m.produced.WithLabelValues(r.Topic).Inc()
	if !r.Timestamp.IsZero() {
		h.m.latency.Observe(time.Since(r.Timestamp).Seconds())
	}
}
