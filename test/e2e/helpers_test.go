package e2e

// Helpers shared by several end-to-end tests: plain HTTP requests, a
// test's own topics for the sink, the capsules fed to it, the one
// configuration file of an intake → process → sink pipeline, and a bench
// run against a standalone.

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/kafkatest"
	"github.com/eventlogging/eventlogging/internal/loadgen"
	"github.com/eventlogging/eventlogging/internal/sink/sqlsink"
)

// doHTTP sends req with c and returns the status and the whole body; an
// error when there is no answer or the body breaks off.
func doHTTP(c *http.Client, req *http.Request) (int, string, error) {
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// get GETs u; see doHTTP. For polling: it does not fail the test.
func get(ctx context.Context, u string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, "", err
	}
	return doHTTP(http.DefaultClient, req)
}

// isReady reports whether base/readyz answers 200.
func isReady(ctx context.Context, base string) bool {
	status, _, err := get(ctx, base+"/readyz")
	return err == nil && status == http.StatusOK
}

// openSQLite opens the SQLite database at path as the sink does, to read
// what it stored; it is closed when the test ends.
func openSQLite(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sqlsink.Open(sqlsink.SQLite, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// sinkPrefix is a topic prefix unique to the test, with underscores: the
// sink's regex ^<prefix>_.+ then matches the per-schema topics only, not
// <prefix>-raw or <prefix>-errors.
func sinkPrefix(t *testing.T, name string) string {
	return strings.ReplaceAll(kafkatest.Topic(t, name), "-", "_")
}

// sinkEnv configures `eventlogging sink` on brokers for the prefix's
// per-schema topics in consumer group group, with 200 ms batches, then
// more.
func sinkEnv(brokers []string, prefix, group string, more ...string) []string {
	return append([]string{
		"EVENTLOGGING_KAFKA_BROKERS=" + strings.Join(brokers, ","),
		"EVENTLOGGING_SINK_TOPICS=^" + prefix + "_.+",
		"EVENTLOGGING_SINK_GROUP=" + group,
		"EVENTLOGGING_SINK_ERROR_TOPIC=" + prefix + "-sinkerrors",
		"EVENTLOGGING_SINK_BATCH_TIME=200ms",
	}, more...)
}

// capsuleTime is the receive time of every capsule of a capsuleSet.
const capsuleTime = 1764496800 // 2025-11-30T10:00:00Z

// capsuleSet describes numbered capsules of one schema as the processor
// writes them to a per-schema topic, to feed the sink directly.
type capsuleSet struct {
	schema   string
	revision int64
	wiki     string
	recvFrom string             // also seeds the uuids
	event    func(i int) string // the event object of capsule i
}

// uuid is the uuid of capsule i.
func (c capsuleSet) uuid(i int) string {
	return capsule.UUID(c.recvFrom, int64(i), capsuleTime)
}

// produce writes capsules from to to-1 to topic and waits for the acks.
func (c capsuleSet) produce(t *testing.T, cl *kgo.Client, topic string, from, to int) {
	t.Helper()
	recs := make([]*kgo.Record, 0, to-from)
	for i := from; i < to; i++ {
		v := fmt.Sprintf(`{"event":%s,"schema":%q,"revision":%d,"wiki":%q,"recvFrom":%q,"seqId":%d,"timestamp":%d,"dt":"2025-11-30T10:00:00Z","uuid":%q,"topic":%q}`,
			c.event(i), c.schema, c.revision, c.wiki, c.recvFrom, i, capsuleTime, c.uuid(i), topic)
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(v)})
	}
	if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// pipelineConfig is the one configuration file of an intake, processors
// and a SQL sink on a test's own topics and groups: <prefix>-raw,
// <prefix>_{schema}, <prefix>-errors, groups <prefix>-processor and
// <prefix>-sink, as a deployment would have it.
type pipelineConfig struct {
	brokers          []string
	prefix           string
	listen, spoolDir string // the intake's
	// More lines of the kafka, intake and process sections (indented), and
	// further sections after sink.
	kafka, intake, process, more string
}

// write writes the configuration to path.
func (c pipelineConfig) write(t *testing.T, path string) {
	t.Helper()
	brokers := make([]string, len(c.brokers))
	for i, b := range c.brokers {
		brokers[i] = strconv.Quote(b)
	}
	yaml := fmt.Sprintf(`kafka:
  brokers: [%s]
%s  session_timeout: 6s
intake:
  listen: %q
  raw_topic: %q
  spool_dir: %q
%sprocess:
  group: %q
  inputs:
    - topic: %q
      format: %q
  schemas_dir: %q
  topic_template: %q
  error_topic: %q
  mixed_topic: "-"
%ssink:
  topics: %q
  group: %q
  error_topic: %q
  batch_time: 200ms
%s`, strings.Join(brokers, ", "), c.kafka, c.listen, c.prefix+"-raw", c.spoolDir, c.intake,
		c.prefix+"-processor", c.prefix+"-raw", "%q %{recvFrom}s %{seqId}d %t %h %{userAgent}i",
		exampleSchemas(t), c.prefix+"_{schema}", c.prefix+"-errors", c.process,
		"^"+c.prefix+"_.+", c.prefix+"-sink", c.prefix+"-sinkerrors", c.more)
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
}

// exampleSchemas is the absolute path of examples/schemas: a relative path
// in a configuration file is relative to the file's folder.
func exampleSchemas(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../../examples/schemas")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// benchStandalone sends events valid events to the standalone at base with
// `eventlogging bench` (POST batches of 100 from concurrency clients) and
// follows them into its sinks; it fails the test unless every event was
// accepted and followed within followTimeout, and returns bench's report.
func benchStandalone(t *testing.T, base, dataDir string, events, concurrency int, followTimeout string) loadgen.Report {
	t.Helper()
	out := runCLI(t, "bench", "--url", base, "--data-dir", dataDir, "--schemas", "../../examples/schemas",
		"--mode", "post", "--batch", "100", "--events", strconv.Itoa(events), "--invalid", "0",
		"--concurrency", strconv.Itoa(concurrency), "--follow-timeout", followTimeout, "--json")
	var rep loadgen.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bench --json printed %q: %v", out, err)
	}
	if rep.Events.Accepted != int64(events) || rep.Follow == nil || !rep.Follow.Complete {
		t.Fatalf("bench: %d accepted, follow %+v", rep.Events.Accepted, rep.Follow)
	}
	return rep
}

// waitPublished waits until the sink sinkName (files, iceberg) of the
// standalone at base counts at least n rows published.
func waitPublished(t *testing.T, base, sinkName string, n int, timeout time.Duration) {
	t.Helper()
	waitFor(t, timeout, "the "+sinkName+" sink to publish every event", func() bool {
		return publishedRowsOf(t, base, sinkName) >= n
	})
}

// notOnce counts the keys of counts not seen exactly once.
func notOnce(counts map[string]int) int {
	n := 0
	for _, c := range counts {
		if c != 1 {
			n++
		}
	}
	return n
}
