package schema

import "github.com/prometheus/client_golang/prometheus"

// Metrics counts schema resolutions: cache hits, misses (a fetch from the
// Source) and negative-cache hits. A nil *Metrics counts nothing.
type Metrics struct {
	hit, miss, negative prometheus.Counter
}

// NewMetrics registers the resolver metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "eventlogging_schema_cache_requests_total",
		Help: "Schema resolutions by result: hit, miss (fetched from the registry or folder), negative_hit (a remembered unknown schema).",
	}, []string{"result"})
	if reg != nil {
		reg.MustRegister(v)
	}
	return &Metrics{hit: v.WithLabelValues("hit"), miss: v.WithLabelValues("miss"), negative: v.WithLabelValues("negative_hit")}
}

func (m *Metrics) inc(c func(*Metrics) prometheus.Counter) {
	if m != nil {
		c(m).Inc()
	}
}

func hitOf(m *Metrics) prometheus.Counter      { return m.hit }
func missOf(m *Metrics) prometheus.Counter     { return m.miss }
func negativeOf(m *Metrics) prometheus.Counter { return m.negative }
