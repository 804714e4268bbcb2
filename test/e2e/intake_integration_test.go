package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventlogging/eventlogging/internal/kafkatest"
)

// freeAddr returns a loopback address with a free port.
//
// The port is drawn below Linux's ephemeral range (32768–60999): a port the
// kernel handed out (":0") is free only until the next outgoing connection
// of any process on the machine takes it as its local port, which happened
// between freeAddr and the child process's listen while other packages'
// tests ran. Below the range only other listeners compete.
func freeAddr(t *testing.T) string {
	t.Helper()
	for range 100 {
		addr := fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(12000))
		ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", addr)
		if err != nil {
			continue
		}
		_ = ln.Close()
		return addr
	}
	t.Fatal("no free port in 20000-31999 after 100 tries")
	return ""
}

// service is one eventlogging OS process started by a test.
type service struct {
	name string
	cmd  *exec.Cmd
	log  *bytes.Buffer
	mu   *sync.Mutex
}

type lockedBuffer struct {
	mu  *sync.Mutex
	buf *bytes.Buffer
}

func (l lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func startService(t *testing.T, name string, env []string, args ...string) *service {
	t.Helper()
	s := newService(t, binary(t), name, env, args...)
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.killAtCleanup(t, 4000, func() bool { return true })
	return s
}

// newService prepares the process bin args with env over the test's
// environment (later duplicates win), its output in its log.
func newService(t *testing.T, bin, name string, env []string, args ...string) *service {
	s := &service{name: name, log: &bytes.Buffer{}, mu: &sync.Mutex{}}
	s.cmd = exec.CommandContext(t.Context(), bin, args...)
	s.cmd.Env = append(os.Environ(), env...)
	s.cmd.Stdout = lockedBuffer{s.mu, s.log}
	s.cmd.Stderr = lockedBuffer{s.mu, s.log}
	return s
}

// killAtCleanup kills the started s when the test ends; when the test
// failed, s's whole log goes to a file, and its last tailBytes are shown
// when show says so (else only where the file is).
func (s *service) killAtCleanup(t *testing.T, tailBytes int, show func() bool) {
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		_, _ = s.cmd.Process.Wait()
		if t.Failed() {
			full := filepath.Join(os.TempDir(), fmt.Sprintf("eventlogging-%s-%d.log", strings.ReplaceAll(s.name, " ", "_"), s.cmd.Process.Pid))
			_ = os.WriteFile(full, []byte(s.logs()), 0o644)
			if show() {
				t.Logf("%s log (whole log in %s):\n%s", s.name, full, tail(s.logs(), tailBytes))
			} else {
				t.Logf("%s log in %s", s.name, full)
			}
		}
	})
}

func (s *service) logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// stop sends SIGTERM and waits; a clean exit is required.
func (s *service) stop(t *testing.T) {
	t.Helper()
	_ = s.cmd.Process.Signal(os.Interrupt)
	if err := s.cmd.Wait(); err != nil {
		t.Errorf("%s did not stop cleanly: %v\n%s", s.name, err, tail(s.logs(), 2000))
	}
}

// waitReady polls GET base/readyz until 200.
func waitReady(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if isReady(t.Context(), base) {
			return
		}
		time.Sleep(100 * time.Millisecond) // polling interval
	}
	t.Fatalf("%s/readyz never answered 200", base)
}

func beaconURL(base, capsuleJSON string) string {
	return base + "/beacon/event?" + url.PathEscape(capsuleJSON) + ";"
}

// sendBeacons sends n beacons from `clients` keep-alive clients; capsule(i)
// gives the i-th. It returns how many were not answered 204.
func sendBeacons(t *testing.T, base string, n, clients int, capsule func(i int) string) int64 {
	t.Helper()
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}, Timeout: 30 * time.Second}
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if status, ok := getBeacon(t.Context(), hc, base, capsule(i)); !ok || status != http.StatusNoContent {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return failed.Load()
}

// getBeacon sends one beacon with hc and returns the answer's status; ok
// is false when there was no answer.
func getBeacon(ctx context.Context, hc *http.Client, base, capsule string) (status int, ok bool) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, beaconURL(base, capsule), nil)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, true
}

