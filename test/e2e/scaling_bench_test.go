package e2e

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/kafka"
)

// BenchmarkProcessorScaling measures the processor as separate processes on
// the real broker (EVENTLOGGING_KAFKA_BROKERS): a 12-partition raw topic
// pre-filled with EVENTLOGGING_BENCH_EVENTS (default 1,000,000) valid
// beacon lines, consumed by 1, 2 and 4 `eventlogging process` processes of
// one consumer group until the group's committed offsets reach the end.
// The processes run a binary built without -race (plainBuild): the race
// detector would slow them several times over. Run with -benchtime 1x.
func BenchmarkProcessorScaling(b *testing.B) {
	v := os.Getenv("EVENTLOGGING_KAFKA_BROKERS")
	if v == "" {
		b.Skip("EVENTLOGGING_KAFKA_BROKERS not set (scripts/kafka.sh start)")
	}
	brokers := strings.Split(v, ",")
	n := 1_000_000
	if s := os.Getenv("EVENTLOGGING_BENCH_EVENTS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	raw := "scaling-raw-" + run
	kc := kafka.Config{Brokers: brokers}
	prod, err := kafka.NewProducer(kafka.ProducerConfig{Kafka: kc})
	if err != nil {
		b.Fatal(err)
	}
	defer prod.Close()
	ctx := context.Background()
	if err := prod.Topics(kafka.TopicDefaults{Partitions: 12}).Ensure(ctx, raw); err != nil {
		b.Fatal(err)
	}
	msgs := make([]kafka.Message, 0, 20_000)
	for i := range n {
		capsule := fmt.Sprintf(`{"event":{"button":"save","page":"Main_Page_%d","count":%d,"loggedIn":true},"revision":1,"schema":"ButtonClick","webHost":"en.wikipedia.org","wiki":"enwiki"}`, i%1000, i%97)
		line := "?" + url.QueryEscape(capsule) + ";\tcp1.example\t" + strconv.Itoa(i) + "\t2026-11-30T10:00:00\t198.51.100.7\tMozilla/5.0"
		msgs = append(msgs, kafka.Message{Topic: raw, Value: []byte(line)})
		if len(msgs) == cap(msgs) || i == n-1 {
			if err := prod.ProduceSync(ctx, msgs); err != nil {
				b.Fatal(err)
			}
			msgs = msgs[:0]
		}
	}
	admin, err := kafka.NewAdmin(kc)
	if err != nil {
		b.Fatal(err)
	}
	defer admin.Close()
	runs := 0 // a new consumer group per measurement, also under -count
	for _, procs := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("processes=%d", procs), func(b *testing.B) {
			for i := range b.N {
				runs++
				group := fmt.Sprintf("scaling-%s-%d-%d-%d", run, procs, i, runs)
				bin, err := plainBuild()
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				var cmds []*exec.Cmd
				for p := range procs {
					cmd := exec.CommandContext(b.Context(), bin, "process", "--kafka-brokers", v, "--schemas", "../../examples/schemas",
						"--raw-topic", raw, "--group", group, "--mixed-topic", "-", "--metrics-listen", "off",
						"--topic-template", "scaling_"+run+"_{schema}", "--error-topic", "scaling_"+run+"_EventError", "--processor-id", fmt.Sprintf("p%d", p))
					if err := cmd.Start(); err != nil {
						b.Fatal(err)
					}
					cmds = append(cmds, cmd)
				}
				// Done when the group has committed every offset.
				for {
					lags, err := admin.GroupLags(b.Context(), "", group)
					var committed bool
					if err == nil && len(lags) == 1 && len(lags[0].Partitions) == 12 && lags[0].Total() == 0 {
						committed = true
					}
					if committed {
						break
					}
					if time.Since(start) > 10*time.Minute {
						b.Fatalf("group %s did not finish in 10 minutes", group)
					}
					time.Sleep(50 * time.Millisecond) // polling the broker, not synchronising goroutines
				}
				elapsed := time.Since(start)
				for _, c := range cmds {
					_ = c.Process.Signal(os.Interrupt)
				}
				for _, c := range cmds {
					_ = c.Wait()
				}
				b.ReportMetric(float64(n)/elapsed.Seconds(), "events/s")
			}
		})
	}
}
