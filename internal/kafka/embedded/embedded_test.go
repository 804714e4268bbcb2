package embedded

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/eventlogging/eventlogging/internal/kafka"
)

// testLogger logs through t, so output shows only for failing tests.
func testLogger(t *testing.T) *slog.Logger {
	t.Helper()
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// startEmbedded starts a broker on dir at a free port and closes it at the
// end of the test.
func startEmbedded(t *testing.T, cfg Config) *Broker {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	start := time.Now()
	e, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Start took %v", time.Since(start))
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	return e
}

func newTestClient(t *testing.T, brokers []string, extra ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kafka.NewClient(kafka.Config{Brokers: brokers, Logger: testLogger(t)}, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// consumeAll reads topic's partition 0 from the start until n records.
func consumeAll(ctx context.Context, t *testing.T, brokers []string, topic string, n int) []*kgo.Record {
	t.Helper()
	cl := newTestClient(t, brokers, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	defer cl.Close()
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records before the deadline", len(got), n)
		}
		fs.EachError(func(t2 string, p int32, err error) { t.Logf("fetch %s/%d: %v", t2, p, err) })
		got = append(got, fs.Records()...)
	}
	return got
}

func TestEmbeddedPersistsAcrossRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	const (
		topic = "events"
		group = "sink"
		n     = 1000
	)

	e, err := Start(Config{DataDir: dir, Listen: "127.0.0.1:0", Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kafka.NewClient(kafka.Config{Brokers: e.Brokers()}) // acks=all, idempotent
	if err != nil {
		t.Fatal(err)
	}
	if err := kafka.NewTopics(cl, kafka.TopicDefaults{}).Ensure(ctx, topic); err != nil {
		t.Fatal(err)
	}
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		msgs[i] = kafka.Message{Topic: topic, Key: []byte(fmt.Sprint(i % 7)), Value: fmt.Appendf(nil, `{"i":%d}`, i)}
	}
	if err := kafka.ProduceSync(ctx, cl, msgs); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	var commit kadm.Offsets
	commit.AddOffset(topic, 0, 600, -1)
	resp, err := adm.CommitOffsets(ctx, group, commit)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("commit offset 600: %v", err)
	}
	cl.Close()
	if got, err := LocalBrokers(dir); err != nil || !slices.Equal(got, e.Brokers()) {
		t.Fatalf("LocalBrokers while running = %v, %v; want %v", got, err, e.Brokers())
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
	if _, err := LocalBrokers(dir); !errors.Is(err, ErrNoLocalBroker) || !strings.Contains(err.Error(), "--kafka-brokers") {
		t.Fatalf("LocalBrokers after Close: %v; want ErrNoLocalBroker telling to give --kafka-brokers", err)
	}

	// Restart on the same directory, on another free port.
	e2 := startEmbedded(t, Config{DataDir: dir})
	got := consumeAll(ctx, t, e2.Brokers(), topic, n)
	if len(got) != n {
		t.Fatalf("after restart: %d records, want %d", len(got), n)
	}
	for i, r := range got {
		if want := fmt.Sprintf(`{"i":%d}`, i); r.Offset != int64(i) || string(r.Value) != want {
			t.Fatalf("record %d after restart: offset %d value %s; want offset %d value %s", i, r.Offset, r.Value, i, want)
		}
	}
	adm2 := kadm.NewClient(newTestClient(t, e2.Brokers()))
	fetched, err := adm2.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fetched.Lookup(topic, 0); !ok || o.Err != nil || o.At != 600 {
		t.Fatalf("committed offset after restart = %+v (found %v); want 600", o, ok)
	}
	ends, err := adm2.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup(topic, 0); o.Offset != n {
		t.Fatalf("end offset after restart = %d, want %d", o.Offset, n)
	}
	// The restarted broker keeps accepting writes after the old ones.
	if err := kafka.ProduceSync(ctx, newTestClient(t, e2.Brokers()), []kafka.Message{{Topic: topic, Value: []byte(`{"i":1000}`)}}); err != nil {
		t.Fatal(err)
	}
	if got := consumeAll(ctx, t, e2.Brokers(), topic, n+1); got[n].Offset != n {
		t.Fatalf("first record after restart at offset %d, want %d", got[n].Offset, n)
	}
}

// killHelperEnv names the data directory of the broker process that
// TestEmbeddedSurvivesKill starts and SIGKILLs.
const killHelperEnv = "EVENTLOGGING_TEST_EMBEDDED_KILL_DIR"

// TestEmbeddedKillHelper is the broker process of TestEmbeddedSurvivesKill:
// it writes 1,000 acknowledged records and a committed offset, says "ready"
// and waits to be killed.
func TestEmbeddedKillHelper(t *testing.T) {
	dir := os.Getenv(killHelperEnv)
	if dir == "" {
		t.Skip("helper process of TestEmbeddedSurvivesKill")
	}
	ctx := t.Context()
	e, err := Start(Config{DataDir: dir, Listen: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kafka.NewClient(kafka.Config{Brokers: e.Brokers()})
	if err != nil {
		t.Fatal(err)
	}
	if err := kafka.NewTopics(cl, kafka.TopicDefaults{}).Ensure(ctx, "events"); err != nil {
		t.Fatal(err)
	}
	msgs := make([]kafka.Message, 1000)
	for i := range msgs {
		msgs[i] = kafka.Message{Topic: "events", Value: fmt.Appendf(nil, `{"i":%d}`, i)}
	}
	if err := kafka.ProduceSync(ctx, cl, msgs); err != nil {
		t.Fatal(err)
	}
	var commit kadm.Offsets
	commit.AddOffset("events", 0, 600, -1)
	if resp, err := kadm.NewClient(cl).CommitOffsets(ctx, "sink", commit); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	fmt.Println("ready")
	select {} // until SIGKILL
}

// TestEmbeddedSurvivesKill: a broker process killed without warning loses
// no acknowledged record or committed offset (the OS still has them; only a
// machine crash can lose writes without SyncWrites), and the next start
// recovers the data directory.
func TestEmbeddedSurvivesKill(t *testing.T) {
	if os.Getenv(killHelperEnv) != "" {
		t.Skip("in the helper process")
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestEmbeddedKillHelper$", "-test.v")
	cmd.Env = append(os.Environ(), killHelperEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = tWriter{t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := false
	for sc := bufio.NewScanner(out); sc.Scan(); {
		if sc.Text() == "ready" {
			ready = true
			break
		}
		t.Log("helper:", sc.Text())
	}
	if !ready {
		_ = cmd.Wait()
		t.Fatal("helper broker exited before it was ready")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait() // killed: the error says so

	if _, err := LocalBrokers(dir); !errors.Is(err, ErrNoLocalBroker) || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("LocalBrokers after the kill: %v; want a not-running error", err)
	}
	start := time.Now()
	e := startEmbedded(t, Config{DataDir: dir})
	t.Logf("recovery start after SIGKILL took %v", time.Since(start))
	got := consumeAll(ctx, t, e.Brokers(), "events", 1000)
	for i, r := range got {
		if want := fmt.Sprintf(`{"i":%d}`, i); r.Offset != int64(i) || string(r.Value) != want {
			t.Fatalf("record %d after the kill: offset %d value %s; want %s", i, r.Offset, r.Value, want)
		}
	}
	fetched, err := kadm.NewClient(newTestClient(t, e.Brokers())).FetchOffsets(ctx, "sink")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fetched.Lookup("events", 0); !ok || o.At != 600 {
		t.Fatalf("committed offset after the kill = %+v (found %v); want 600", o, ok)
	}
}

// describeRetention returns each topic's retention.ms and its source.
func describeRetention(ctx context.Context, t *testing.T, adm *kadm.Client, topics ...string) map[string]string {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(ctx, topics...)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, rc := range rcs {
		if rc.Err != nil {
			t.Fatalf("describe %s: %v", rc.Name, rc.Err)
		}
		for _, c := range rc.Configs {
			if c.Key == "retention.ms" {
				out[rc.Name] = c.MaybeValue() + " " + c.Source.String()
			}
		}
	}
	return out
}

func TestEmbeddedRetention(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	const hour = int64(time.Hour / time.Millisecond)
	e := startEmbedded(t, Config{DataDir: dir, RetentionMs: hour})
	cl := newTestClient(t, e.Brokers())
	adm := kadm.NewClient(cl)
	compact, day := "compact", "86400000"
	topics := kafka.NewTopics(cl, kafka.TopicDefaults{})
	if err := topics.Ensure(ctx, "plain"); err != nil {
		t.Fatal(err)
	}
	if err := topics.EnsureWith(ctx, kafka.TopicDefaults{Configs: map[string]*string{"cleanup.policy": &compact}}, "compacted"); err != nil {
		t.Fatal(err)
	}
	if err := topics.EnsureWith(ctx, kafka.TopicDefaults{Configs: map[string]*string{"retention.ms": &day}}, "explicit"); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"plain":     "3600000 DYNAMIC_TOPIC_CONFIG",
		"compacted": "-1 DYNAMIC_TOPIC_CONFIG",
		"explicit":  "86400000 DYNAMIC_TOPIC_CONFIG",
	}
	check := func(when string) {
		t.Helper()
		got := describeRetention(ctx, t, adm, "plain", "compacted", "explicit")
		for topic, w := range want {
			if got[topic] != w {
				t.Errorf("%s: %s retention.ms = %q, want %q", when, topic, got[topic], w)
			}
		}
	}
	check("created")

	// Enforcement: records older than the retention go, the rest stay;
	// compacted topics keep their old records.
	old := time.Now().Add(-2 * time.Hour)
	produce := func(recs ...*kgo.Record) {
		t.Helper()
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(&kgo.Record{Topic: "plain", Value: []byte("old1"), Timestamp: old}, &kgo.Record{Topic: "plain", Value: []byte("old2"), Timestamp: old})
	produce(&kgo.Record{Topic: "plain", Value: []byte("new")})
	produce(&kgo.Record{Topic: "compacted", Key: []byte("a"), Value: []byte("old"), Timestamp: old})
	produce(&kgo.Record{Topic: "compacted", Key: []byte("b"), Value: []byte("new")})
	e.enforceRetention()
	starts, err := adm.ListStartOffsets(ctx, "plain", "compacted")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("plain", 0); o.Offset != 2 {
		t.Errorf("plain: log start offset %d after retention, want 2 (the two expired records deleted)", o.Offset)
	}
	if o, _ := starts.Lookup("compacted", 0); o.Offset != 0 {
		t.Errorf("compacted: log start offset %d after retention, want 0 (compacted topics keep old keys)", o.Offset)
	}

	// The settings survive a restart.
	cl.Close()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e2 := startEmbedded(t, Config{DataDir: dir, RetentionMs: hour})
	adm = kadm.NewClient(newTestClient(t, e2.Brokers()))
	check("after restart")
}

func TestEmbeddedNoAutoCreate(t *testing.T) {
	e := startEmbedded(t, Config{DataDir: t.TempDir()})
	cl := newTestClient(t, e.Brokers(), kgo.AllowAutoTopicCreation())
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "nope", Value: []byte("x")}).FirstErr(); err == nil {
		t.Fatal("produce to a missing topic succeeded: automatic topic creation is on")
	}
	md, err := kadm.NewClient(cl).ListTopics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if md.Has("nope") {
		t.Fatal(`topic "nope" was created automatically`)
	}
}

func TestEmbeddedPartitionsDefault(t *testing.T) {
	e := startEmbedded(t, Config{DataDir: t.TempDir(), Partitions: 3})
	adm := kadm.NewClient(newTestClient(t, e.Brokers()))
	if _, err := adm.CreateTopic(t.Context(), -1, -1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	td, err := adm.ListTopics(t.Context(), "t")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(td["t"].Partitions); n != 3 {
		t.Fatalf("topic created with -1 partitions has %d, want 3", n)
	}
}

func TestEmbeddedDataDirInUse(t *testing.T) {
	dir := t.TempDir()
	e := startEmbedded(t, Config{DataDir: dir})
	_, err := Start(Config{DataDir: dir, Listen: "127.0.0.1:0", Logger: testLogger(t)})
	if err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second broker on %s: %v; want an in-use error", dir, err)
	}
	// The refused start left the running broker's file alone.
	if got, err := LocalBrokers(dir); err != nil || !slices.Equal(got, e.Brokers()) {
		t.Fatalf("LocalBrokers = %v, %v; want %v", got, err, e.Brokers())
	}
}

func TestEmbeddedStaleBrokerFile(t *testing.T) {
	dir := t.TempDir()
	// A broker.json left by a process that is gone (an unclean stop).
	stale := brokerInfo{Brokers: []string{"127.0.0.1:1"}, PID: math.MaxInt32, Started: time.Now().Format(time.RFC3339)}
	if err := writeBrokerFile(dir, stale); err != nil {
		t.Fatal(err)
	}
	_, err := LocalBrokers(dir)
	if !errors.Is(err, ErrNoLocalBroker) || !strings.Contains(err.Error(), "not running") || !strings.Contains(err.Error(), "--kafka-brokers") {
		t.Fatalf("LocalBrokers on a stale file: %v", err)
	}
	e := startEmbedded(t, Config{DataDir: dir})
	if got, err := LocalBrokers(dir); err != nil || !slices.Equal(got, e.Brokers()) {
		t.Fatalf("LocalBrokers after replacing a stale file = %v, %v; want %v", got, err, e.Brokers())
	}
}

func TestLocalBrokersMissing(t *testing.T) {
	dir := t.TempDir()
	_, err := LocalBrokers(dir)
	want := fmt.Sprintf(`no broker: give --kafka-brokers HOST:PORT,… (or --config FILE), or start "eventlogging standalone" and give its --data-dir DIR (looked for %s)`, filepath.Join(dir, BrokerFile))
	if err == nil || err.Error() != want {
		t.Fatalf("LocalBrokers on an empty dir: %v; want %s", err, want)
	}
	if err := os.WriteFile(filepath.Join(dir, BrokerFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LocalBrokers(dir); !errors.Is(err, ErrNoLocalBroker) {
		t.Fatalf("LocalBrokers on a corrupt file: %v", err)
	}
}

func TestEmbeddedConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "no data directory"},
		{Config{DataDir: "x", Listen: "nohostport"}, "listen address"},
		{Config{DataDir: "x", Listen: "0.0.0.0:0"}, "clients can dial"},
		{Config{DataDir: "x", Listen: ":0"}, "clients can dial"},
		{Config{DataDir: "x", Partitions: -1}, "partitions"},
		{Config{DataDir: "x", RetentionMs: -2}, "retention"},
	} {
		if _, err := Start(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Start(%+v) = %v; want an error containing %q", c.cfg, err, c.want)
		}
	}
}

func TestAddRetention(t *testing.T) {
	str := func(s string) *string { return &s }
	for _, c := range []struct {
		configs map[string]*string
		want    string
	}{
		{nil, "100"},
		{map[string]*string{"cleanup.policy": str("delete")}, "100"},
		{map[string]*string{"cleanup.policy": str("compact")}, "-1"},
		{map[string]*string{"cleanup.policy": str("compact,delete")}, "100"},
		{map[string]*string{"retention.ms": str("5")}, "5"},
		{map[string]*string{"cleanup.policy": str("compact"), "retention.ms": str("5")}, "5"},
	} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		for k, v := range c.configs {
			rc := kmsg.NewCreateTopicsRequestTopicConfig()
			rc.Name, rc.Value = k, v
			rt.Configs = append(rt.Configs, rc)
		}
		addRetention(&rt, "100")
		var got []string
		for _, rc := range rt.Configs {
			if rc.Name == "retention.ms" {
				got = append(got, *rc.Value)
			}
		}
		if len(got) != 1 || got[0] != c.want {
			t.Errorf("%v: retention.ms %v, want [%s]", c.configs, got, c.want)
		}
	}
}
