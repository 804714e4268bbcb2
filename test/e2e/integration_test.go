package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/kafkatest"
)

// cmdDir is the eventlogging command the tests build and run.
const cmdDir = "../../cmd/eventlogging"

// buildOnce compiles the eventlogging command once per test binary, with
// the race detector when the tests have it.
var buildOnce = sync.OnceValues(func() (string, error) {
	if !raceEnabled {
		// The pass without -race (scripts/test.sh's load, fault and
		// warehouse runs) measures throughput: its standalones run the
		// build users run, not one under the race detector. (On a
		// machine without a race build cache, compiling that one also
		// took the pass's first test 5 minutes.)
		return plainBuild()
	}
	dir, err := os.MkdirTemp("", "eventlogging-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "eventlogging")
	out, err := exec.CommandContext(context.Background(), "go", "build", "-race", "-o", bin, cmdDir).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	return bin, nil
})

func binary(t testing.TB) string {
	t.Helper()
	bin, err := buildOnce()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// expectation is what one raw line must become.
type expectation struct {
	uuid     string
	schema   string // valid: per-schema topic; invalid: EventError's schema
	revision int64
	code     string // "" when valid
}

// rawCorpus builds n raw client-side lines: 95% valid across 5 schemas, the
// rest invalid in various ways.
func rawCorpus(n int) ([]string, []expectation) {
	valid := []struct {
		schema   string
		revision int64
		event    func(i int) string
	}{
		{"Generic", 13, func(i int) string { return fmt.Sprintf(`{"articleId":%d,"articleTitle":"Héctor Elizondo %d"}`, i, i) }},
		{"ButtonClick", 1, func(i int) string {
			return fmt.Sprintf(`{"button":"save","page":"Page_%d","count":%d,"loggedIn":%t}`, i, i%7, i%2 == 0)
		}},
		{"PageView", 2, func(i int) string {
			return fmt.Sprintf(`{"title":"T%d","namespace":%d,"referrer":"https://example.org/%d","timing":{"firstPaint":%d.5}}`, i, i%4, i, i)
		}},
		{"SearchQuery", 5, func(i int) string {
			return fmt.Sprintf(`{"query":"q %d","results":%d,"source":"fulltext","dt":"2026-11-30T10:00:00Z"}`, i, i%50)
		}},
		{"NavigationTiming", 7, func(i int) string {
			return fmt.Sprintf(`{"responseStart":%d,"loadEventEnd":%d,"isHttps":true,"mobileMode":"stable"}`, i, i+100)
		}},
	}
	const ts = 1764496800 // 2025-11-30T10:00:00Z
	tsText := time.Unix(ts, 0).UTC().Format("2006-01-02T15:04:05")
	line := func(capsuleJSON string, seq int) string {
		return "?" + url.QueryEscape(capsuleJSON) + ";\tcp1.example\t" + fmt.Sprint(seq) + "\t" + tsText + "\t198.51.100.7\tMozilla/5.0 (X11)"
	}
	lines := make([]string, n)
	exp := make([]expectation, n)
	for i := range n {
		seq := i + 1
		uuid := capsule.UUID("cp1.example", int64(seq), ts)
		if i%20 != 19 { // 95% valid
			v := valid[i%len(valid)]
			lines[i] = line(fmt.Sprintf(`{"event":%s,"revision":%d,"schema":%q,"webHost":"en.wikipedia.org","wiki":"enwiki"}`, v.event(i), v.revision, v.schema), seq)
			exp[i] = expectation{uuid: uuid, schema: v.schema, revision: v.revision}
			continue
		}
		switch (i / 20) % 5 {
		case 0: // unknown schema
			lines[i] = line(`{"event":{},"revision":99,"schema":"NoSuchSchema","wiki":"enwiki"}`, seq)
			exp[i] = expectation{uuid: uuid, schema: "NoSuchSchema", revision: 99, code: capsule.CodeProcessor}
		case 1: // missing required property
			lines[i] = line(`{"event":{"articleId":1},"revision":13,"schema":"Generic","wiki":"enwiki"}`, seq)
			exp[i] = expectation{uuid: uuid, schema: "Generic", revision: 13, code: capsule.CodeValidation}
		case 2: // wrong type
			lines[i] = line(`{"event":{"button":"save","page":3},"revision":1,"schema":"ButtonClick"}`, seq)
			exp[i] = expectation{uuid: uuid, schema: "ButtonClick", revision: 1, code: capsule.CodeValidation}
		case 3: // broken JSON: the uuid cannot be computed, the error is keyed by Kafka coordinates
			lines[i] = line(`{"event":{"title":"x"`, seq)
			exp[i] = expectation{schema: "unknown", revision: -1, code: capsule.CodeProcessor}
		case 4: // line does not match the format
			lines[i] = fmt.Sprintf("garbage line %d", seq)
			exp[i] = expectation{schema: "unknown", revision: -1, code: capsule.CodeProcessor}
		}
	}
	return lines, exp
}

// processor is one `eventlogging process` OS process.
type processor struct {
	cmd *exec.Cmd
	log *os.File
}

func startProcessor(t *testing.T, bin string, args []string, logPath string) *processor {
	t.Helper()
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, append([]string{"process"}, args...)...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.Env = append(os.Environ(), "EVENTLOGGING_KAFKA_SESSION_TIMEOUT=6s")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return &processor{cmd: cmd, log: lf}
}

func (p *processor) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
	p.log.Close()
}
func (p *processor) term() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	err := p.cmd.Wait()
	p.log.Close()
	return err
}

