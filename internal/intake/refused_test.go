package intake

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/kafkatest"
	"github.com/eventlogging/eventlogging/internal/process"
	"github.com/eventlogging/eventlogging/internal/spool"
)

// post sends body to the intake's path and returns the status and body.
func (ti *testIntake) post(t *testing.T, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ti.http.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// searchQuery is a SearchQuery event (examples/schemas) with the given
// event fields.
func searchQuery(fields string) string {
	return `{"schema":"SearchQuery","revision":5,"event":{"query":"q","results":1,"source":"fulltext"` + fields + `}}`
}

// TestOversizedRecordsNeverReachKafka: the requests that made records Kafka
// refuses (issue 30, findings 1 and 2) are answered at once and leave the
// writer and the spool as they were; the events sent beside them are
// stored once.
func TestOversizedRecordsNeverReachKafka(t *testing.T) {
	ti := newTestIntake(t, Config{})
	// A hasty event of 1.2 MB: under the 4 MiB body limit, over the
	// processor's. 413 naming the limit, before anything is produced.
	code, body := ti.post(t, "/v1/events?hasty=true", searchQuery(`,"dt":"`+strings.Repeat("x", 1_200_000)+`"`))
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(body, fmt.Sprint(process.DefaultMaxEventBytes)) {
		t.Fatalf("hasty 1.2 MB event: %d %.300s, want 413 naming the %d-byte limit", code, body, process.DefaultMaxEventBytes)
	}
	// A beacon with a user agent of 600 KB: the raw line is over the limit.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, ti.http.URL+"/beacon/event?%7B%7D;", nil)
	req.Header.Set("User-Agent", strings.Repeat("a", 600_000))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("beacon with a 600 KB user agent: %d, want 413", resp.StatusCode)
	}
	// Synchronous: a value of 522,000 bytes quoted by its violation, and
	// 30,000 undeclared properties (a violation each). Both are answered
	// invalid with a bounded answer, and their EventErrors fit a record.
	huge := searchQuery(`,"dt":"` + strings.Repeat("x", 522_000) + `"`)
	var many strings.Builder
	for i := range 30_000 {
		fmt.Fprintf(&many, `,"k%d":1`, i)
	}
	for name, ev := range map[string]string{"dt": huge, "keys": searchQuery(many.String())} {
		code, body := ti.post(t, "/v1/events", ev)
		if code != http.StatusBadRequest {
			t.Fatalf("%s: %d %.300s, want 400", name, code, body)
		}
		if len(body) > 64<<10 {
			t.Errorf("%s: answer of %d bytes, want at most 64 KiB", name, len(body))
		}
		var pr PostResponse
		if err := json.Unmarshal([]byte(body), &pr); err != nil {
			t.Fatal(err)
		}
		if n := len(pr.Events[0].Errors); n > capsule.MaxViolations {
			t.Errorf("%s: %d violations listed, want at most %d", name, n, capsule.MaxViolations)
		}
	}
	// The events beside them: accepted and written once.
	code, body = ti.post(t, "/v1/events", "["+searchQuery("")+","+searchQuery(`,"dt":"2026-12-04T10:00:00Z"`)+"]")
	if code != http.StatusCreated {
		t.Fatalf("valid events after the hostile ones: %d %s", code, body)
	}
	if st := ti.writer.Stats(); st.KafkaDown || st.SpoolRecords != 0 || st.Spooled != 0 {
		t.Fatalf("writer after the hostile requests: %+v, want Kafka up and nothing spooled", st)
	}
	errs := ti.consume(t, capsule.TopicEventError, 2)
	for _, r := range errs {
		if len(r.Value) > process.DefaultMaxRecordBytes {
			t.Errorf("EventError of %d bytes, over the %d-byte record limit", len(r.Value), process.DefaultMaxRecordBytes)
		}
	}
	if recs := ti.consume(t, "eventlogging_SearchQuery", 2); len(recs) != 2 {
		t.Fatalf("SearchQuery topic: %d records, want the 2 valid events once", len(recs))
	}
}

