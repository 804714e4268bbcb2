package sink

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventlogging/eventlogging/internal/kafka"
)

// counterValue returns the value of the counter name{sink, topic} in reg,
// 0 when it has no such series.
func counterValue(t *testing.T, reg *prometheus.Registry, name, sink, topic string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["sink"] == sink && labels["topic"] == topic {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TestRowsPublished: a SQL batch's rows are visible at its commit, so they
// count as written and published at once; the file sink's rows count as
// written with the batch and as published only when it reports them
// (its checkpoint). Poison counts in neither.
func TestRowsPublished(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	publish := m.Published("files")
	batch := []kafka.Record{{Topic: "a", Offset: 0}, {Topic: "a", Offset: 1}, {Topic: "b", Offset: 0}}
	poison := []Poison{{Record: batch[1], Reason: "bad"}}
	m.written("sql", batch, poison, time.Now())
	m.written("files", batch, poison, time.Now())

	const rows, published = "eventlogging_sink_rows_total", "eventlogging_sink_rows_published_total"
	for _, c := range []struct {
		metric, sink, topic string
		want                float64
	}{
		{rows, "sql", "a", 1}, {rows, "sql", "b", 1},
		{published, "sql", "a", 1}, {published, "sql", "b", 1},
		{rows, "files", "a", 1}, {rows, "files", "b", 1},
		{published, "files", "a", 0}, {published, "files", "b", 0},
	} {
		if got := counterValue(t, reg, c.metric, c.sink, c.topic); got != c.want {
			t.Errorf("after the batches %s{sink=%q,topic=%q} = %v, want %v", c.metric, c.sink, c.topic, got, c.want)
		}
	}
	publish("a", 1)
	publish("b", 0)
	if got := counterValue(t, reg, published, "files", "a"); got != 1 {
		t.Errorf("after the checkpoint %s{sink=files,topic=a} = %v, want 1", published, got)
	}

	// A nil *Metrics counts nothing and does not panic.
	var none *Metrics
	none.Published("files")("a", 3)
	none.written("sql", batch, nil, time.Now())
}
