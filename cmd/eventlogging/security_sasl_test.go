package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/eventlogging/eventlogging/internal/kafkatest"
)

// The real SCRAM broker of TestKafkaSCRAM: KAFKA_SCRAM=1 KAFKA_PORT=39692
// scripts/kafka.sh start, with the user it creates.
const (
	envScramBrokers  = "EVENTLOGGING_KAFKA_SCRAM_BROKERS"
	envScramUser     = "EVENTLOGGING_KAFKA_SCRAM_USER"
	envScramPassword = "EVENTLOGGING_KAFKA_SCRAM_PASSWORD"
)

// scramBroker returns the SCRAM broker's addresses and credentials, or
// skips (locally) / fails (CI=true) when none is configured.
func scramBroker(t *testing.T) (brokers []string, user, password string) {
	t.Helper()
	v := strings.TrimSpace(os.Getenv(envScramBrokers))
	user, password = os.Getenv(envScramUser), os.Getenv(envScramPassword)
	if v == "" || user == "" || password == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s, %s and %s must be set under CI=true: scripts/test.sh starts a SCRAM broker (KAFKA_SCRAM=1 KAFKA_PORT=39692 scripts/kafka.sh start)", envScramBrokers, envScramUser, envScramPassword)
		}
		t.Skipf("integration test: %s (+ %s, %s) not set; run KAFKA_SCRAM=1 KAFKA_PORT=39692 scripts/kafka.sh start and export %s=127.0.0.1:39692 %s=eventlogging %s=eventlogging-secret",
			envScramBrokers, envScramUser, envScramPassword, envScramBrokers, envScramUser, envScramPassword)
	}
	return strings.Split(v, ","), user, password
}

