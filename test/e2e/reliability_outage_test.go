package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventlogging/eventlogging/internal/kafkatest"
	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// TestSpoolDiskFull: the intake's spool is a 2 MiB tmpfs and its broker is
// stopped; beacons are sent until the spool is full. Answers must turn from
// 204 to 503 with Retry-After — never 500, never a dropped connection.
// Then the broker starts again: the spool drains, and every beacon answered
// 204 is in the raw topic exactly once.
func TestSpoolDiskFull(t *testing.T) {
	faultPass(t)
	b := startReliabilityBroker(t)
	spool := testsupport.MountTmpfs(t, "2m")
	r := newRig(t, rigConfig{brokers: []string{b.addr}, spoolDir: spool, deliveryTimeout: 3 * time.Second})
	in := r.supervise(roleIntake, "intake")

	b.stop(t)
	s := newSender(r.base, r.prefix, 8, 2000, 400_000)
	loadDone := s.offerInBackground(t, 3*time.Minute)
	// Until one second's worth of beacons has been refused.
	fullAt := time.Duration(0)
	for s.refused.Load() < 2000 {
		select {
		case <-loadDone:
			t.Fatalf("the spool never filled: %s", s.summary())
		case <-time.After(100 * time.Millisecond): // polling interval
		}
		if fullAt == 0 && s.refused.Load() > 0 {
			fullAt = time.Since(s.start)
		}
	}
	s.halt()
	<-loadDone
	var st syscall.Statfs_t
	if err := syscall.Statfs(spool, &st); err != nil {
		t.Fatal(err)
	}
	t.Logf("broker down: first 503 after %.1fs; %s; spool filesystem %d of %d KiB free",
		fullAt.Seconds(), s.summary(), st.Bavail*uint64(st.Bsize)/1024, st.Blocks*uint64(st.Bsize)/1024)
	for i, c := range s.status {
		if c != notSent && c != http.StatusNoContent && c != http.StatusServiceUnavailable {
			t.Fatalf("event %d answered %d on a full spool: want 204 or 503", i, c)
		}
	}
	if n := s.noRetryAfter.Load(); n > 0 {
		t.Errorf("%d answers 503 without Retry-After", n)
	}

	start := time.Now()
	b.run(t, "start")
	up := time.Since(start)
	for time.Since(start) < 90*time.Second && !strings.Contains(in.service().logs(), "spool drained") {
		time.Sleep(100 * time.Millisecond) // polling interval
	}
	if logs := in.service().logs(); strings.Contains(logs, "spool drained") {
		t.Logf("broker answering %.1fs after its start; spool drained %.1fs after its start", up.Seconds(), time.Since(start).Seconds())
	} else {
		t.Errorf("the spool did not drain within 90 s of the broker's start; the intake's last replay error: %s", lastLogLine(logs, "spool replay failed"))
	}

	acked := 0
	for i := range s.status {
		if s.isAcked(i) {
			acked++
		}
	}
	got := rawCounts(t, []string{b.addr}, r.raw, r.prefix, acked, 30*time.Second)
	lost, dups, unacked := 0, 0, 0
	var lostIDs []int
	for i := range s.status {
		if s.isAcked(i) && got[i] == 0 {
			lost++
			if len(lostIDs) < 20 {
				lostIDs = append(lostIDs, i)
			}
		}
	}
	for i, n := range got {
		if n > 1 {
			dups++
		}
		if !s.isAcked(i) {
			unacked++
		}
	}
	t.Logf("spool full: %d offered, %d answered 204, %d refused 503; raw topic: %d distinct, %d lost, %d duplicated, %d without a 204",
		s.sent(), acked, s.refused.Load(), len(got), lost, dups, unacked)
	if lost > 0 || dups > 0 || unacked > 0 {
		t.Errorf("%d acknowledged beacons lost (first %v), %d duplicated, %d refused ones written", lost, lostIDs, dups, unacked)
	}

	// With Kafka back the intake takes beacons again (a marker of their
	// own, which does not contain the first one).
	after := newSender(r.base, strings.Replace(r.prefix, "rel_", "late_", 1), 2, 100, 200)
	after.offer(t.Context(), 2*time.Second)
	t.Logf("after the outage: %s", after.summary())
	afterAcked := 0
	for i := range after.status {
		if after.isAcked(i) {
			afterAcked++
		} else if after.status[i] != notSent {
			t.Errorf("beacon %d after the outage answered %d, want 204", i, after.status[i])
			break
		}
	}
	if afterAcked > 0 {
		late := rawCounts(t, []string{b.addr}, r.raw, after.run, afterAcked, 30*time.Second)
		if len(late) != afterAcked {
			t.Errorf("after the outage: %d beacons answered 204, %d in the raw topic", afterAcked, len(late))
		}
	}
	checkSurvived(t, in)
}