// TestProcessorKafkaKill is the acceptance test of the processor on a real
// broker: 20,000 raw lines on a 6-partition topic, two processors in one
// group, one SIGKILLed mid-way and restarted; every line must come out.
func TestProcessorKafkaKill(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	bin := binary(t)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()

	prefix := kafkatest.Topic(t, "it")
	raw := prefix + "-raw"
	errTopic := prefix + "_EventError"
	mixed := prefix + "-mixed"
	group := prefix + "-processor"

	cl := kafkaClient(t, brokers, kgo.RequiredAcks(kgo.AllISRAcks()))
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 6, 1, nil, raw); err != nil {
		t.Fatal(err)
	}

	const n = 20_000
	lines, exp := rawCorpus(n)
	args := []string{
		"--kafka-brokers", strings.Join(brokers, ","), "--group", group, "--raw-topic", raw,
		"--schemas", "../../examples/schemas",
		"--topic-template", prefix + "_{schema}", "--error-topic", errTopic, "--mixed-topic", mixed,
	}
	dir := t.TempDir()
	a := startProcessor(t, bin, args, filepath.Join(dir, "a.log"))
	b := startProcessor(t, bin, args, filepath.Join(dir, "b.log"))
	defer func() {
		if t.Failed() {
			for _, f := range []string{"a.log", "b.log"} {
				data, _ := os.ReadFile(filepath.Join(dir, f))
				t.Logf("%s:\n%s", f, tail(string(data), 3000))
			}
		}
	}()

	// Both members must own partitions before the stream starts, so the kill
	// below takes work away from a busy member.
	waitGroupMembers(ctx, t, adm, group, 2)

	// Produce the raw lines as a stream over a few seconds, so the kill
	// lands while the group is busy.
	var killed sync.WaitGroup
	killed.Add(1)
	go func() {
		defer killed.Done()
		for i := 0; i < n; i += 500 {
			recs := make([]*kgo.Record, 0, 500)
			for j := i; j < min(i+500, n); j++ {
				recs = append(recs, &kgo.Record{Topic: raw, Value: []byte(lines[j])})
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Errorf("produce raw: %v", err)
				return
			}
			if i == n*2/5 {
				a.kill() // SIGKILL mid-stream: nothing graceful happens
				t.Logf("SIGKILLed processor A after %d raw lines", i)
			}
			time.Sleep(10 * time.Millisecond) // pace the stream (load shape, not synchronisation)
		}
	}()
	killed.Wait()
	a = startProcessor(t, bin, args, filepath.Join(dir, "a.log"))

	// Read every output topic until every line is accounted for.
	topics := []string{errTopic, mixed}
	for _, s := range []string{"Generic", "ButtonClick", "PageView", "SearchQuery", "NavigationTiming"} {
		topics = append(topics, prefix+"_"+s)
	}
	got := readOutputs(ctx, t, brokers, topics, errTopic, mixed, exp)
	if err := a.term(); err != nil {
		t.Errorf("processor A did not stop cleanly on SIGTERM: %v", err)
	}
	if err := b.term(); err != nil {
		t.Errorf("processor B did not stop cleanly on SIGTERM: %v", err)
	}

	// Verdict. EventErrors hold the raw line with its client IP replaced by
	// the marked hash (process.ip hash): the hash every capsule carries.
	var ipHash string
	for ip := range got.clientIPs {
		ipHash = ip
	}
	missing, wrong := 0, 0
	for i, e := range exp {
		if e.code == "" {
			if got.valid[e.uuid] == 0 {
				missing++
			} else if got.validSchema[e.uuid] != e.schema {
				wrong++
			}
			if got.mixed[e.uuid] == 0 {
				missing++
			}
			continue
		}
		key := strings.Replace(lines[i], "\t198.51.100.7\t", "\th:"+ipHash+"\t", 1)
		errs := got.errors[key]
		if len(errs) == 0 {
			missing++
			continue
		}
		if ee := errs[0]; ee.Code != e.code || ee.Schema != e.schema || ee.Revision != e.revision {
			wrong++
			if wrong < 5 {
				t.Errorf("line %d: EventError %s %s/%d, want %s %s/%d (%s)", i, ee.Code, ee.Schema, ee.Revision, e.code, e.schema, e.revision, ee.Message)
			}
		}
	}
	if missing > 0 || wrong > 0 {
		t.Fatalf("%d outputs missing, %d wrong", missing, wrong)
	}
	// Every line came from one client IP: both processors (and the restarted
	// one) must have hashed it with the same shared key.
	if len(got.clientIPs) != 1 {
		t.Errorf("one client IP hashed %d different ways: %v", len(got.clientIPs), got.clientIPs)
	}
	for ip := range got.clientIPs {
		if len(ip) != 64 || ip == "198.51.100.7" {
			t.Errorf("clientIp %q is not an HMAC-SHA256 hex", ip)
		}
	}

	// Duplicates: every record in the (fresh) output topics minus the
	// distinct outputs expected. At-least-once allows them; report the count.
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	distinct := int64(len(got.valid) + len(got.mixed) + len(got.errors))
	t.Logf("all %d lines accounted for: %d distinct outputs, %d records, %d duplicates from the kill and restart", n, distinct, total, total-distinct)
	if total < distinct {
		t.Fatalf("fewer records (%d) than distinct outputs (%d)", total, distinct)
	}

	// A client we did not write reads one output topic.
	checkWithKcat(ctx, t, brokers, prefix+"_Generic", exp)
}