// TestKafkaSCRAM: `eventlogging intake` and `eventlogging process` against
// a real Kafka broker whose only listener is SASL_PLAINTEXT with SCRAM:
// with the right credentials (SCRAM-SHA-256) a beacon becomes a capsule in
// its schema topic and an invalid one an EventError; with a wrong password
// each role stops at once with an error naming SASL authentication (no
// hang, no "not reachable"); the password is never logged.
func TestKafkaSCRAM(t *testing.T) {
	brokers, user, password := scramBroker(t)
	prefix := kafkatest.Topic(t, "scram")
	addr := freeAddr(t)
	base := "http://" + addr
	common := []string{
		"EVENTLOGGING_KAFKA_BROKERS=" + strings.Join(brokers, ","),
		"EVENTLOGGING_KAFKA_SASL_MECHANISM=SCRAM-SHA-256",
		"EVENTLOGGING_KAFKA_SASL_USERNAME=" + user,
		"EVENTLOGGING_KAFKA_SESSION_TIMEOUT=6s",
		"EVENTLOGGING_INTAKE_RAW_TOPIC=" + prefix + "-raw",
		"EVENTLOGGING_INTAKE_LISTEN=" + addr,
		"EVENTLOGGING_INTAKE_SPOOL_DIR=" + t.TempDir(),
		"EVENTLOGGING_PROCESS_TOPIC_TEMPLATE=" + prefix + "_{schema}",
		"EVENTLOGGING_PROCESS_ERROR_TOPIC=" + prefix + "_EventError",
		"EVENTLOGGING_PROCESS_MIXED_TOPIC=-",
		"EVENTLOGGING_PROCESS_GROUP=" + prefix,
		"EVENTLOGGING_PROCESS_IP_KEY_TOPIC=" + prefix + "_ip_key",
		"EVENTLOGGING_PROCESS_SCHEMAS_DIR=../../examples/schemas",
		"EVENTLOGGING_METRICS_LISTEN=off",
		"EVENTLOGGING_LOG_LEVEL=debug",
	}
	env := append(append([]string(nil), common...), "EVENTLOGGING_KAFKA_SASL_PASSWORD="+password)

	// A wrong password: each role fails fast, saying why.
	for _, role := range [][]string{{"intake"}, {"process", "--raw-topic", prefix + "-raw"}} {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		cmd := exec.CommandContext(ctx, binary(t), role...)
		cmd.Env = append(append(os.Environ(), common...), "EVENTLOGGING_KAFKA_SASL_PASSWORD=wrong-"+password)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		took := time.Since(start)
		timedOut := ctx.Err() != nil
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || timedOut {
			t.Fatalf("%s with a wrong password: %v after %s (want a quick exit with an error)\n%s", role[0], err, took, tail(string(out), 2000))
		}
		last := lastLine(string(out))
		if !strings.Contains(last, "SASL authentication failed") || strings.Contains(last, "not reachable") {
			t.Errorf("%s with a wrong password ends with %q, want an error naming SASL authentication", role[0], last)
		}
		if took > 30*time.Second {
			t.Errorf("%s took %s to give up on refused credentials", role[0], took)
		}
		if strings.Contains(string(out), password) {
			t.Errorf("%s printed the password", role[0])
		}
		t.Logf("%s with a wrong password: exit after %s: %s", role[0], took.Round(time.Millisecond), last)
	}

	// The right password: a beacon goes through.
	in := startService(t, "intake", env, "intake")
	proc := startService(t, "process", env, "process", "--raw-topic", prefix+"-raw")
	waitReady(t, base)
	if failed := sendBeacons(t, base, 2, 1, func(i int) string {
		if i == 1 {
			return `{"schema":"Generic","revision":13,"event":{"articleId":"not a number"}}`
		}
		return `{"schema":"Generic","revision":13,"event":{"articleId":1,"articleTitle":"over SCRAM"}}`
	}); failed > 0 {
		t.Fatalf("%d beacons not answered 204", failed)
	}
	opts := []kgo.Opt{kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha256Mechanism())}
	got := readOneSCRAM(t, brokers, opts, prefix+"_Generic")
	if !strings.Contains(got, `"articleTitle":"over SCRAM"`) || !strings.Contains(got, `"clientIp":"`) {
		t.Errorf("capsule %s", got)
	}
	if ee := readOneSCRAM(t, brokers, opts, prefix+"_EventError"); !strings.Contains(ee, `"pointer":"/event/articleId"`) {
		t.Errorf("EventError %s", ee)
	}
	// eventlogging tail reaches the secured cluster through --config (the
	// kafka section; the password from the environment, as deployed).
	cfgFile := filepath.Join(t.TempDir(), "eventlogging.yaml")
	if err := os.WriteFile(cfgFile, []byte("kafka:\n  sasl_mechanism: SCRAM-SHA-256\n  sasl_username: "+user+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tctx, tcancel := context.WithTimeout(t.Context(), 90*time.Second)
	tcmd := exec.CommandContext(tctx, binary(t), "tail", "--config", cfgFile, "--brokers", strings.Join(brokers, ","), "--from-beginning", "--count", "1", "--timeout", "60s", prefix+"_Generic")
	tcmd.Env = append(os.Environ(), "EVENTLOGGING_KAFKA_SASL_PASSWORD="+password)
	var tailErr bytes.Buffer
	tcmd.Stderr = &tailErr
	tailOut, err := tcmd.Output()
	tcancel()
	if err != nil || !strings.Contains(string(tailOut), `"articleTitle":"over SCRAM"`) {
		t.Errorf("tail --config over SCRAM: %v, printed %q\n%s", err, tailOut, tail(tailErr.String(), 2000))
	}
	if strings.Contains(tailErr.String(), password) {
		t.Error("tail logged the SASL password")
	}
	// An anonymous client gets nothing from this broker.
	anon, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(t.Context(), 5*time.Second)
	if err := anon.Ping(pctx); err == nil {
		t.Error("a client without SASL reached the SCRAM listener")
	}
	pcancel()
	anon.Close()

	in.stop(t)
	proc.stop(t)
	for _, s := range []*service{in, proc} {
		if strings.Contains(s.logs(), password) {
			t.Errorf("%s logged the SASL password", s.name)
		}
	}
}

// readOneSCRAM returns the first record value of topic, read with opts.
func readOneSCRAM(t *testing.T, brokers []string, opts []kgo.Opt, topic string) string {
	t.Helper()
	cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	for {
		f := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s: no record within 90s (errors: %v)", topic, f.Errors())
		}
		if recs := f.Records(); len(recs) > 0 {
			var v json.RawMessage
			if json.Unmarshal(recs[0].Value, &v) != nil {
				t.Fatalf("%s: not JSON: %q", topic, recs[0].Value)
			}
			return string(recs[0].Value)
		}
	}
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
