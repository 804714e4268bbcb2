package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/eventlogging/eventlogging/internal/kafkatest"
)

// TestMetricsAfterKnownWorkload runs intake, process and sink on the real
// broker, sends a known workload of beacons — 300 valid NavigationTiming
// events, 50 that fail validation, 20 of an unknown schema — and checks
// that each role's /metrics reports exactly that workload, and that the
// processor's and the SQL sink's consumer groups catch up to lag 0.
func TestMetricsAfterKnownWorkload(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	prefix := sinkPrefix(t, "metrics")
	raw := prefix + "-raw"
	schemaTopic := prefix + "_NavigationTiming"
	processGroup := prefix + "-processor"
	sinkGroup := prefix + "-sink-sql"
	dir := t.TempDir()
	intakeAddr, processMetrics, sinkMetrics := freeAddr(t), freeAddr(t), freeAddr(t)

	// One configuration for the three roles, as a deployment would have;
	// each role's metrics listener comes from its environment.
	cfgPath := filepath.Join(dir, "eventlogging.yaml")
	pipelineConfig{brokers: brokers, prefix: prefix, listen: intakeAddr, spoolDir: filepath.Join(dir, "spool")}.write(t, cfgPath)
	lagEnv := "EVENTLOGGING_METRICS_LAG_INTERVAL=1s"
	dbPath := filepath.Join(dir, "events.db")
	in := startService(t, "intake", nil, "intake", "--config", cfgPath)
	proc := startService(t, "process", []string{"EVENTLOGGING_METRICS_LISTEN=" + processMetrics, lagEnv}, "process", "--config", cfgPath)
	sk := startService(t, "sink", []string{"EVENTLOGGING_METRICS_LISTEN=" + sinkMetrics, lagEnv}, "sink", "--config", cfgPath, "--sql", "sqlite:"+dbPath)
	base := "http://" + intakeAddr
	waitReady(t, base)

	const valid, invalid, unknown = 300, 50, 20
	failed := sendBeacons(t, base, valid+invalid+unknown, 16, func(i int) string {
		switch {
		case i < valid:
			return fmt.Sprintf(`{"event":{"responseStart":%d,"loadEventEnd":%d,"isHttps":true,"mobileMode":"stable"},"revision":7,"schema":"NavigationTiming","webHost":"en.wikipedia.org","wiki":"enwiki"}`, i, i+100)
		case i < valid+invalid: // responseStart must be an integer
			return fmt.Sprintf(`{"event":{"responseStart":"slow %d","loadEventEnd":1},"revision":7,"schema":"NavigationTiming","wiki":"enwiki"}`, i)
		default:
			return fmt.Sprintf(`{"event":{"n":%d},"revision":1,"schema":"NoSuchSchema","wiki":"enwiki"}`, i)
		}
	})
	if failed > 0 {
		t.Fatalf("%d beacons not answered 204", failed)
	}

	wants := []metricWant{
		{role: "intake", metric: "eventlogging_intake_events_received_total", labels: map[string]string{"route": "beacon"}, want: valid + invalid + unknown, counter: true},
		{role: "process", metric: "eventlogging_process_events_total", labels: map[string]string{"schema": "NavigationTiming", "outcome": "valid", "code": ""}, want: valid, counter: true},
		{role: "process", metric: "eventlogging_process_events_total", labels: map[string]string{"schema": "NavigationTiming", "outcome": "invalid", "code": "validation"}, want: invalid, counter: true},
		{role: "process", metric: "eventlogging_process_events_total", labels: map[string]string{"schema": "_unknown", "outcome": "invalid", "code": "processor"}, want: unknown, counter: true},
		{role: "process", metric: "eventlogging_kafka_consumer_lag_records", labels: map[string]string{"group": processGroup, "topic": raw}, want: 0, sum: true},
		{role: "process", metric: "eventlogging_kafka_consumer_group_members", labels: map[string]string{"group": processGroup}, want: 1},
		{role: "sink", metric: "eventlogging_sink_rows_total", labels: map[string]string{"sink": "sql", "topic": schemaTopic}, want: valid, counter: true},
		{role: "sink", metric: "eventlogging_kafka_consumer_lag_records", labels: map[string]string{"group": sinkGroup, "topic": schemaTopic}, want: 0, sum: true},
	}
	urls := map[string]string{"intake": base + "/metrics", "process": "http://" + processMetrics + "/metrics", "sink": "http://" + sinkMetrics + "/metrics"}
	pollMetrics(t, urls, wants, 60*time.Second)

	// The sink's counter agrees with its database.
	in.stop(t)
	proc.stop(t)
	sk.stop(t)
	db := openSQLite(t, dbPath)
	var rows, distinct int
	if err := db.QueryRowContext(t.Context(), `SELECT count(*), count(DISTINCT uuid) FROM "NavigationTiming_7"`).Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if rows != valid || distinct != valid {
		t.Fatalf("SQL: %d rows, %d distinct uuids; the sink reported %d", rows, distinct, valid)
	}
}

// metricWant is one value a role's /metrics must reach.
type metricWant struct {
	role   string // key of the role's /metrics URL
	metric string
	// labels select the series: each must match, "" also matching an
	// absent label. Other labels are free.
	labels map[string]string
	want   float64
	// sum adds up every selected series (a gauge per partition), of which
	// there must be at least one; otherwise exactly one series must match.
	sum bool
	// counter: the value only grows, so one above want fails at once.
	counter bool
}

