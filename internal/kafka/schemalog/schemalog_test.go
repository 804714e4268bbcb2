package schemalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/kafkatest"
)

// testSessionTimeout is the election session timeout of the tests: the
// brokers' default minimum.
const testSessionTimeout = 6 * time.Second

// TestSchemaLogKafka runs the schema log against the real test broker.
func TestSchemaLogKafka(t *testing.T) {
	seeds := kafkatest.Brokers(t)
	schemaLogSuite(t, seeds, func(t *testing.T) string { return kafkatest.Topic(t, "schemas") })
}

// TestSchemaLogKFake runs the same suite in process on kfake.
func TestSchemaLogKFake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	schemaLogSuite(t, c.ListenAddrs(), func(t *testing.T) string { return kafkatest.Topic(t, "schemas") })
}

// TestSchemaLogAbortedAnnouncement: the first leader's announcement is
// aborted although the writer was told it committed, as franz-go's
// EndTransaction does when it races the client's first load of the topic's
// partitions. The leader must not lead on it (the follower would never learn
// its URL): it announces again.
func TestSchemaLogAbortedAnnouncement(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	topic := kafkatest.Topic(t, "schemas")
	var aborted atomic.Bool
	c.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if r := req.(*kmsg.EndTxnRequest); r.TransactionalID == topic+"-writer" && r.Commit && aborted.CompareAndSwap(false, true) {
			r.Commit = false // kfake aborts and answers as for a commit
		}
		return nil, nil, false
	})
	a := startInstance(t, c.ListenAddrs(), topic, "a", "http://a.test:8081", false)
	waitReady(t, a)
	eventually(t, 30*time.Second, "the announcement aborted", aborted.Load)
	b := startInstance(t, c.ListenAddrs(), topic, "b", "http://b.test:8081", false)
	waitReady(t, b)
	leader := settledLeader(t, 30*time.Second, a, b)
	appendN(t, leader, "subject", 2)
	converged(t, leader, a, b)
}

func TestNewSchemaLogConfig(t *testing.T) {
	if _, err := New(Config{}); !errors.Is(err, kafka.ErrNoBrokers) {
		t.Fatalf("New without brokers: err = %v, want kafka.ErrNoBrokers", err)
	}
	l, err := New(Config{Kafka: kafka.Config{Brokers: []string{"127.0.0.1:1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if l.cfg.Topic != DefaultTopic || l.group != DefaultTopic+"-leader" || l.txnID != DefaultTopic+"-writer" || l.cfg.SessionTimeout != 6*time.Second {
		t.Fatalf("defaults: topic %q group %q txn %q session %v", l.cfg.Topic, l.group, l.txnID, l.cfg.SessionTimeout)
	}
	if self, url := l.Leader(); self || url != "" {
		t.Fatalf("Leader before Run = %v, %q; want false, \"\"", self, url)
	}
	if _, err := l.Append(t.Context(), []byte("k"), []byte("v")); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("Append before Run: err = %v, want ErrNotLeader", err)
	}
}

func schemaLogSuite(t *testing.T, seeds []string, topic func(*testing.T) string) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, seeds []string, topic string)
	}{
		{"Replication", testSchemaLogReplication},
		{"Failover", testSchemaLogFailover},
		{"Handover", testSchemaLogHandover},
		{"FencedBySecondWriter", testSchemaLogFencedBySecondWriter},
		{"Zombie", testSchemaLogZombie},
		{"RefusesDeletingTopic", testSchemaLogRefusesDeletingTopic},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, seeds, topic(t))
		})
	}
}

// groupStable waits until the election group of topic is stable with n
// members: every rejoin after a freeze or a fencing has completed.
func groupStable(t *testing.T, seeds []string, topic string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	eventually(t, 30*time.Second, fmt.Sprintf("election group stable with %d members", n), func() bool {
		gs, err := adm.DescribeGroups(t.Context(), topic+"-leader")
		if err != nil {
			return false
		}
		g := gs[topic+"-leader"]
		return g.Err == nil && g.State == "Stable" && len(g.Members) == n
	})
}

// applied records what a SchemaLog passed to apply.
type applied struct {
	mu   sync.Mutex
	recs []Record
	errs []string
}

func (a *applied) apply(r Record) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if bytes.HasPrefix(r.Key, []byte(leaderKey)) {
		a.errs = append(a.errs, fmt.Sprintf("apply got the log's own record %q at %d", r.Key, r.Offset))
	}
	if n := len(a.recs); n > 0 && r.Offset <= a.recs[n-1].Offset {
		a.errs = append(a.errs, fmt.Sprintf("apply got offset %d after %d", r.Offset, a.recs[n-1].Offset))
	}
	a.recs = append(a.recs, r)
}