// TestBrokerDown: intake, processor and SQLite sink run at 1,000 beacons/s
// while their only broker is stopped for 30 s (2 min with
// EVENTLOGGING_LONG_FAULTS=1), then started again. No role may exit, the
// intake answers 204 throughout (spooling), and every beacon answered 204
// is in SQL exactly once.
func TestBrokerDown(t *testing.T) {
	faultPass(t)
	b := startReliabilityBroker(t)
	r := newRig(t, rigConfig{brokers: []string{b.addr}})
	roles, adm := r.superviseAll()

	const rate = 1000
	outage := pick(30*time.Second, 2*time.Minute)
	s := r.offerSampled(adm, 8, rate, 10*time.Second+outage+20*time.Second)
	time.Sleep(10 * time.Second) // load before the outage (load shape)
	stopAt := time.Since(s.start)
	b.stop(t)
	t.Logf("%5.1fs broker stopping, stopped at %.1fs", stopAt.Seconds(), time.Since(s.start).Seconds())
	time.Sleep(outage - (time.Since(s.start) - stopAt)) // the outage (fault shape)
	startAt := time.Since(s.start)
	b.run(t, "start")
	upAt := time.Since(s.start)
	t.Logf("%5.1fs broker started, answering at %.1fs", startAt.Seconds(), upAt.Seconds())
	d, samples, loadEnd := s.wait(5*time.Minute, 5*time.Second)
	reportRecovery(t, samples, []fault{{stopAt, "broker stopped"}, {upAt, "broker answering again"}}, loadEnd, rate)
	var rawAtUp int64
	replay := time.Duration(-1)
	for _, x := range samples {
		if x.at <= upAt {
			rawAtUp = x.raw
		} else if replay < 0 && x.raw > rawAtUp {
			replay = x.at - upAt
		}
	}
	t.Logf("broker down %v: %v; after it answered again the raw topic grew after %.1fs (the intake's spool replay), and every event was stored after %.1fs",
		(upAt - stopAt).Round(time.Second), d, replay.Seconds(), (loadEnd + d.waited - upAt).Seconds())
	if !strings.Contains(roles[2].service().logs(), "spool drained") {
		t.Errorf("the intake never logged that its spool drained")
	}
	for i, c := range s.status {
		if c != notSent && c != http.StatusNoContent {
			t.Errorf("event %d answered %d while the broker was away: the intake must spool and answer 204", i, c)
			break
		}
	}
	d.check(t)
	checkSurvived(t, roles...)
}

// lastLogLine returns the last line of logs containing text.
func lastLogLine(logs, text string) string {
	i := strings.LastIndex(logs, text)
	if i < 0 {
		return "(none)"
	}
	start := strings.LastIndexByte(logs[:i], '\n') + 1
	end := strings.IndexByte(logs[i:], '\n')
	if end < 0 {
		return logs[start:]
	}
	return logs[start : i+end]
}

// reliabilityBroker is a single broker of the test's own (scripts/kafka.sh
// on 127.0.0.1:39592, in its default run dir
// ${TMPDIR:-/tmp}/eventlogging-kafka-39592, formatted afresh by each test)
// that the test stops and starts.
type reliabilityBroker struct{ *ownBroker }

// startReliabilityBroker starts it; same skip/fail rule as every
// integration test.
func startReliabilityBroker(t *testing.T) reliabilityBroker {
	t.Helper()
	kafkatest.Brokers(t)
	b := reliabilityBroker{&ownBroker{
		env: append(os.Environ(), "KAFKA_PORT="+strconv.Itoa(reliabilityBrokerPort),
			"KAFKA_RUN_DIR=", "KAFKA_HEAP=384m"),
		addr: "127.0.0.1:" + strconv.Itoa(reliabilityBrokerPort),
	}}
	// A broker left running by an earlier run whose test binary was killed
	// is in the same run dir: stop it. kafka.sh start would take any
	// broker answering on the port for its own.
	b.run(t, "stop")
	b.requireClosed(t, "before the test's broker starts (a broker that is not in "+b.runDir()+"?)")
	stopAtCleanup(t, "scripts/kafka.sh", b.env)
	b.run(t, "start", "--fresh")
	return b
}

// runDir is scripts/kafka.sh's default run dir for the port.
func (b reliabilityBroker) runDir() string {
	tmp := os.Getenv("TMPDIR")
	if tmp == "" {
		tmp = "/tmp"
	}
	return filepath.Join(tmp, "eventlogging-kafka-"+strconv.Itoa(reliabilityBrokerPort))
}

// stop stops the broker and checks that its port is closed.
func (b reliabilityBroker) stop(t *testing.T) {
	t.Helper()
	b.run(t, "stop")
	b.requireClosed(t, "after scripts/kafka.sh stop")
}

// requireClosed fails the test when something accepts connections on the
// broker's port.
func (b reliabilityBroker) requireClosed(t *testing.T, when string) {
	t.Helper()
	c, err := (&net.Dialer{Timeout: time.Second}).DialContext(t.Context(), "tcp", b.addr)
	if err == nil {
		c.Close()
		t.Fatalf("%s accepts connections %s", b.addr, when)
	}
}

// rawCounts reads the raw topic from the start until want distinct ids
// of the run are seen (or timeout), and counts records per id.
func rawCounts(t *testing.T, brokers []string, topic, run string, want int, timeout time.Duration) map[int]int {
	t.Helper()
	total := countRecords(t, brokers, topic)
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	got := map[int]int{}
	var read int64
	for read < total || len(got) < want {
		f := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Logf("raw topic: read %d of %d records, %d distinct ids of %d", read, total, len(got), want)
			return got
		}
		f.EachRecord(func(r *kgo.Record) {
			read++
			if !bytes.Contains(r.Value, []byte(run)) {
				return
			}
			if id, ok := articleID(r.Value); ok {
				got[id]++
			}
		})
	}
	return got
}

// articleID reads the articleId of the capsule in a raw line
// ("?<url-encoded capsule>;\t<recvFrom>\t...").
func articleID(line []byte) (int, bool) {
	q, _, _ := bytes.Cut(line, []byte("\t"))
	capsuleJSON, err := url.PathUnescape(strings.TrimSuffix(strings.TrimPrefix(string(q), "?"), ";"))
	if err != nil {
		return 0, false
	}
	var c struct {
		Event struct {
			ArticleID int `json:"articleId"`
		} `json:"event"`
	}
	if err := json.Unmarshal([]byte(capsuleJSON), &c); err != nil {
		return 0, false
	}
	return c.Event.ArticleID, true
}
