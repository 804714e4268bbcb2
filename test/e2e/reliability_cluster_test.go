package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/eventlogging/eventlogging/internal/kafkatest"
)

// TestClusterFailover: a three-node KRaft cluster (scripts/kafka-cluster.sh,
// topics at replication factor 3, min.insync.replicas 2), intake, processor
// and SQLite sink, 2,000 beacons/s for 60 s. Meanwhile the leader of the
// raw topic's partition 0 is SIGKILLed and restarted 10 s later, then the
// leader of the output topic's partition 0 likewise (with
// EVENTLOGGING_LONG_FAULTS=1 the load lasts 150 s and a rolling restart of
// all three nodes follows). Every beacon answered 204 must be in SQL
// exactly once, and no role may need a restart. The throughput dip of each
// stage and its recovery time are logged.
func TestClusterFailover(t *testing.T) {
	faultPass(t)
	c := startCluster(t)
	r := newRig(t, rigConfig{brokers: c.brokers, replication: 3})
	roles, adm := r.superviseAll()

	const rate = 2000
	s := r.offerSampled(adm, 16, rate, pick(60*time.Second, 150*time.Second))

	var faults []fault
	note := func(format string, args ...any) {
		f := fault{at: time.Since(s.start), what: fmt.Sprintf(format, args...)}
		faults = append(faults, f)
		t.Logf("%5.1fs %s", f.at.Seconds(), f.what)
	}
	waitUntil := func(at time.Duration) {
		if d := at - time.Since(s.start); d > 0 {
			time.Sleep(d) // the fault schedule (load shape, not synchronisation)
		}
	}
	topics := []string{r.raw, r.schemaTopic}
	killAndRestart := func(at time.Duration, topic string) {
		waitUntil(at)
		n := c.leader(t, topic, 0)
		c.run(t, "kill", strconv.Itoa(n))
		note("SIGKILL node %d, leader of %s/0", n, topic)
		waitUntil(at + 10*time.Second)
		c.run(t, "restart", strconv.Itoa(n))
		note("node %d restarted and answering; leader of %s/0 is now node %d", n, topic, c.leader(t, topic, 0))
		t.Logf("node %d back in every ISR after %.1fs", n, waitFullISR(t, adm, topics...).Seconds())
	}
	killAndRestart(10*time.Second, r.raw)
	killAndRestart(max(30*time.Second, time.Since(s.start)+3*time.Second), r.schemaTopic)
	if longFaults() {
		waitUntil(time.Since(s.start) + 5*time.Second)
		for n := 1; n <= 3; n++ {
			note("rolling restart: node %d (SIGTERM, start)", n)
			c.run(t, "restart", strconv.Itoa(n))
			t.Logf("node %d back in every ISR after %.1fs", n, waitFullISR(t, adm, topics...).Seconds())
		}
	}
	d, samples, loadEnd := s.wait(3*time.Minute, 2*time.Second)
	worst := reportRecovery(t, samples, faults, loadEnd, rate)
	dups := countRecords(t, c.brokers, r.schemaTopic) - int64(d.stored)
	t.Logf("failover: %v; %d duplicate capsules in the Generic topic; worst recovery of the stored rate %.1fs", d, dups, worst.Seconds())
	d.check(t)
	checkSurvived(t, roles...)
}

// kafkaCluster is the three-node cluster of scripts/kafka-cluster.sh,
// stopped when the test ends.
type kafkaCluster struct {
	env     []string
	brokers []string
}

// startCluster starts a fresh cluster in the script's default run dir
// (${TMPDIR:-/tmp}/eventlogging-kafka-cluster-39510: its logs outlive a
// failed test, and scripts/kafka-cluster.sh stop finds it should the test
// binary die before its cleanup). Like every integration test it skips
// locally (fails under CI=true) when the suite has no broker configured
// (EVENTLOGGING_KAFKA_BROKERS), i.e. when neither scripts/test.sh nor
// scripts/kafka.sh prepared Kafka; once it runs, a cluster that does not
// start fails the test.
func startCluster(t *testing.T) *kafkaCluster {
	t.Helper()
	kafkatest.Brokers(t)
	c := &kafkaCluster{env: append(os.Environ(),
		"KAFKA_CLUSTER_PORT="+strconv.Itoa(clusterBasePort),
		"KAFKA_CLUSTER_RUN_DIR=", // the default
		"KAFKA_HEAP=384m")}
	stopAtCleanup(t, "scripts/kafka-cluster.sh", c.env)
	c.run(t, "stop") // a cluster left running by a killed test binary
	out := c.run(t, "start", "--fresh")
	c.brokers = strings.Split(strings.TrimSpace(out), ",")
	return c
}

// run runs scripts/kafka-cluster.sh and returns its standard output.
func (c *kafkaCluster) run(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "../../scripts/kafka-cluster.sh", args...)
	cmd.Env = c.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/kafka-cluster.sh %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// leader is the node leading topic's partition, from the script.
func (c *kafkaCluster) leader(t *testing.T, topic string, partition int) int {
	t.Helper()
	out := strings.TrimSpace(c.run(t, "leader", topic, strconv.Itoa(partition)))
	n, err := strconv.Atoi(out)
	if err != nil || n < 1 || n > 3 {
		t.Fatalf("leader of %s/%d: %q %v", topic, partition, out, err)
	}
	return n
}

// waitFullISR waits until every partition of topics has all three
// replicas in sync (a restarted node has caught up), returning how long
// that took.
func waitFullISR(t *testing.T, adm *kadm.Client, topics ...string) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < 2*time.Minute {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		md, err := adm.Metadata(ctx, topics...)
		cancel()
		if err == nil && fullISR(md, topics) {
			return time.Since(start)
		}
		time.Sleep(250 * time.Millisecond) // polling interval
	}
	t.Fatalf("%v: not all replicas back in sync within 2 minutes", topics)
	return 0
}

func fullISR(md kadm.Metadata, topics []string) bool {
	for _, topic := range topics {
		td, ok := md.Topics[topic]
		if !ok || td.Err != nil || len(td.Partitions) == 0 {
			return false
		}
		for _, p := range td.Partitions {
			if len(p.ISR) < 3 {
				return false
			}
		}
	}
	return true
}