func (a *applied) snapshot() []Record {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.recs)
}

func (a *applied) last() Record {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.recs) == 0 {
		return Record{Offset: -1}
	}
	return a.recs[len(a.recs)-1]
}

func (a *applied) check(t *testing.T) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, e := range a.errs {
		t.Error(e)
	}
}

func sameRecords(x, y []Record) bool {
	return slices.EqualFunc(x, y, func(a, b Record) bool {
		return a.Offset == b.Offset && bytes.Equal(a.Key, b.Key) && bytes.Equal(a.Value, b.Value) && (a.Value == nil) == (b.Value == nil)
	})
}

// instance is one running SchemaLog, like one registry process.
type instance struct {
	name string
	url  string
	l    *Log
	rec  *applied
	net  *netSwitch // nil: the instance's network cannot be cut

	stopOnce sync.Once
	cancel   context.CancelFunc
	done     chan error
}

// startInstance runs a SchemaLog until the test ends (or stop). url "" makes
// a read-only instance; cuttable gives it a network that can be frozen.
func startInstance(t *testing.T, seeds []string, topic, name, url string, cuttable bool) *instance {
	t.Helper()
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo})).With("instance", name)
	l, err := New(Config{
		Kafka:             kafka.Config{Brokers: seeds},
		Topic:             topic,
		SelfURL:           url,
		ReplicationFactor: 1,
		SessionTimeout:    testSessionTimeout,
		Logger:            log,
	})
	if err != nil {
		t.Fatal(err)
	}
	in := &instance{name: name, url: url, l: l, rec: &applied{}, done: make(chan error, 1)}
	if cuttable {
		in.net = &netSwitch{}
		l.clientOpts = func(role string) []kgo.Opt { return []kgo.Opt{kgo.Dialer(in.net.dialer(role))} }
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	in.cancel = cancel
	go func() { in.done <- l.Run(ctx, in.rec.apply) }()
	t.Cleanup(func() {
		in.stop(t)
		in.rec.check(t)
	})
	return in
}

