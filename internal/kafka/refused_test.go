package kafka

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventlogging/eventlogging/internal/kafkatest"
)

// readAll returns the values of every record of topic (waiting up to 10 s
// for at least min of them), counted by value.
func readAll(t *testing.T, brokers []string, topic string, atLeast int) map[string]int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := map[string]int{}
	n := 0
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for n < atLeast {
		f := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		f.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++; n++ })
	}
	// Anything more (a record produced twice) arrives now or not at all.
	ctx2, cancel2 := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel2()
	cl.PollFetches(ctx2).EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
	return seen
}

// TestPipeRefusedRecordIsItsOwn: an output record Kafka refuses for good
// (over its topic's max.message.bytes, batched with good ones; a topic name
// Kafka refuses) does not stop the pipe: it becomes its replacement, its
// neighbours are produced once, and the batch is committed. On 1481bd2 Run
// returned MESSAGE_TOO_LARGE, and a restart did the same, for ever.
func TestPipeRefusedRecordIsItsOwn(t *testing.T) {
	t.Run("kfake", func(t *testing.T) {
		cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			t.Fatal(err)
		}
		defer cluster.Close()
		pipeRefused(t, cluster.ListenAddrs(), "refused")
	})
	t.Run("kafka", func(t *testing.T) {
		pipeRefused(t, kafkatest.Brokers(t), kafkatest.Topic(t, "refused"))
	})
}

// pipeRefused is TestPipeRefusedRecordIsItsOwn on brokers, with topics
// named after prefix.
func pipeRefused(t *testing.T, brokers []string, prefix string) {
	in, outTopic, errTopic, group := prefix+"-in", prefix+"-out", prefix+"-errors", prefix+"-g"
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	limit := "2000"
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(t.Context(), 1, 1, map[string]*string{"max.message.bytes": &limit}, outTopic); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(t.Context(), 1, 1, nil, in); err != nil {
		t.Fatal(err)
	}
	produceN(t, brokers, in, 0, 40)

	big := make([]byte, 5000) // incompressible, over "out"'s limit
	_, _ = rand.Read(big)
	tf := func(_ context.Context, recs []Record, out []Message) []Message {
		for _, r := range recs {
			switch v := string(r.Value); v {
			case "7":
				out = append(out, Message{Topic: outTopic, Value: big})
			case "13":
				out = append(out, Message{Topic: "bad topic name!" + strings.Repeat("x", 300), Value: r.Value})
			default:
				out = append(out, Message{Topic: outTopic, Value: r.Value})
			}
		}
		return out
	}
	var consumed atomic.Int64
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	p, err := NewPipe(PipeConfig{
		Kafka: Config{Brokers: brokers}, Group: group, Topics: []string{in}, CreateOutputTopics: true,
		OnRefused: func(m Message, err error) (Message, bool) {
			to := "out"
			if m.Topic != outTopic {
				to = m.Topic[:20]
			}
			return Message{Topic: errTopic, Value: fmt.Appendf(nil, "refused %d bytes for %s: %s", len(m.Value), to, RefusedReason(err))}, true
		},
		OnBatch: func(n, _ int) {
			if consumed.Add(int64(n)) >= 40 {
				cancel()
			}
		},
	}, tf)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(ctx); err != nil {
		t.Fatalf("Run: %v, want it to go on past the refused records", err)
	}
	if consumed.Load() < 40 {
		t.Fatalf("committed %d of 40 records", consumed.Load())
	}
	out := readAll(t, brokers, outTopic, 38)
	if len(out) != 38 {
		t.Errorf("out: %d distinct records, want the 38 good ones", len(out))
	}
	for v, n := range out {
		if n != 1 {
			t.Errorf("out: %q produced %d times", v, n)
		}
	}
	errs := readAll(t, brokers, errTopic, 2)
	want := map[string]int{"refused 5000 bytes for out: MESSAGE_TOO_LARGE": 1, "refused 2 bytes for bad topic name!xxxxx: TOPIC_REFUSED": 1}
	if fmt.Sprint(errs) != fmt.Sprint(want) {
		t.Errorf("errors topic: %v, want %v", errs, want)
	}
	// Committed: a new member of the group starts after the 40 records.
	offs, err := adm.FetchOffsets(t.Context(), group)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := offs.Lookup(in, 0); o.At != 40 {
		t.Errorf("committed offset %d, want 40", o.At)
	}
}
