package process

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// unknownLabel counts events whose schema or stream is not registered or
// configured: the client's name is never a label (unbounded).
const unknownLabel = "_unknown"

// droppedWarnEvery is how often dropped Avro fields are logged per stream.
const droppedWarnEvery = time.Minute

// Metrics counts processed events by schema (or stream), outcome and error
// code, and the fields Avro encoding drops by stream. Safe for concurrent
// use; a nil *Metrics counts nothing.
type Metrics struct {
	events  *prometheus.CounterVec
	dropped *prometheus.CounterVec
	flags   *prometheus.CounterVec
	// cache avoids hashing the label values of every event.
	mu    sync.RWMutex
	cache map[[2]string]prometheus.Counter // {label, code}

	// warned is when dropped fields were last logged, by stream.
	warnMu sync.Mutex
	warned map[string]time.Time
}

// NewMetrics registers the processing metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventlogging_process_events_total",
			Help: "Events processed, by schema (legacy) or stream (Event Platform), outcome (valid, invalid) and error code.",
		}, []string{"schema", "outcome", "code"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventlogging_process_avro_dropped_fields_total",
			Help: "Fields of valid events of Avro streams that the stream's Avro schema has no field for, left out of the record (distinct JSON pointers per event, any depth), by stream.",
		}, []string{"stream"}),
		flags: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventlogging_process_legacy_flags_dropped_total",
			Help: "Capsule flags of the 2013-2016 JavaScript client (clientValidated, isTruncated) dropped before validation, as the original did, by flag.",
		}, []string{"flag"}),
		cache:  map[[2]string]prometheus.Counter{},
		warned: map[string]time.Time{},
	}
	if reg != nil {
		reg.MustRegister(m.events, m.dropped, m.flags)
	}
	return m
}

// avroDropped counts n fields of an event of stream dropped by the Avro
// encoding and reports whether a warning is due: the first for the stream,
// or droppedWarnEvery after the last. The stream is a configured one
// (bounded). A nil *Metrics counts nothing and warns never.
func (m *Metrics) avroDropped(stream string, n int, now time.Time) bool {
	if m == nil {
		return false
	}
	m.dropped.WithLabelValues(stream).Add(float64(n))
	m.warnMu.Lock()
	defer m.warnMu.Unlock()
	if last, ok := m.warned[stream]; ok && now.Sub(last) < droppedWarnEvery {
		return false
	}
	m.warned[stream] = now
	return true
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

// legacyFlag counts a dropped legacy capsule flag (clientValidated or
// isTruncated: a bounded label).
func (m *Metrics) legacyFlag(flag string) {
	if m != nil {
		m.flags.WithLabelValues(flag).Inc()
	}
}
