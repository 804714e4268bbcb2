package e2e

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/testsupport"

	"github.com/eventlogging/eventlogging/internal/role"

	"github.com/eventlogging/eventlogging/internal/cli"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/kafka/embedded"
	"github.com/eventlogging/eventlogging/internal/kafkatest"
)

// tailValues are the records of the tail tests, in produce order.
var tailValues = []string{
	`{"schema":"Bar","revision":1,"event":{"n":0}}`,
	`{"schema": "Foo", "revision": 1, "event": {"n": 1}}`,
	`not JSON <&>`,
	`{"$schema":"/analytics/Foo/1.0.0","n":2}`,
	`{"schema":"Foo","revision":1,"event":{"n":3}}`,
	`{"$schema":"https://schema.example.org/analytics/button_click/1.2.0","n":4}`,
}

// embeddedTopic starts an embedded broker on dataDir with one topic holding
// tailValues, and returns the topic.
func embeddedTopic(t *testing.T, dataDir string) (*embedded.Broker, string) {
	t.Helper()
	emb, err := embedded.Start(embedded.Config{DataDir: dataDir, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := emb.Close(); err != nil {
			t.Error(err)
		}
	})
	const topic = "eventlogging-valid-mixed"
	cl, err := kafka.NewClient(kafka.Config{Brokers: emb.Brokers()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := kafka.NewTopics(cl, kafka.TopicDefaults{}).Ensure(t.Context(), topic); err != nil {
		t.Fatal(err)
	}
	produceTail(t.Context(), t, emb.Brokers(), topic, tailValues...)
	return emb, topic
}

func produceTail(ctx context.Context, t *testing.T, brokers []string, topic string, values ...string) {
	t.Helper()
	cl, err := kafka.NewClient(kafka.Config{Brokers: brokers})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	msgs := make([]kafka.Message, len(values))
	for i, v := range values {
		msgs[i] = kafka.Message{Topic: topic, Value: []byte(v)}
	}
	if err := kafka.ProduceSync(ctx, cl, msgs); err != nil {
		t.Fatal(err)
	}
}

func TestTailCommand(t *testing.T) {
	dir := t.TempDir()
	_, topic := embeddedTopic(t, dir)
	base := []string{"tail", "--data-dir", dir, "--timeout", "30s"} // the timeout only guards against a hang
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"schema and count", []string{"--from-beginning", "--count", "2", "--schema", "Foo", topic},
			`{"schema":"Foo","revision":1,"event":{"n":1}}` + "\n" + `{"$schema":"/analytics/Foo/1.0.0","n":2}` + "\n"},
		{"flags after the topic", []string{topic, "--from-beginning", "--count=1", "--schema", "Foo"},
			`{"schema":"Foo","revision":1,"event":{"n":1}}` + "\n"},
		{"everything, non-JSON as a string", []string{"--from-beginning", "--count", "6", topic},
			`{"schema":"Bar","revision":1,"event":{"n":0}}` + "\n" +
				`{"schema":"Foo","revision":1,"event":{"n":1}}` + "\n" +
				`"not JSON <&>"` + "\n" +
				`{"$schema":"/analytics/Foo/1.0.0","n":2}` + "\n" +
				`{"schema":"Foo","revision":1,"event":{"n":3}}` + "\n" +
				`{"$schema":"https://schema.example.org/analytics/button_click/1.2.0","n":4}` + "\n"},
		{"grep", []string{"--from-beginning", "--count", "1", "--grep", `"n": ?3`, topic},
			`{"schema":"Foo","revision":1,"event":{"n":3}}` + "\n"},
		{"grep and schema", []string{"--from-beginning", "--count", "1", "--grep", `n`, "--schema", "Bar", topic},
			`{"schema":"Bar","revision":1,"event":{"n":0}}` + "\n"},
		{"$schema title", []string{"--from-beginning", "--count", "1", "--schema", "analytics/button_click", topic},
			`{"$schema":"https://schema.example.org/analytics/button_click/1.2.0","n":4}` + "\n"},
		{"pretty", []string{"--from-beginning", "--count", "1", "--pretty", "--schema", "button_click", topic},
			"{\n  \"$schema\": \"https://schema.example.org/analytics/button_click/1.2.0\",\n  \"n\": 4\n}\n"},
		{"timeout, nothing new", []string{"--timeout", "500ms", topic}, ""},
		{"timeout, no match", []string{"--from-beginning", "--timeout", "500ms", "--schema", "Nope", topic}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			start := time.Now()
			code := cli.Run(append(slices.Clone(base), c.args...), nil, &stdout, &stderr)
			if code != 0 {
				t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
			}
			if stdout.String() != c.want {
				t.Errorf("stdout:\n%s\nwant:\n%s", stdout.String(), c.want)
			}
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("took %v: --count or --timeout did not stop it", took)
			}
		})
	}
}