// stop cancels Run and waits for it to return.
func (in *instance) stop(t *testing.T) {
	t.Helper()
	in.stopOnce.Do(func() {
		if in.net != nil {
			in.net.thaw()
		}
		in.cancel()
		select {
		case err := <-in.done:
			if err != nil {
				t.Errorf("%s: Run: %v", in.name, err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("%s: Run did not return within 30s of cancel", in.name)
		}
	})
}

func waitReady(t *testing.T, ins ...*instance) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for _, in := range ins {
		if err := in.l.WaitReady(ctx); err != nil {
			t.Fatalf("%s: WaitReady: %v", in.name, err)
		}
	}
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("test ended waiting for: %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return time.Since(start)
}

// startLeaderAndFollower starts instances a and b, waits until both are
// ready and agree on which leads, and returns the leader and the other.
func startLeaderAndFollower(t *testing.T, seeds []string, topic string) (leader, follower *instance) {
	t.Helper()
	a := startInstance(t, seeds, topic, "a", "http://a.test:8081", false)
	b := startInstance(t, seeds, topic, "b", "http://b.test:8081", false)
	waitReady(t, a, b)
	leader = settledLeader(t, 30*time.Second, a, b)
	return leader, map[*instance]*instance{a: b, b: a}[leader]
}

// startCuttableLeader starts instance a, whose network the test can cut,
// waits until it leads, then starts b, and returns both once b is ready
// and follows a.
func startCuttableLeader(t *testing.T, seeds []string, topic string) (a, b *instance) {
	t.Helper()
	a = startInstance(t, seeds, topic, "a", "http://a.test:8081", true)
	waitReady(t, a)
	settledLeader(t, 30*time.Second, a)
	b = startInstance(t, seeds, topic, "b", "http://b.test:8081", false)
	waitReady(t, b)
	if settledLeader(t, 30*time.Second, a, b) != a {
		t.Fatal("the second instance took the leadership from a healthy leader")
	}
	return a, b
}

// settledLeader waits until exactly one of ins leads and every other one
// reports its URL, and returns it.
func settledLeader(t *testing.T, within time.Duration, ins ...*instance) *instance {
	t.Helper()
	var leader *instance
	eventually(t, within, "exactly one leader, known to all", func() bool {
		leader = nil
		for _, in := range ins {
			if self, _ := in.l.Leader(); self {
				if leader != nil {
					return false
				}
				leader = in
			}
		}
		if leader == nil {
			return false
		}
		for _, in := range ins {
			if self, url := in.l.Leader(); !self && url != leader.url {
				return false
			}
		}
		return true
	})
	return leader
}

// appendN appends n records through in, checks read-your-write for each
// and returns their offsets.
func appendN(t *testing.T, in *instance, prefix string, n int) []int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var offs []int64
	for i := range n {
		key := fmt.Appendf(nil, "%s/%d", prefix, i)
		value := fmt.Appendf(nil, `{"n":%d}`, i)
		off, err := in.l.Append(ctx, key, value)
		if err != nil {
			t.Fatalf("%s: Append %s: %v", in.name, key, err)
		}
		if last := in.rec.last(); last.Offset != off || !bytes.Equal(last.Key, key) {
			t.Fatalf("%s: Append %s returned offset %d before applying it (last applied: %q at %d)", in.name, key, off, last.Key, last.Offset)
		}
		if len(offs) > 0 && off <= offs[len(offs)-1] {
			t.Fatalf("%s: Append offsets not ascending: %d after %d", in.name, off, offs[len(offs)-1])
		}
		offs = append(offs, off)
	}
	return offs
}

// converged waits until every instance has applied the same records as want.
func converged(t *testing.T, want *instance, ins ...*instance) {
	t.Helper()
	eventually(t, 30*time.Second, "every instance applied the same records", func() bool {
		w := want.rec.snapshot()
		for _, in := range ins {
			if !sameRecords(in.rec.snapshot(), w) {
				return false
			}
		}
		return true
	})
}

func testSchemaLogReplication(t *testing.T, seeds []string, topic string) {
	leader, follower := startLeaderAndFollower(t, seeds, topic)

	ctx := t.Context()
	_, err := follower.l.Append(ctx, []byte("subject/x"), []byte("{}"))
	if !errors.Is(err, ErrNotLeader) || errors.Is(err, ErrFenced) || !strings.Contains(err.Error(), leader.url) {
		t.Fatalf("Append on the follower: err = %v, want ErrNotLeader naming %s", err, leader.url)
	}
	if _, err := leader.l.Append(ctx, []byte(leaderKey+"x"), []byte("{}")); err == nil || errors.Is(err, ErrNotLeader) {
		t.Fatalf("Append with a reserved key: err = %v, want a key error", err)
	}
	if _, err := leader.l.Append(ctx, nil, []byte("{}")); err == nil {
		t.Fatal("Append with an empty key succeeded")
	}

	appendN(t, leader, "subject", 20)
	// A tombstone and an empty value stay distinct.
	for _, v := range [][]byte{nil, {}} {
		if _, err := leader.l.Append(ctx, []byte("subject/0"), v); err != nil {
			t.Fatal(err)
		}
	}
	converged(t, leader, follower)
	got := leader.rec.snapshot()
	if len(got) != 22 || got[20].Value != nil || got[21].Value == nil || len(got[21].Value) != 0 {
		t.Fatalf("applied %d records; the last two should be a tombstone and an empty value", len(got))
	}

	// A new instance replays everything in order: once WaitReady returns,
	// every record appended before it started has been applied. A
	// read-only instance (no URL) never leads but knows the leader.
	c := startInstance(t, seeds, topic, "c", "", false)
	waitReady(t, c)
	if !sameRecords(c.rec.snapshot(), got) {
		t.Fatalf("after WaitReady, the new instance applied %d records, want the same %d", len(c.rec.snapshot()), len(got))
	}
	if self, url := c.l.Leader(); self || url != leader.url {
		t.Fatalf("read-only instance: Leader() = %v, %q; want false, %q", self, url, leader.url)
	}
	if _, err := c.l.Append(ctx, []byte("k"), []byte("v")); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("Append on a read-only instance: err = %v, want ErrNotLeader", err)
	}

	// Everything stops; a fresh instance replays the whole log and, as the
	// only candidate, leads and appends after it.
	for _, in := range []*instance{leader, follower, c} {
		in.stop(t)
	}
	if err := leader.l.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady after a completed replay and Run's return: %v", err)
	}
	if _, err := leader.l.Append(ctx, []byte("k"), []byte("v")); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("Append after Run returned: err = %v, want ErrNotLeader", err)
	}
	d := startInstance(t, seeds, topic, "d", "http://d.test:8081", false)
	waitReady(t, d)
	if !sameRecords(d.rec.snapshot(), got) {
		t.Fatal("restarted instance did not replay the same records")
	}
	settledLeader(t, 30*time.Second, d)
	offs := appendN(t, d, "after-restart", 3)
	if offs[0] <= got[len(got)-1].Offset {
		t.Fatalf("restarted leader appended at %d, not after %d", offs[0], got[len(got)-1].Offset)
	}
}