// waitGroupMembers polls until the group is stable with n members that all
// own partitions.
func waitGroupMembers(ctx context.Context, t *testing.T, adm *kadm.Client, group string, n int) {
	t.Helper()
	deadline, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		groups, err := adm.DescribeGroups(deadline, group)
		if err == nil {
			if g, ok := groups[group]; ok && g.State == "Stable" && len(g.Members) == n {
				owning := 0
				for _, m := range g.Members {
					if a, ok := m.Assigned.AsConsumer(); ok && len(a.Topics) > 0 {
						owning++
					}
				}
				if owning == n {
					return
				}
			}
		}
		select {
		case <-deadline.Done():
			t.Fatalf("group %s never had %d members owning partitions (last error: %v)", group, n, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

type outputs struct {
	valid, mixed map[string]int
	validSchema  map[string]string
	errors       map[string][]capsule.EventError
	clientIPs    map[string]bool // distinct clientIp values of valid events
}

func readOutputs(ctx context.Context, t *testing.T, brokers, topics []string, errTopic, mixed string, exp []expectation) outputs {
	t.Helper()
	wantValid, wantErr := 0, 0
	for _, e := range exp {
		if e.code == "" {
			wantValid++
		} else {
			wantErr++
		}
	}
	o := outputs{valid: map[string]int{}, mixed: map[string]int{}, validSchema: map[string]string{}, errors: map[string][]capsule.EventError{}, clientIPs: map[string]bool{}}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	deadline, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for len(o.valid) < wantValid || len(o.mixed) < wantValid || len(o.errors) < wantErr {
		fetches := cl.PollFetches(deadline)
		if deadline.Err() != nil {
			t.Fatalf("timed out: %d/%d valid, %d/%d mixed, %d/%d errors", len(o.valid), wantValid, len(o.mixed), wantValid, len(o.errors), wantErr)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			switch r.Topic {
			case errTopic:
				var ec capsule.ErrorCapsule
				if err := json.Unmarshal(r.Value, &ec); err != nil {
					t.Errorf("bad EventError: %v", err)
					return
				}
				o.errors[ec.Event.RawEvent] = append(o.errors[ec.Event.RawEvent], ec.Event)
			default:
				var c struct {
					UUID     string `json:"uuid"`
					Schema   string `json:"schema"`
					ClientIP string `json:"clientIp"`
				}
				if err := json.Unmarshal(r.Value, &c); err != nil {
					t.Errorf("bad capsule in %s: %v", r.Topic, err)
					return
				}
				o.clientIPs[c.ClientIP] = true
				if r.Topic == mixed {
					o.mixed[c.UUID]++
				} else {
					o.valid[c.UUID]++
					o.validSchema[c.UUID] = c.Schema
				}
			}
		})
	}
	return o
}

// checkWithKcat reads a per-schema topic with kcat and checks it holds
// exactly the Generic events' uuids.
func checkWithKcat(ctx context.Context, t *testing.T, brokers []string, topic string, exp []expectation) {
	t.Helper()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("kcat not installed (scripts/test.sh installs it)")
		}
		t.Skip("kcat not installed; skipping the kcat cross-check")
	}
	out, err := exec.CommandContext(ctx, kcat, "-C", "-b", brokers[0], "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%s\n").Output()
	if err != nil {
		t.Fatalf("kcat: %v", err)
	}
	seen := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var c struct {
			UUID   string          `json:"uuid"`
			Schema string          `json:"schema"`
			Event  json.RawMessage `json:"event"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("kcat read a record that is not JSON: %v: %q", err, sc.Text())
		}
		if c.Schema != "Generic" || len(c.Event) == 0 {
			t.Fatalf("kcat read a foreign record: %s", sc.Text())
		}
		seen[c.UUID] = true
	}
	want := 0
	for _, e := range exp {
		if e.code == "" && e.schema == "Generic" {
			want++
			if !seen[e.uuid] {
				t.Fatalf("kcat did not see uuid %s", e.uuid)
			}
		}
	}
	if len(seen) != want {
		t.Fatalf("kcat saw %d distinct uuids, want %d", len(seen), want)
	}
	t.Logf("kcat read %d distinct Generic events from %s", len(seen), topic)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