// TestIntakeBeaconsToTopics: 10,000 beacons over HTTP (keep-alive, 32
// concurrent clients) through `eventlogging intake` and `eventlogging
// process` on the real broker end up as capsules, counted by uuid; a POST of
// 100 mixed events answers 207 per event; ?hasty=true answers 202.
func TestIntakeBeaconsToTopics(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	prefix := kafkatest.Topic(t, "intake")
	addr := freeAddr(t)
	base := "http://" + addr
	env := pipelineEnv(brokers, prefix, addr, t.TempDir(), "../../examples/schemas")
	in := startService(t, "intake", env, "intake")
	proc := startService(t, "process", env, "process", "--raw-topic", prefix+"-raw")
	waitReady(t, base)

	const n = 10_000
	failed := sendBeacons(t, base, n, 32, func(i int) string {
		return fmt.Sprintf(`{"event":{"articleId":%d,"articleTitle":"Title %d"},"revision":13,"schema":"Generic","webHost":"test.wikipedia.org","wiki":"testwiki"}`, i, i)
	})
	if failed > 0 {
		t.Fatalf("%d beacons not answered 204", failed)
	}

	// Every beacon is a capsule in eventlogging_Generic, once per uuid.
	uuids := map[string]bool{}
	articles := map[float64]bool{}
	records := 0
	consumeUntil(t, brokers, prefix+"_Generic", func(r *kgo.Record) bool {
		records++
		var c struct {
			UUID  string         `json:"uuid"`
			Event map[string]any `json:"event"`
		}
		if err := json.Unmarshal(r.Value, &c); err != nil {
			t.Fatalf("capsule: %v", err)
		}
		uuids[c.UUID] = true
		articles[c.Event["articleId"].(float64)] = true
		return len(articles) == n
	})
	if len(uuids) != n {
		t.Fatalf("%d distinct uuids for %d beacons", len(uuids), n)
	}
	t.Logf("%d beacons → %d capsules, %d distinct uuids, none missing", n, records, len(uuids))

	// A POST of 100 mixed events: 207, a result per event.
	var batch []string
	var want []string
	for i := range 100 {
		switch i % 4 {
		case 0, 1:
			batch = append(batch, fmt.Sprintf(`{"schema":"Generic","revision":13,"event":{"articleId":%d,"articleTitle":"t"}}`, 100000+i))
			want = append(want, "accepted")
		case 2:
			batch = append(batch, `{"schema":"Generic","revision":13,"event":{"articleId":"not a number"}}`)
			want = append(want, "invalid")
		case 3:
			batch = append(batch, `{"schema":"NoSuchSchema","revision":1,"event":{}}`)
			want = append(want, "invalid")
		}
	}
	status, body := httpPost(t, base+"/v1/events", "["+strings.Join(batch, ",")+"]")
	if status != http.StatusMultiStatus {
		t.Fatalf("batch: status %d: %.500s", status, body)
	}
	var pr struct {
		Accepted, Invalid int
		Events            []struct {
			Index  int
			Status string
			Code   string
		}
	}
	if err := json.Unmarshal(body, &pr); err != nil {
		t.Fatal(err)
	}
	if pr.Accepted != 50 || pr.Invalid != 50 || len(pr.Events) != 100 {
		t.Fatalf("batch: %d accepted, %d invalid, %d results", pr.Accepted, pr.Invalid, len(pr.Events))
	}
	for i, e := range pr.Events {
		if e.Index != i || e.Status != want[i] {
			t.Errorf("event %d: %+v, want %s", i, e, want[i])
		}
		if i%4 == 3 && e.Code != "processor" {
			t.Errorf("unknown schema: code %q, want processor", e.Code)
		}
	}

	// Hasty: 202 at once.
	status, body = httpPost(t, base+"/v1/events?hasty=true", `[{"schema":"Generic","revision":13,"event":{"articleId":1,"articleTitle":"h"}}]`)
	if status != http.StatusAccepted {
		t.Fatalf("hasty: status %d: %s", status, body)
	}
	in.stop(t)
	proc.stop(t)
}

func httpPost(t *testing.T, u, body string) (int, []byte) {
	t.Helper()
	code, b := request(t, http.MethodPost, u, body, map[string]string{"Content-Type": "application/json"})
	return code, []byte(b)
}

// startStandalone starts a standalone with env and the data directory
// dataDir, on free addresses, with args, and waits until it is ready; it
// returns the service and its base URL.
func startStandalone(t *testing.T, env []string, dataDir string, args ...string) (*service, string) {
	t.Helper()
	addr := freeAddr(t)
	sa := startService(t, "standalone", env, append([]string{"standalone", "--data-dir", dataDir, "--listen", addr, "--kafka-listen", freeAddr(t)}, args...)...)
	waitReady(t, "http://"+addr)
	return sa, "http://" + addr
}

// pipelineEnv configures an intake listening on listen and a processor on
// brokers, with a test's own topics (prefix-raw, prefix_<Schema>,
// prefix_EventError, no mixed topic) and group (prefix), then more.
func pipelineEnv(brokers []string, prefix, listen, spoolDir, schemas string, more ...string) []string {
	return append([]string{
		"EVENTLOGGING_KAFKA_BROKERS=" + strings.Join(brokers, ","),
		"EVENTLOGGING_KAFKA_SESSION_TIMEOUT=6s",
		"EVENTLOGGING_INTAKE_RAW_TOPIC=" + prefix + "-raw",
		"EVENTLOGGING_INTAKE_LISTEN=" + listen,
		"EVENTLOGGING_INTAKE_SPOOL_DIR=" + spoolDir,
		"EVENTLOGGING_PROCESS_TOPIC_TEMPLATE=" + prefix + "_{schema}",
		"EVENTLOGGING_PROCESS_ERROR_TOPIC=" + prefix + "_EventError",
		"EVENTLOGGING_PROCESS_MIXED_TOPIC=-",
		"EVENTLOGGING_PROCESS_GROUP=" + prefix,
		"EVENTLOGGING_PROCESS_SCHEMAS_DIR=" + schemas,
	}, more...)
}

