package process

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// unknownLabel counts events whose schema or stream is not registered or
// configured: the client's name is never a label (unbounded).
const unknownLabel = "_unknown"

// Metrics counts processed events by schema (or stream), outcome and error
// code. Safe for concurrent use; a nil *Metrics counts nothing.
type Metrics struct {
	events *prometheus.CounterVec
	// cache avoids hashing the label values of every event.
	mu    sync.RWMutex
	cache map[[2]string]prometheus.Counter // {label, code}
}

// NewMetrics registers the processing metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{events: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "eventlogging_process_events_total",
		Help: "Events processed, by schema (legacy) or stream (Event Platform), outcome (valid, invalid) and error code.",
	}, []string{"schema", "outcome", "code"}), cache: map[[2]string]prometheus.Counter{}}
	if reg != nil {
		reg.MustRegister(m.events)
	}
	return m
}

func (m *Metrics) count(label, code string) {
	if m == nil {
		return
	}
	if label == "" {
		label = unknownLabel
	}
	key := [2]string{label, code}
	m.mu.RLock()
	c, ok := m.cache[key]
	m.mu.RUnlock()
	if ok {
		c.Inc()
		return
	}
	outcome := "valid"
	if code != "" {
		outcome = "invalid"
	}
	c = m.events.WithLabelValues(label, outcome, code)
	m.mu.Lock()
	m.cache[key] = c
	m.mu.Unlock()
	c.Inc()
}