func (w metricWant) String() string {
	var ls []string
	for k, v := range w.labels {
		ls = append(ls, fmt.Sprintf("%s=%q", k, v))
	}
	slices.Sort(ls)
	agg := ""
	if w.sum {
		agg = "sum "
	}
	return fmt.Sprintf("%s: %s%s{%s} == %v", w.role, agg, w.metric, strings.Join(ls, ","), w.want)
}

// check evaluates w against a parsed scrape: whether it holds, whether it
// can no longer hold, and what was found.
func (w metricWant) check(fams map[string]*dto.MetricFamily) (ok, overshot bool, found string) {
	fam := fams[w.metric]
	var n int
	var total float64
	for _, m := range fam.GetMetric() {
		if !w.selects(m) {
			continue
		}
		n++
		switch {
		case m.Counter != nil:
			total += m.Counter.GetValue()
		case m.Gauge != nil:
			total += m.Gauge.GetValue()
		case m.Untyped != nil:
			total += m.Untyped.GetValue()
		}
	}
	switch {
	case n == 0:
		return false, false, "no series"
	case !w.sum && n > 1:
		return false, true, fmt.Sprintf("%d series where one was expected", n)
	}
	return total == w.want, w.counter && total > w.want, fmt.Sprintf("%v (%d series)", total, n)
}

func (w metricWant) selects(m *dto.Metric) bool {
	for k, v := range w.labels {
		got := ""
		for _, lp := range m.GetLabel() {
			if lp.GetName() == k {
				got = lp.GetValue()
			}
		}
		if got != v {
			return false
		}
	}
	return true
}

// lines returns the exposition lines of w's metric that carry its
// non-empty labels: what a failure shows.
func (w metricWant) lines(text string) string {
	var out []string
	for l := range strings.Lines(text) {
		if !strings.HasPrefix(l, w.metric+"{") && !strings.HasPrefix(l, w.metric+" ") {
			continue
		}
		keep := true
		for k, v := range w.labels {
			if v != "" && !strings.Contains(l, fmt.Sprintf("%s=%q", k, v)) {
				keep = false
			}
		}
		if keep {
			out = append(out, "    "+strings.TrimSpace(l))
		}
	}
	if len(out) == 0 {
		return "    (no such line)"
	}
	return strings.Join(out, "\n")
}

// scrapeMetrics GETs a /metrics page (text exposition format) and parses it.
func scrapeMetrics(ctx context.Context, url string) (map[string]*dto.MetricFamily, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	status, body, err := get(ctx, url)
	if err != nil {
		return nil, "", err
	}
	if status != http.StatusOK {
		return nil, body, fmt.Errorf("GET %s: %d %s", url, status, http.StatusText(status))
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		return nil, body, fmt.Errorf("GET %s: parse: %w", url, err)
	}
	return fams, body, nil
}

// pollMetrics scrapes every role's /metrics until all wants hold at once,
// failing at the deadline — or as soon as a counter went past its value —
// with the unmet wants and the lines each role exposed for them in the
// last scrape.
func pollMetrics(t *testing.T, urls map[string]string, wants []metricWant, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		// Each scrape has its own timeout, so the last one before the
		// deadline still shows what the roles reported.
		fams, texts, errs := map[string]map[string]*dto.MetricFamily{}, map[string]string{}, map[string]error{}
		for role, u := range urls {
			fams[role], texts[role], errs[role] = scrapeMetrics(t.Context(), u)
		}
		var unmet []string
		for _, w := range wants {
			if err := errs[w.role]; err != nil {
				unmet = append(unmet, fmt.Sprintf("%s\n    scrape: %v", w, err))
				continue
			}
			ok, overshot, found := w.check(fams[w.role])
			if ok {
				continue
			}
			msg := fmt.Sprintf("%s: got %s\n%s", w, found, w.lines(texts[w.role]))
			if overshot {
				t.Fatalf("metric past its expected value (no later scrape can fix it):\n%s", msg)
			}
			unmet = append(unmet, msg)
		}
		if len(unmet) == 0 {
			for _, w := range wants {
				t.Logf("%s\n%s", w, w.lines(texts[w.role]))
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, %d of %d metrics not at their expected values:\n%s", timeout, len(unmet), len(wants), strings.Join(unmet, "\n"))
		}
		select {
		case <-t.Context().Done():
			t.Fatal("test context done while polling metrics")
		case <-tick.C:
		}
	}
}

// TestMetricsListenTaken: an explicitly configured metrics address that is
// taken stops the processor with a clear error; the default one only warns.
func TestMetricsListenTaken(t *testing.T) {
	brokers := strings.Join(kafkatest.Brokers(t), ",")
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cmd := exec.CommandContext(t.Context(), binary(t), "process", "--kafka-brokers", brokers, "--schemas", "../../examples/schemas",
		"--raw-topic", kafkatest.Topic(t, "raw"), "--group", kafkatest.Topic(t, "group"), "--metrics-listen", ln.Addr().String())
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--metrics-listen "+ln.Addr().String()) || !strings.Contains(string(out), "address already in use") {
		t.Fatalf("process with a taken --metrics-listen: err %v, output:\n%s", err, out)
	}
}