// testSchemaLogFailover cuts the leader off the network without letting it
// leave the group, as SIGKILL would.
func testSchemaLogFailover(t *testing.T, seeds []string, topic string) {
	a, b := startCuttableLeader(t, seeds, topic)
	before := appendN(t, a, "old", 5)
	converged(t, a, b)
	want := a.rec.snapshot()

	a.net.freeze("reader", "election", "writer")
	took := eventually(t, testSessionTimeout+15*time.Second, "b leads after a died", func() bool {
		self, _ := b.l.Leader()
		return self
	})
	t.Logf("failover after the leader died: %v (session timeout %v)", took, testSessionTimeout)
	// b caught up before leading: every record a wrote is already applied.
	if !sameRecords(b.rec.snapshot(), want) {
		t.Fatalf("new leader applied %d records when it took over, want %d", len(b.rec.snapshot()), len(want))
	}
	after := appendN(t, b, "new", 5)
	if after[0] <= before[len(before)-1] {
		t.Fatalf("new leader appended at %d, not after %d", after[0], before[len(before)-1])
	}

	// The old leader comes back as a follower and agrees.
	a.net.thaw()
	eventually(t, 30*time.Second, "a follows b", func() bool {
		self, url := a.l.Leader()
		return !self && url == b.url
	})
	groupStable(t, seeds, topic, 2)
	if settledLeader(t, 30*time.Second, a, b) != b {
		t.Fatal("the old leader took the leadership back")
	}
	appendN(t, b, "later", 2)
	converged(t, b, a)
	if got := b.rec.snapshot(); len(got) != 12 {
		t.Fatalf("b applied %d records, want 12", len(got))
	}
}

// testSchemaLogHandover stops the leader cleanly: it leaves the group, and
// the follower takes over without waiting for the session timeout.
func testSchemaLogHandover(t *testing.T, seeds []string, topic string) {
	leader, follower := startLeaderAndFollower(t, seeds, topic)
	before := appendN(t, leader, "old", 5)
	want := leader.rec.snapshot()

	start := time.Now()
	leader.stop(t)
	eventually(t, testSessionTimeout+15*time.Second, "the follower leads", func() bool {
		self, _ := follower.l.Leader()
		return self
	})
	t.Logf("handover after the leader stopped: %v", time.Since(start))
	if !sameRecords(follower.rec.snapshot(), want) {
		t.Fatal("the new leader had not applied every record when it took over")
	}
	if after := appendN(t, follower, "new", 3); after[0] <= before[len(before)-1] {
		t.Fatalf("new leader appended at %d, not after %d", after[0], before[len(before)-1])
	}
}

// testSchemaLogFencedBySecondWriter initialises another producer with the
// log's transactional id: the leader's next Append must fail, and the
// leader must recover by fencing it in turn.
func testSchemaLogFencedBySecondWriter(t *testing.T, seeds []string, topic string) {
	a := startInstance(t, seeds, topic, "a", "http://a.test:8081", false)
	waitReady(t, a)
	settledLeader(t, 30*time.Second, a)
	appendN(t, a, "before", 2)

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	other, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID(topic+"-writer"),
		kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, _, err := other.ProducerID(ctx); err != nil {
		t.Fatalf("init the other producer: %v", err)
	}

	_, err = a.l.Append(ctx, []byte("fenced"), []byte("{}"))
	if !errors.Is(err, ErrFenced) || !errors.Is(err, ErrNotLeader) {
		t.Fatalf("Append after another writer initialised: err = %v, want ErrFenced and ErrNotLeader", err)
	}
	if self, _ := a.l.Leader(); self {
		t.Fatal("still leader after being fenced")
	}
	// a is still the group's choice: it rejoins, fences the other writer
	// and leads again.
	settledLeader(t, 30*time.Second, a)
	appendN(t, a, "after", 2)
	if err := other.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	perr := other.ProduceSync(ctx, &kgo.Record{Key: []byte("intruder"), Value: []byte("{}")}).FirstErr()
	eerr := other.EndTransaction(ctx, kgo.TryCommit)
	if perr == nil && eerr == nil {
		t.Fatal("the other writer could still commit after the leader took over again")
	}
	if !isFenced(errors.Join(perr, eerr)) {
		t.Logf("the other writer failed with an unexpected error (not a fencing one): %v, %v", perr, eerr)
	}
	for _, r := range a.rec.snapshot() {
		if string(r.Key) == "fenced" || string(r.Key) == "intruder" {
			t.Fatalf("aborted record %q applied", r.Key)
		}
	}
	if got := len(a.rec.snapshot()); got != 4 {
		t.Fatalf("applied %d records, want 4", got)
	}
}