// consumeUntil reads topic from the start until done returns true (or a
// 2-minute deadline fails the test).
func consumeUntil(t *testing.T, brokers []string, topic string, done func(*kgo.Record) bool) {
	t.Helper()
	pollFrom(t, brokers, nil, topic, 2*time.Minute, func(f kgo.Fetches) bool {
		stop := false
		f.EachRecord(func(r *kgo.Record) {
			if !stop && done(r) {
				stop = true
			}
		})
		return stop
	}, func(kgo.Fetches) { t.Fatalf("%s: timed out", topic) })
}

// pollFrom reads topic from its start with opts, a poll at a time, until
// done returns true; after timeout it calls timedOut with the last poll.
func pollFrom(t *testing.T, brokers []string, opts []kgo.Opt, topic string, timeout time.Duration, done func(kgo.Fetches) bool, timedOut func(kgo.Fetches)) {
	t.Helper()
	cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	for {
		f := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			timedOut(f)
			return
		}
		if done(f) {
			return
		}
	}
}

// countRecords is the number of records in topic (sum of end offsets); 0
// when it does not exist.
func countRecords(t *testing.T, brokers []string, topic string) int64 {
	t.Helper()
	var n int64
	endOffsets(t, brokers, topic).Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			n += o.Offset
		}
	})
	return n
}

// endOffsets are the end offsets of topic's partitions.
func endOffsets(t *testing.T, brokers []string, topic string) kadm.ListedOffsets {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	return ends
}

// ownBroker starts a second real Kafka broker (its own port and data) that
// this test may stop and start; scripts/kafka.sh does the work.
type ownBroker struct {
	env  []string
	addr string
}

func startOwnBroker(t *testing.T) *ownBroker {
	t.Helper()
	kafkatest.Brokers(t) // same skip/fail rule as every integration test
	b := &ownBroker{env: append(os.Environ(), "KAFKA_PORT=39192", "KAFKA_RUN_DIR="+filepath.Join(t.TempDir(), "kafka"), "KAFKA_HEAP=384m"), addr: "127.0.0.1:39192"}
	b.run(t, "start", "--fresh")
	t.Cleanup(func() { b.run(t, "stop") })
	return b
}

func (b *ownBroker) run(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(context.Background(), "../../scripts/kafka.sh", args...)
	cmd.Env = b.env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/kafka.sh %v: %v\n%s", args, err, out)
	}
}

// TestIntakeKafkaOutage: the broker stops, 1,000 beacons are answered 204
// (spooled), the broker starts again: all 1,000 reach the raw topic, none
// twice.
func TestIntakeKafkaOutage(t *testing.T) {
	b := startOwnBroker(t)
	addr := freeAddr(t)
	base := "http://" + addr
	raw := "outage-raw"
	env := []string{
		"EVENTLOGGING_KAFKA_BROKERS=" + b.addr,
		"EVENTLOGGING_INTAKE_RAW_TOPIC=" + raw,
		"EVENTLOGGING_INTAKE_LISTEN=" + addr,
		"EVENTLOGGING_INTAKE_SPOOL_DIR=" + t.TempDir(),
		"EVENTLOGGING_INTAKE_DELIVERY_TIMEOUT=3s",
		"EVENTLOGGING_PROCESS_SCHEMAS_DIR=../../examples/schemas",
		"EVENTLOGGING_PROCESS_IP=drop",
	}
	in := startService(t, "intake", env, "intake")
	waitReady(t, base)

	b.run(t, "stop")
	const n = 1000
	failed := sendBeacons(t, base, n, 8, func(i int) string {
		return fmt.Sprintf(`{"event":{"articleId":%d,"articleTitle":"outage"},"revision":13,"schema":"Generic"}`, i)
	})
	if failed > 0 {
		t.Fatalf("%d of %d beacons not answered 204 during the outage", failed, n)
	}
	b.run(t, "start")

	seqs := map[string]int{}
	consumeUntil(t, []string{b.addr}, raw, func(r *kgo.Record) bool {
		fields := strings.Split(string(r.Value), "\t")
		seqs[fields[2]]++
		return len(seqs) == n
	})
	// Let the replay finish, then count every record of the topic.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(in.logs(), "spool drained") {
		time.Sleep(100 * time.Millisecond) // polling interval
	}
	total := countRecords(t, []string{b.addr}, raw)
	if total != n {
		// Diagnose: which offsets hold the duplicates.
		var dupOffsets []int64
		seen := map[string]bool{}
		consumeUntil(t, []string{b.addr}, raw, func(r *kgo.Record) bool {
			seq := strings.Split(string(r.Value), "\t")[2]
			if seen[seq] && len(dupOffsets) < 10 {
				dupOffsets = append(dupOffsets, r.Offset)
			}
			seen[seq] = true
			return r.Offset+1 >= total
		})
		t.Fatalf("raw topic holds %d records for %d beacons (duplicates or losses); first duplicate offsets %v", total, n, dupOffsets)
	}
	t.Logf("outage: %d beacons answered 204 while the broker was down; all %d in the raw topic once", n, total)
	in.stop(t)
}
