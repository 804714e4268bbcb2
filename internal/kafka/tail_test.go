package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// tailCluster starts an in-memory kfake broker with a two-partition topic.
func tailCluster(t *testing.T, topic string) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// startTailCluster starts tailCluster with the topic "t" and returns a
// context that ends with the test (within 30 seconds), the brokers and a
// client of them.
func startTailCluster(t *testing.T) (context.Context, []string, *kgo.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	brokers := tailCluster(t, "t")
	return ctx, brokers, newTestClient(t, brokers)
}

// produceValues produces one record per value, keyed so both partitions
// get some, and waits for all acknowledgements.
func produceValues(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, values ...string) {
	t.Helper()
	msgs := make([]Message, len(values))
	for i, v := range values {
		msgs[i] = Message{Topic: topic, Key: []byte(v), Value: []byte(v)}
	}
	if err := ProduceSync(ctx, cl, msgs); err != nil {
		t.Fatal(err)
	}
}

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%02d", prefix, i)
	}
	return out
}

// collect returns a Tail function gathering values until n, then stopping,
// and checking offsets increase within each partition.
func collect(t *testing.T, n int, got *[]string) func(Record) error {
	last := map[int32]int64{}
	return func(r Record) error {
		if prev, ok := last[r.Partition]; ok && r.Offset <= prev {
			t.Errorf("partition %d: offset %d after %d", r.Partition, r.Offset, prev)
		}
		last[r.Partition] = r.Offset
		*got = append(*got, string(r.Value))
		if len(*got) == n {
			return ErrStopTail
		}
		return nil
	}
}

// tailSorted tails with cfg until n values have come (collect) and
// returns them sorted.
func tailSorted(ctx context.Context, t *testing.T, cfg TailConfig, n int) []string {
	t.Helper()
	var got []string
	if err := Tail(ctx, cfg, collect(t, n, &got)); err != nil {
		t.Fatalf("Tail: %v (ErrStopTail must stop cleanly)", err)
	}
	slices.Sort(got)
	return got
}

func TestTailFromBeginning(t *testing.T) {
	ctx, brokers, cl := startTailCluster(t)
	want := names("rec", 20)
	produceValues(ctx, t, cl, "t", want...)

	got := tailSorted(ctx, t, TailConfig{Kafka: Config{Brokers: brokers}, Topics: []string{"t"}, FromBeginning: true}, len(want))
	if !slices.Equal(got, want) {
		t.Fatalf("from the beginning got %v, want %v", got, want)
	}
}

func TestTailFromEnd(t *testing.T) {
	ctx, brokers, cl := startTailCluster(t)
	produceValues(ctx, t, cl, "t", names("old", 20)...)

	want := names("new", 10)
	cfg := TailConfig{
		Kafka:  Config{Brokers: brokers},
		Topics: []string{"t"},
		// Produced once the start offsets are fixed: all must arrive. An
		// old record would be read first and take one of the 10 places.
		OnStart: func() { produceValues(ctx, t, cl, "t", want...) },
	}
	if got := tailSorted(ctx, t, cfg, len(want)); !slices.Equal(got, want) {
		t.Fatalf("from the end got %v, want only the records produced after the start %v", got, want)
	}
}

func TestTailStops(t *testing.T) {
	ctx, brokers, cl := startTailCluster(t)
	produceValues(ctx, t, cl, "t", names("rec", 4)...)
	cfg := TailConfig{Kafka: Config{Brokers: brokers}, Topics: []string{"t"}, FromBeginning: true}

	// fn's own error is returned as is.
	boom := errors.New("boom")
	calls := 0
	err := Tail(ctx, cfg, func(Record) error { calls++; return boom })
	if !errors.Is(err, boom) || calls != 1 {
		t.Fatalf("Tail with a failing fn = %v after %d calls; want boom after 1", err, calls)
	}

	// A wrapped ErrStopTail stops cleanly too.
	err = Tail(ctx, cfg, func(Record) error { return fmt.Errorf("enough: %w", ErrStopTail) })
	if err != nil {
		t.Fatalf("Tail stopped with a wrapped ErrStopTail = %v, want nil", err)
	}

	// ctx done: nil, and fn is not called afterwards.
	cctx, ccancel := context.WithCancel(ctx)
	calls = 0
	err = Tail(cctx, cfg, func(Record) error { calls++; ccancel(); return nil })
	if err != nil || calls != 1 {
		t.Fatalf("Tail after cancel = %v with %d calls; want nil after 1 call", err, calls)
	}

	// No records at all: the deadline ends it.
	dctx, dcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer dcancel()
	if err := Tail(dctx, TailConfig{Kafka: Config{Brokers: brokers}, Topics: []string{"t"}}, func(r Record) error {
		t.Errorf("unexpected record %s", r.Value)
		return nil
	}); err != nil {
		t.Fatalf("Tail until the deadline = %v, want nil", err)
	}
}

func TestTailErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	brokers := tailCluster(t, "t")
	noop := func(Record) error { return nil }
	for _, c := range []struct {
		cfg  TailConfig
		want string
	}{
		{TailConfig{Kafka: Config{Brokers: brokers}}, "no topics"},
		{TailConfig{Topics: []string{"t"}}, "no brokers"},
		{TailConfig{Kafka: Config{Brokers: brokers}, Topics: []string{"t", "missing"}}, "topic missing does not exist"},
	} {
		err := Tail(ctx, c.cfg, noop)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Tail(%+v) = %v; want an error containing %q", c.cfg, err, c.want)
		}
	}
}

// newTestClient is a client of brokers, closed when the test ends.
func newTestClient(t *testing.T, brokers []string, extra ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := NewClient(Config{Brokers: brokers}, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestTailWaitsForTopic: with WaitForTopics, a topic made after Tail
// started is read from its beginning once it appears, and a topic that
// existed is read from where Tail started; when ctx ends first, the error
// says the topic does not exist. StopAtEnd does not wait.
func TestTailWaitsForTopic(t *testing.T) {
	ctx, brokers, cl := startTailCluster(t)
	produceValues(ctx, t, cl, "t", "before")
	waiting := make(chan []string, 1)
	cfg := TailConfig{Kafka: Config{Brokers: brokers}, Topics: []string{"t", "late"}, WaitForTopics: true,
		OnWait: func(missing []string) { waiting <- missing }}
	var got []string
	done := make(chan error, 1)
	go func() {
		done <- Tail(ctx, cfg, func(r Record) error {
			got = append(got, r.Topic+":"+string(r.Value))
			if len(got) == 3 {
				return ErrStopTail
			}
			return nil
		})
	}()
	select {
	case missing := <-waiting:
		if !slices.Equal(missing, []string{"late"}) {
			t.Fatalf("OnWait(%q), want [late]", missing)
		}
	case err := <-done:
		t.Fatalf("Tail returned %v before waiting", err)
	}
	produceValues(ctx, t, cl, "t", "meanwhile")
	if err := NewTopics(cl, TopicDefaults{Partitions: 2}).Ensure(ctx, "late"); err != nil {
		t.Fatal(err)
	}
	produceValues(ctx, t, cl, "late", "first", "second")
	if err := <-done; err != nil {
		t.Fatalf("Tail = %v", err)
	}
	slices.Sort(got)
	if want := []string{"late:first", "late:second", "t:meanwhile"}; !slices.Equal(got, want) {
		t.Fatalf("read %q, want %q", got, want)
	}

	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	cfg = TailConfig{Kafka: Config{Brokers: brokers}, Topics: []string{"never"}, WaitForTopics: true}
	if err := Tail(short, cfg, func(Record) error { return nil }); !errors.Is(err, kerr.UnknownTopicOrPartition) || !strings.Contains(err.Error(), "topic never does not exist") {
		t.Fatalf("Tail of a topic that never comes = %v, want UnknownTopicOrPartition", err)
	}
	cfg.FromBeginning, cfg.StopAtEnd = true, true
	if err := Tail(ctx, cfg, func(Record) error { return nil }); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("bounded Tail of a missing topic = %v, want UnknownTopicOrPartition at once", err)
	}
}