// testSchemaLogZombie freezes the leader's group membership only: its
// session expires and another instance leads, while the old leader still
// believes it leads and can reach the broker to write. Its Append must fail.
func testSchemaLogZombie(t *testing.T, seeds []string, topic string) {
	a, b := startCuttableLeader(t, seeds, topic)
	appendN(t, a, "old", 3)

	a.net.freeze("election")
	took := eventually(t, testSessionTimeout+15*time.Second, "b leads after a's session expired", func() bool {
		self, _ := b.l.Leader()
		return self
	})
	t.Logf("b took over from the zombie after %v", took)
	if self, _ := a.l.Leader(); !self {
		t.Fatal("the zombie already knows it lost the leadership; the fencing is not exercised")
	}
	_, err := a.l.Append(t.Context(), []byte("zombie"), []byte("{}"))
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("zombie Append: err = %v, want ErrFenced", err)
	}
	if self, _ := a.l.Leader(); self {
		t.Fatal("the zombie still leads after being fenced")
	}
	appendN(t, b, "new", 3)
	converged(t, b, a)

	// Once a's group membership works again it rejoins as a follower.
	a.net.thaw()
	groupStable(t, seeds, topic, 2)
	if settledLeader(t, 30*time.Second, a, b) != b {
		t.Fatal("the zombie took the leadership back")
	}
	appendN(t, b, "later", 2)
	converged(t, b, a)
	for _, r := range b.rec.snapshot() {
		if string(r.Key) == "zombie" {
			t.Fatal("the zombie's record was applied")
		}
	}
	if got := len(b.rec.snapshot()); got != 8 {
		t.Fatalf("applied %d records, want 8", got)
	}
}

// testSchemaLogRefusesDeletingTopic: Run must not use a topic whose
// retention would delete schemas.
func testSchemaLogRefusesDeletingTopic(t *testing.T, seeds []string, topic string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(t.Context(), 1, -1, map[string]*string{"cleanup.policy": kadm.StringPtr("delete")}, topic); err != nil {
		t.Fatal(err)
	}
	l, err := New(Config{Kafka: kafka.Config{Brokers: seeds}, Topic: topic, SelfURL: "http://a.test"})
	if err != nil {
		t.Fatal(err)
	}
	err = l.Run(t.Context(), func(Record) { t.Error("apply called") })
	if err == nil || !strings.Contains(err.Error(), `cleanup.policy="delete"`) {
		t.Fatalf("Run on a delete-policy topic: err = %v, want a cleanup.policy error", err)
	}
	if err := l.WaitReady(t.Context()); err == nil {
		t.Fatal("WaitReady returned nil after Run failed")
	}
	if err := l.Run(t.Context(), func(Record) {}); err == nil {
		t.Fatal("second Run succeeded")
	}
}

// netSwitch freezes the connections of chosen client roles: while frozen,
// their reads and writes (and new dials) block, as for a paused process or a
// network partition, without any connection being closed.
type netSwitch struct {
	mu     sync.Mutex
	frozen map[string]chan struct{} // role → closed on thaw
}

func (s *netSwitch) freeze(roles ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.frozen == nil {
		s.frozen = map[string]chan struct{}{}
	}
	for _, r := range roles {
		if s.frozen[r] == nil {
			s.frozen[r] = make(chan struct{})
		}
	}
}

func (s *netSwitch) thaw() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for r, ch := range s.frozen {
		close(ch)
		delete(s.frozen, r)
	}
}

// wait blocks while role is frozen, unless ctx is done or closed is closed.
func (s *netSwitch) wait(ctx context.Context, role string, closed <-chan struct{}) error {
	s.mu.Lock()
	ch := s.frozen[role]
	s.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-closed:
		return net.ErrClosed
	}
}

func (s *netSwitch) dialer(role string) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, host string) (net.Conn, error) {
		if err := s.wait(ctx, role, nil); err != nil {
			return nil, err
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, network, host)
		if err != nil {
			return nil, err
		}
		return &switchConn{Conn: c, sw: s, role: role, closed: make(chan struct{})}, nil
	}
}

type switchConn struct {
	net.Conn
	sw     *netSwitch
	role   string
	once   sync.Once
	closed chan struct{}
}

func (c *switchConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if werr := c.sw.wait(context.Background(), c.role, c.closed); werr != nil {
		return 0, werr
	}
	return n, err
}

func (c *switchConn) Write(p []byte) (int, error) {
	if err := c.sw.wait(context.Background(), c.role, c.closed); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

func (c *switchConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}
