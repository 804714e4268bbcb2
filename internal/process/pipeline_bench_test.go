package process

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/eventlogging/eventlogging/internal/kafka"
)

// benchEvents is how many raw events the pipeline benchmark pre-fills:
// 1,000,000, or EVENTLOGGING_BENCH_EVENTS.
func benchEvents(b *testing.B) int {
	if v := os.Getenv("EVENTLOGGING_BENCH_EVENTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("EVENTLOGGING_BENCH_EVENTS=%q: want a positive count", v)
		}
		return n
	}
	return 1_000_000
}

// BenchmarkPipeline measures the processor as deployed: a raw topic (6
// partitions) pre-filled with valid beacon lines, consumed by one
// processor (consumer group, parallel transform, idempotent acks=all
// produce, commit after acks) until every event is in its schema topic.
// "kfake" runs on franz-go's in-process broker, "kafka" on the real broker
// of EVENTLOGGING_KAFKA_BROKERS (skipped without it). One iteration
// processes every event: run with -benchtime 1x.
func BenchmarkPipeline(b *testing.B) {
	b.Run("kfake", func(b *testing.B) {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(6))
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		benchPipeline(b, c.ListenAddrs())
	})
	b.Run("kafka", func(b *testing.B) {
		v := os.Getenv("EVENTLOGGING_KAFKA_BROKERS")
		if v == "" {
			b.Skip("EVENTLOGGING_KAFKA_BROKERS not set (scripts/kafka.sh start)")
		}
		benchPipeline(b, strings.Split(v, ","))
	})
}

func benchPipeline(b *testing.B, brokers []string) {
	n := benchEvents(b)
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	raw := "bench-raw-" + run
	kc := kafka.Config{Brokers: brokers, Logger: slog.New(slog.DiscardHandler)}
	prod, err := kafka.NewProducer(kafka.ProducerConfig{Kafka: kc})
	if err != nil {
		b.Fatal(err)
	}
	defer prod.Close()
	ctx := context.Background()
	if err := prod.Topics(kafka.TopicDefaults{Partitions: 6}).Ensure(ctx, raw); err != nil {
		b.Fatal(err)
	}
	// Pre-fill: distinct lines (seqId varies), about 330 bytes each.
	const chunk = 20_000
	msgs := make([]kafka.Message, 0, chunk)
	for i := range n {
		line := beaconLine(fmt.Sprintf(`{"event":{"button":"save","page":"Main_Page_%d","count":%d,"loggedIn":true},"revision":1,"schema":"ButtonClick","webHost":"en.wikipedia.org","wiki":"enwiki"}`, i%1000, i%97), i)
		msgs = append(msgs, kafka.Message{Topic: raw, Value: []byte(line)})
		if len(msgs) == chunk || i == n-1 {
			if err := prod.ProduceSync(ctx, msgs); err != nil {
				b.Fatal(err)
			}
			msgs = msgs[:0]
		}
	}
	p := newTestProcessor(b, Config{TopicTemplate: "bench_" + run + "_{schema}", MixedTopic: "-", ErrorTopic: "bench_" + run + "_EventError"}, "000102030405060708090a0b0c0d0e0f")
	tf, err := p.Transform([]Input{{Topic: raw, Format: mustFormat(b, beaconFormat)}})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		var consumed, produced atomic.Int64
		runCtx, stop := context.WithCancel(ctx)
		pipe, err := kafka.NewPipe(kafka.PipeConfig{
			Kafka: kc, Group: fmt.Sprintf("bench-%s-%d", run, i), Topics: []string{raw},
			OutputTopics: kafka.TopicDefaults{Partitions: 6}, CreateOutputTopics: true, Logger: kc.Logger,
			OnBatch: func(c, p int) {
				produced.Add(int64(p))
				if consumed.Add(int64(c)) >= int64(n) {
					stop()
				}
			},
		}, tf)
		if err != nil {
			b.Fatal(err)
		}
		if err := pipe.Run(runCtx); err != nil {
			b.Fatal(err)
		}
		stop()
		if consumed.Load() != int64(n) || produced.Load() != int64(n) {
			b.Fatalf("consumed %d, produced %d, want %d each", consumed.Load(), produced.Load(), n)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
