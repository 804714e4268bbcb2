package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/eventlogging/eventlogging/internal/kafkatest"
)

// clientPipeline is the intake and processors the client tests send to: on
// the real broker when EVENTLOGGING_KAFKA_BROKERS is set (`eventlogging
// intake` + `eventlogging process`, topics unique to the test), else
// `eventlogging standalone` on its embedded broker.
type clientPipeline struct {
	base      string // the intake's URL
	brokers   []string
	dataDir   string // standalone
	prefix    string // topic prefix: "eventlogging" (standalone) or unique (real broker)
	intake    *service
	startFn   func() *service
	stopFn    func(t *testing.T, s *service)
	realKafka bool
}

// phpLogSchema is the schema of the PHP client's MonologHandler events in
// the client tests (revision 900100: legacy revisions are global ids).
const phpLogSchema = `{
  "description": "log records of the PHP client's MonologHandler (client tests)",
  "properties": {
    "message": {"type": "string", "required": true},
    "channel": {"type": "string", "required": true},
    "level": {"type": "string", "enum": ["DEBUG", "INFO", "NOTICE", "WARNING", "ERROR", "CRITICAL", "ALERT", "EMERGENCY"], "required": true},
    "context": {"type": "string"}
  }
}`

// startClientPipeline starts the pipeline with the example schemas (plus
// PhpLog/900100) and a stream configuration in which
// analytics.search_satisfaction is sampled at 0.5.
func startClientPipeline(t *testing.T) *clientPipeline {
	t.Helper()
	dir := t.TempDir()
	schemas := copyExampleSchemas(t)
	if err := os.MkdirAll(filepath.Join(schemas, "PhpLog"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(schemas, "PhpLog", "900100.json"), []byte(phpLogSchema), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	p := &clientPipeline{base: "http://" + addr, prefix: "eventlogging"}
	if v := os.Getenv(kafkatest.EnvBrokers); strings.TrimSpace(v) != "" {
		p.realKafka = true
		p.brokers = kafkatest.Brokers(t)
		p.prefix = kafkatest.Topic(t, "clients")
	}
	streams := filepath.Join(dir, "streams.yaml")
	if err := os.WriteFile(streams, fmt.Appendf(nil, `streams:
  - name: analytics.search_satisfaction
    schema_title: analytics/search_satisfaction
    sample_rate: 0.5
    topic: %s_analytics.search_satisfaction
  - name: analytics.edit_funnel
    schema_title: analytics/edit_funnel
    topic: %s_analytics.edit_funnel
`, p.prefix, p.prefix), 0o644); err != nil {
		t.Fatal(err)
	}

	if !p.realKafka {
		p.dataDir = filepath.Join(dir, "data")
		args := []string{"standalone", "--data-dir", p.dataDir, "--listen", addr, "--kafka-listen", freeAddr(t),
			"--schemas", schemas, "--streams", streams}
		p.startFn = func() *service { return startService(t, "standalone", nil, args...) }
		p.stopFn = func(t *testing.T, s *service) { s.stop(t) }
		t.Logf("client tests on eventlogging standalone (set %s for the real broker)", kafkatest.EnvBrokers)
	} else {
		env := pipelineEnv(p.brokers, p.prefix, addr, filepath.Join(dir, "spool"), schemas,
			"EVENTLOGGING_PROCESS_STREAMS_FILE="+streams)
		startService(t, "process", env, "process", "--raw-topic", p.prefix+"-raw", "--metrics-listen", "off")
		p.startFn = func() *service { return startService(t, "intake", env, "intake") }
		// The synchronous POST is acknowledged by the real broker (acks=all)
		// before its answer: a SIGKILL loses nothing answered.
		p.stopFn = func(_ *testing.T, s *service) {
			_ = s.cmd.Process.Kill()
			_ = s.cmd.Wait() // "signal: killed"; also ends os/exec's goroutines of the process
		}
		t.Logf("client tests on the real broker %v, topics %s_*", p.brokers, p.prefix)
	}
	p.intake = p.startFn()
	waitReady(t, p.base)
	return p
}

// topic is the per-schema (or per-stream) topic of name.
func (p *clientPipeline) topic(name string) string { return p.prefix + "_" + name }

// restartIntake stops the process serving HTTP (standalone: all of it),
// runs whileDown, and starts it again on the same address and data.
func (p *clientPipeline) restartIntake(t *testing.T, whileDown func()) {
	t.Helper()
	p.stopFn(t, p.intake)
	whileDown()
	p.intake = p.startFn()
	waitReady(t, p.base)
}

// read returns the records of topic from the beginning: it waits (up to 60
// s) for want records when want > 0, else reads to the end of what the
// topic holds now (tail --from-beginning --count N without --timeout stops
// at the end offsets it lists at start, so a slow consumer start on a
// loaded machine cannot cut the read short).
func (p *clientPipeline) read(t *testing.T, topic string, want int) []map[string]any {
	t.Helper()
	args := []string{"tail", "--from-beginning"}
	if p.realKafka {
		args = append(args, "--brokers", strings.Join(p.brokers, ","))
	} else {
		args = append(args, "--data-dir", p.dataDir)
	}
	if want > 0 {
		// The processor creates a schema's topic with its first event;
		// tail with --timeout waits for it.
		args = append(args, "--count", strconv.Itoa(want), "--timeout", "60s")
	} else {
		args = append(args, "--count", "1000000000")
	}
	out := runCLI(t, append(args, topic)...)
	var recs []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("tail %s printed %q: %v", topic, line, err)
		}
		recs = append(recs, m)
	}
	if want > 0 && len(recs) != want {
		t.Fatalf("%s holds %d records after 60 s, want %d:\n%s", topic, len(recs), want, out)
	}
	return recs
}

// recordField returns the value at a dotted path of a record ("event.responseStart").
func recordField(rec map[string]any, path string) any {
	var v any = rec
	for k := range strings.SplitSeq(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