// smallTopic creates topic on brokers with max.message.bytes = limit, so
// that Kafka refuses larger records for good.
func smallTopic(t *testing.T, brokers []string, topic string, limit int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	v := fmt.Sprint(limit)
	if _, err := kadm.NewClient(cl).CreateTopic(t.Context(), 1, 1, map[string]*string{"max.message.bytes": &v}, topic); err != nil {
		t.Fatal(err)
	}
}

// TestSpoolReplaySkipsRefusedRecord: a spooled record Kafka refuses for good
// is counted and skipped; its neighbours are produced exactly once and the
// spool drains (on 1481bd2 the whole batch was produced again every 1-2 s,
// and the spool never drained).
func TestSpoolReplaySkipsRefusedRecord(t *testing.T) {
	t.Run("kfake", func(t *testing.T) {
		cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			t.Fatal(err)
		}
		defer cluster.Close()
		spoolReplayRefused(t, cluster.ListenAddrs(), "raw")
	})
	t.Run("kafka", func(t *testing.T) {
		spoolReplayRefused(t, kafkatest.Brokers(t), kafkatest.Topic(t, "spool-refused"))
	})
}

func spoolReplayRefused(t *testing.T, brokers []string, topic string) {
	smallTopic(t, brokers, topic, 2000)
	q, err := spool.Open(t.TempDir(), spool.Config{MaxBytes: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	var recs []kafka.Message
	for i := range 30 {
		v := fmt.Appendf(nil, "event-%02d", i)
		if i == 10 {
			v = make([]byte, 5000) // over the topic's limit, compressed or not
			_, _ = rand.Read(v)
		}
		recs = append(recs, kafka.Message{Topic: topic, Value: v})
	}
	if err := q.Append(recs); err != nil {
		t.Fatal(err)
	}
	prod, err := kafka.NewProducer(kafka.ProducerConfig{Kafka: kafka.Config{Brokers: brokers}})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	// The refused record's replacement (the processor's EventError in
	// the intake): an event answered while Kafka was away leaves a trace.
	onRefused := func(m kafka.Message, err error) (kafka.Message, bool) {
		return kafka.Message{Topic: topic + "-errors", Value: fmt.Appendf(nil, "%d bytes refused: %s", len(m.Value), kafka.RefusedReason(err))}, true
	}
	w := NewWriter(prod, q, WriterConfig{ReplayBatch: 1000, Topics: prod.Topics(kafka.TopicDefaults{}), OnRefused: onRefused})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	deadline := time.Now().Add(20 * time.Second)
	for q.Len() > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // polling the spool the replayer drains
	}
	// Two more replay rounds' time: a replayer that produced the batch
	// again would do it now.
	time.Sleep(2 * time.Second)
	cancel()
	<-done
	if q.Len() != 0 {
		t.Fatalf("spool still holds %d records", q.Len())
	}
	if st := w.Stats(); st.Refused != 1 {
		t.Errorf("refused %d records, want 1", st.Refused)
	}
	ti := &testIntake{brokers: brokers}
	got := ti.consume(t, topic, 29)
	seen := map[string]int{}
	for _, r := range got {
		seen[string(r.Value)]++
	}
	if len(got) != 29 || len(seen) != 29 {
		t.Fatalf("raw topic: %d records, %d distinct, want the 29 good ones once each", len(got), len(seen))
	}
	if errs := ti.consume(t, topic+"-errors", 1); len(errs) != 1 || string(errs[0].Value) != "5000 bytes refused: MESSAGE_TOO_LARGE" {
		t.Fatalf("replacement records: %d, first %q", len(errs), errs[0].Value)
	}
}

// TestSyncRefusedEventIsNotAccepted: a valid event Kafka refuses (its
// schema topic's max.message.bytes is smaller) is answered invalid, with
// Kafka's reason, never 201; its neighbour is accepted and stored once.
func TestSyncRefusedEventIsNotAccepted(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	smallTopic(t, cluster.ListenAddrs(), "eventlogging_SearchQuery", 1500)
	ti := newTestIntakeOn(t, cluster.ListenAddrs(), Config{})
	big := searchQuery("")
	big = strings.Replace(big, `"query":"q"`, `"query":"`+base64.StdEncoding.EncodeToString(randomBytes(6000))+`"`, 1)
	code, body := ti.post(t, "/v1/events", "["+searchQuery("")+","+big+"]")
	if code != http.StatusMultiStatus {
		t.Fatalf("%d %.500s, want 207", code, body)
	}
	var pr PostResponse
	if err := json.Unmarshal([]byte(body), &pr); err != nil {
		t.Fatal(err)
	}
	if pr.Accepted != 1 || pr.Events[1].Status != "invalid" || !strings.Contains(pr.Events[1].Message, "MESSAGE_TOO_LARGE") {
		t.Fatalf("answer %+v, want event 1 invalid with MESSAGE_TOO_LARGE", pr)
	}
	if st := ti.writer.Stats(); st.KafkaDown || st.SpoolRecords != 0 || st.Refused != 1 {
		t.Fatalf("writer: %+v, want Kafka up, nothing spooled, 1 refused", st)
	}
	if recs := ti.consume(t, "eventlogging_SearchQuery", 1); len(recs) != 1 {
		t.Fatalf("%d records, want 1", len(recs))
	}
	errs := ti.consume(t, capsule.TopicEventError, 1)
	if !bytes.Contains(errs[0].Value, []byte("MESSAGE_TOO_LARGE")) {
		t.Fatalf("EventError %.300s, want Kafka's reason", errs[0].Value)
	}
	// The EventError is the answered uuid's: a client finds it by it.
	if !bytes.Contains(errs[0].Value, []byte(`"uuid":"`+pr.Events[1].UUID+`"`)) {
		t.Errorf("EventError %.300s, want the answer's uuid %s", errs[0].Value, pr.Events[1].UUID)
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// flakyTopics fails its first Ensure (Kafka unreachable while creating the
// topics), then creates nothing.
type flakyTopics struct{ calls atomic.Int32 }

func (f *flakyTopics) Ensure(context.Context, ...string) error {
	if f.calls.Add(1) == 1 {
		return errors.New("create topics: broker unreachable")
	}
	return nil
}

// TestReplayAfterTopicCreationFails: a replay whose topics could not be
// created produces nothing and tries again later; the spool drains once
// they can be (a replay that found no outcomes must not index them).
func TestReplayAfterTopicCreationFails(t *testing.T) {
	q, err := spool.Open(t.TempDir(), spool.Config{MaxBytes: 1 << 20, MinFreeBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	if err := q.Append([]kafka.Message{{Topic: "raw", Value: []byte("a")}, {Topic: "raw", Value: []byte("b")}}); err != nil {
		t.Fatal(err)
	}
	topics := &flakyTopics{}
	w := NewWriter(ackAll{}, q, WriterConfig{Topics: topics})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	for q.Len() > 0 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond) // polling the spool the replayer drains
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if q.Len() != 0 || topics.calls.Load() < 2 {
		t.Fatalf("spool holds %d records after %d topic creations, want 0 after at least 2", q.Len(), topics.calls.Load())
	}
}

// refusingKafka starts kfake with a topic "raw" whose max.message.bytes is
// 2,000 (Kafka refuses larger records for good) and opens a spool; it
// returns the brokers and the spool, both closed when the test ends.
func refusingKafka(t *testing.T) ([]string, *spool.Queue) {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	brokers := cluster.ListenAddrs()
	smallTopic(t, brokers, "raw", 2000)
	q, err := spool.Open(t.TempDir(), spool.Config{MaxBytes: 16 << 20, MinFreeBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	return brokers, q
}
