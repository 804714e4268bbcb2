package intake

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics counts what the intake receives and refuses, and exports the
// spool's size. A nil *Metrics counts nothing.
type Metrics struct {
	received   *prometheus.CounterVec
	rejected   *prometheus.CounterVec
	canaries   *prometheus.CounterVec
	canaryLast *prometheus.GaugeVec
}

// Reasons an event is refused, the values of the reason label.
const (
	reasonTooLarge  = "too_large"
	reasonMalformed = "malformed"
	reasonOverload  = "overload"
	reasonInvalid   = "invalid"
	// reasonClientGone: the client disconnected before its events were
	// acknowledged (they may still be delivered; it was not answered).
	reasonClientGone = "client_gone"
)

// NewMetrics registers the intake metrics with reg; w's spool and Kafka
// state are read at each scrape.
func NewMetrics(reg prometheus.Registerer, w *Writer) *Metrics {
	m := &Metrics{
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventlogging_intake_events_received_total",
			Help: "Events received by the intake, by route (beacon, post, hasty); a POSTed array counts each event.",
		}, []string{"route"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventlogging_intake_events_rejected_total",
			Help: "Events the intake refused, by route and reason (too_large, malformed, overload, invalid; client_gone: the client disconnected before they were acknowledged).",
		}, []string{"route", "reason"}),
		canaries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventlogging_canary_sent_total",
			Help: "Canary events the intake produced, by stream.",
		}, []string{"stream"}),
		canaryLast: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "eventlogging_canary_last_sent_timestamp_seconds",
			Help: "When the intake last produced a canary of the stream (Unix time).",
		}, []string{"stream"}),
	}
	if reg == nil {
		return m
	}
	reg.MustRegister(m.received, m.rejected, m.canaries, m.canaryLast)
	if w != nil {
		reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "eventlogging_intake_spool_bytes",
				Help: "Bytes waiting in the intake's spool for Kafka.",
			}, func() float64 { return float64(w.Stats().SpoolBytes) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "eventlogging_intake_spool_records",
				Help: "Records waiting in the intake's spool for Kafka.",
			}, func() float64 { return float64(w.Stats().SpoolRecords) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "eventlogging_intake_refused_records_total",
				Help: "Records Kafka refused for good (too large, invalid, a topic name it refuses): not retried; an event answered invalid, or replaced by its EventError.",
			}, func() float64 { return float64(w.Stats().Refused) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "eventlogging_intake_kafka_down",
				Help: "1 while the intake cannot produce to Kafka (events go to the spool).",
			}, func() float64 {
				if w.Stats().KafkaDown {
					return 1
				}
				return 0
			}),
		)
	}
	return m
}

func (m *Metrics) receive(route string, n int) {
	if m != nil && n > 0 {
		m.received.WithLabelValues(route).Add(float64(n))
	}
}

func (m *Metrics) reject(route, reason string, n int) {
	if m != nil && n > 0 {
		m.rejected.WithLabelValues(route, reason).Add(float64(n))
	}
}

func (m *Metrics) canarySent(stream string, t time.Time) {
	if m != nil {
		m.canaries.WithLabelValues(stream).Inc()
		m.canaryLast.WithLabelValues(stream).Set(float64(t.UnixNano()) / 1e9)
	}
}