// TestTailCountBeyondTheEnd: --from-beginning --count N without --timeout
// on topics holding fewer matching records prints them and stops at the
// end, saying so, instead of waiting forever; with --timeout it waits.
func TestTailCountBeyondTheEnd(t *testing.T) {
	dir := t.TempDir()
	_, topic := embeddedTopic(t, dir)
	for _, c := range []struct {
		name    string
		args    []string
		printed int
		note    string
	}{
		{"more than the topic holds", []string{"--from-beginning", "--count", "10", topic}, 6, "tail: 6 of 10 records: the end of the topics"},
		{"more than match", []string{"--from-beginning", "--count", "5", "--schema", "Foo", topic}, 3, "tail: 3 of 5 records"},
		{"none match", []string{"--from-beginning", "--count", "1", "--schema", "Nope", topic}, 0, "tail: 0 of 1 records"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			var stdout, stderr bytes.Buffer
			done := make(chan int, 1)
			go func() { done <- cli.Run(append([]string{"tail", "--data-dir", dir}, c.args...), nil, &stdout, &stderr) }()
			select {
			case code := <-done:
				if code != 0 {
					t.Fatalf("exit %d:\n%s", code, stderr.String())
				}
			case <-ctx.Done():
				t.Fatal("tail --count waited beyond the end of the topic")
			}
			if got := strings.Count(stdout.String(), "\n"); got != c.printed {
				t.Errorf("printed %d records, want %d:\n%s", got, c.printed, stdout.String())
			}
			if !strings.Contains(stderr.String(), c.note) {
				t.Errorf("stderr lacks %q:\n%s", c.note, stderr.String())
			}
		})
	}
	// With --timeout, tail keeps waiting for records to come.
	var stdout, stderr bytes.Buffer
	start := time.Now()
	if code := cli.Run([]string{"tail", "--data-dir", dir, "--from-beginning", "--count", "10", "--timeout", "1s", topic}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr.String())
	}
	if took := time.Since(start); took < time.Second {
		t.Errorf("with --timeout 1s tail stopped after %v, at the end of the topic", took)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a poller.
type syncBuffer = testsupport.SyncBuffer

// tailFromEnd runs tail from the end on topic, produces values once it has
// started, and returns what it printed.
func tailFromEnd(t *testing.T, brokers []string, args []string, topic string, values ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var stdout bytes.Buffer
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() { done <- cli.Run(args, nil, &stdout, &stderr) }()
	// Wait for the "tailing" log line: the start offsets are fixed.
	for !strings.Contains(stderr.String(), "msg=tailing") {
		select {
		case code := <-done:
			t.Fatalf("tail exited with %d before starting:\n%s", code, stderr.String())
		case <-ctx.Done():
			t.Fatalf("tail did not start:\n%s", stderr.String())
		case <-time.After(10 * time.Millisecond): // poll interval
		}
	}
	produceTail(ctx, t, brokers, topic, values...)
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, stderr.String())
		}
	case <-ctx.Done():
		t.Fatalf("tail did not stop after --count:\n%s", stderr.String())
	}
	return stdout.String()
}

func TestTailCommandFromEnd(t *testing.T) {
	dir := t.TempDir()
	emb, topic := embeddedTopic(t, dir)
	// Only the two records produced after the start, none of tailValues.
	args := []string{"tail", "--data-dir", dir, "--count", "2", "--timeout", "50s", topic}
	got := tailFromEnd(t, emb.Brokers(), args, topic, `{"schema":"New","n":1}`, `{"schema":"New","n":2}`)
	if want := `{"schema":"New","n":1}` + "\n" + `{"schema":"New","n":2}` + "\n"; got != want {
		t.Fatalf("stdout:\n%s\nwant:\n%s", got, want)
	}
}

func TestTailCommandStandaloneLayout(t *testing.T) {
	// "eventlogging standalone" keeps its broker in <data-dir>/kafka.
	dir := t.TempDir()
	_, topic := embeddedTopic(t, filepath.Join(dir, role.BrokerDir))
	var stdout, stderr bytes.Buffer
	code := cli.Run([]string{"tail", "--data-dir", dir, "--from-beginning", "--count", "1", "--timeout", "30s", topic}, nil, &stdout, &stderr)
	if code != 0 || stdout.String() != tailValues[0]+"\n" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, stdout.String(), stderr.String())
	}
}

func TestTailCommandNoBroker(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := cli.Run([]string{"tail", "--data-dir", dir, "t"}, nil, &stdout, &stderr)
	want := fmt.Sprintf(`eventlogging: no broker: give --kafka-brokers HOST:PORT,… (or --config FILE), or start "eventlogging standalone" and give its --data-dir DIR (looked for %s and %s)`,
		filepath.Join(dir, "broker.json"), filepath.Join(dir, "kafka", "broker.json"))
	if code != 1 || strings.TrimSpace(stderr.String()) != want {
		t.Fatalf("exit %d, stderr %q; want exit 1 and %q", code, stderr.String(), want)
	}

	// A broker that stopped: its data directory has no broker.json any more.
	emb, err := embedded.Start(embedded.Config{DataDir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := emb.Close(); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	if code := cli.Run([]string{"tail", "--data-dir", dir, "t"}, nil, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "no broker: give --kafka-brokers") {
		t.Fatalf("after the broker stopped: exit %d, stderr %q", code, stderr.String())
	}

	// A topic that does not exist: tail waits for it, saying so, and
	// exits 1 when the timeout comes first.
	_, topic := embeddedTopic(t, dir)
	stderr.Reset()
	if code := cli.Run([]string{"tail", "--data-dir", dir, "--timeout", "1s", topic, "nope"}, nil, &stdout, &stderr); code != 1 ||
		!strings.Contains(stderr.String(), "tail: waiting for nope to exist") || !strings.Contains(stderr.String(), "topic nope does not exist") {
		t.Fatalf("missing topic: exit %d, stderr %q", code, stderr.String())
	}
	// The bounded read does not wait, and says how to.
	stderr.Reset()
	if code := cli.Run([]string{"tail", "--data-dir", dir, "--from-beginning", "--count", "1", "nope"}, nil, &stdout, &stderr); code != 1 ||
		!strings.Contains(stderr.String(), "topic nope does not exist") || !strings.Contains(stderr.String(), "add --timeout D to wait for it") {
		t.Fatalf("missing topic, bounded read: exit %d, stderr %q", code, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Fatalf("stdout %q, want nothing", stdout.String())
	}
}

// TestTailCommandWaitsForTopic is the impatient path: tail started before
// a schema's topic exists (the processor makes it with its first event)
// prints that first event, and the records produced meanwhile to the
// topics that did exist.
func TestTailCommandWaitsForTopic(t *testing.T) {
	dir := t.TempDir()
	emb, topic := embeddedTopic(t, dir)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	const late = "eventlogging_Late"
	var stdout bytes.Buffer
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Run([]string{"tail", "--data-dir", dir, "--count", "2", "--timeout", "50s", topic, late}, nil, &stdout, &stderr)
	}()
	for !strings.Contains(stderr.String(), "waiting for "+late) {
		select {
		case code := <-done:
			t.Fatalf("tail exited with %d before waiting:\n%s", code, stderr.String())
		case <-ctx.Done():
			t.Fatalf("tail did not say it waits:\n%s", stderr.String())
		case <-time.After(10 * time.Millisecond): // poll interval
		}
	}
	produceTail(ctx, t, emb.Brokers(), topic, `{"schema":"Meanwhile","n":1}`)
	cl, err := kafka.NewClient(kafka.Config{Brokers: emb.Brokers()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := kafka.NewTopics(cl, kafka.TopicDefaults{}).Ensure(ctx, late); err != nil {
		t.Fatal(err)
	}
	produceTail(ctx, t, emb.Brokers(), late, `{"schema":"Late","n":2}`)
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, stderr.String())
		}
	case <-ctx.Done():
		t.Fatalf("tail did not print the late topic's first record:\n%s", stderr.String())
	}
	got := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	slices.Sort(got)
	if want := []string{`{"schema":"Late","n":2}`, `{"schema":"Meanwhile","n":1}`}; !slices.Equal(got, want) {
		t.Fatalf("printed %q, want %q", got, want)
	}
}

func TestTailRealKafka(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	topic := kafkatest.Topic(t, "tail")
	cl := kafkaClient(t, brokers) // closed after the topic is deleted below
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, -1, nil, topic); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := adm.DeleteTopic(context.Background(), topic); err != nil {
			t.Logf("delete topic %s: %v", topic, err)
		}
	})
	produceTail(ctx, t, brokers, topic, tailValues...)
	brokerFlag := strings.Join(brokers, ",")

	// From the beginning, filtered: the three Foo events. The topic has two
	// partitions, so the order across them is not fixed: compare sorted.
	var stdout, stderr bytes.Buffer
	code := cli.Run([]string{"tail", "--brokers", brokerFlag, "--from-beginning", "--count", "3", "--schema", "Foo", "--timeout", "60s", topic}, nil, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr.String())
	}
	got := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	slices.Sort(got)
	want := []string{
		`{"$schema":"/analytics/Foo/1.0.0","n":2}`,
		`{"schema":"Foo","revision":1,"event":{"n":1}}`,
		`{"schema":"Foo","revision":1,"event":{"n":3}}`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("from the beginning printed %q; want %q", got, want)
	}

	// From the end: only what is produced after the start.
	args := []string{"tail", "--brokers", brokerFlag, "--count", "1", "--timeout", "60s", topic}
	if out := tailFromEnd(t, brokers, args, topic, `{"schema":"New"}`); out != `{"schema":"New"}`+"\n" {
		t.Fatalf("from the end printed %q", out)
	}
}
