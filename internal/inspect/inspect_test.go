package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/lineformat"
)

// Raw topics of the test inspector: POST-path errors are replayed to the
// first, raw-path errors to the topic they came from (the second here).
const (
	rawA = "raw-a"
	rawB = "raw-b"
)

// cluster starts an in-memory kfake broker with the raw topics and a
// two-partition error topic.
func cluster(t *testing.T) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, rawA, rawB), kfake.SeedTopics(2, capsule.TopicEventError))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// newInspector connects an Inspector to brokers; Close is a cleanup.
func newInspector(t *testing.T, brokers []string) *Inspector {
	t.Helper()
	i, err := New(Config{
		Kafka:     kafka.Config{Brokers: brokers},
		RawTopics: []string{rawA, rawB},
		Interval:  100 * time.Millisecond,
		Logger:    slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(i.Close)
	return i
}

// testClient is a franz-go client on brokers that partitions by
// Record.Partition; closed at cleanup.
func testClient(t *testing.T, brokers []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func produce(ctx context.Context, t *testing.T, cl *kgo.Client, recs ...*kgo.Record) {
	t.Helper()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// readAll returns every record of topic, "<partition>/<offset>:<value>",
// sorted; a missing topic fails the test.
func readAll(ctx context.Context, t *testing.T, brokers []string, topic string) []string {
	t.Helper()
	var out []string
	err := kafka.Read(ctx, kafka.ReadConfig{Kafka: kafka.Config{Brokers: brokers}, Topic: topic, AllPartitions: true}, func(r kafka.Record) error {
		out = append(out, fmt.Sprintf("%d/%d:%s", r.Partition, r.Offset, r.Value))
		return nil
	})
	if err != nil {
		t.Fatalf("read %s: %v", topic, err)
	}
	slices.Sort(out)
	return out
}

// values strips readAll's "<partition>/<offset>:" prefixes.
func values(recs []string) []string {
	out := make([]string, len(recs))
	for k, r := range recs {
		_, out[k], _ = strings.Cut(r, ":")
	}
	return out
}

// base is the receive time of the test EventErrors; each is a second
// later than the previous one.
var base = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// testError is one EventError of the fixture and what the inspector must
// make of it.
type testError struct {
	ec    capsule.ErrorCapsule
	event string // the client's JSON event, as Errors must extract it
	raw   string // the raw record a replay must produce
	topic string // the topic it must be produced to
}

func seq(n int64) *int64 { return &n }

// fixture builds the four EventErrors, oldest first: a truncated one, one
// of another schema, one from the raw path, one from the synchronous POST.
func fixture() (truncated, other, rawPath, post testError) {
	violations := []capsule.Violation{{Pointer: "/event/responseStart", Reason: "expected integer, but got string"}}
	errorCapsule := func(k int, seq *int64, ee capsule.EventError) capsule.ErrorCapsule {
		ts := base.Add(time.Duration(k) * time.Second)
		ec := capsule.ErrorCapsule{
			Event: ee, Schema: capsule.EventErrorSchema, Revision: capsule.EventErrorRevision,
			RecvFrom: "intake1", SeqID: seq, Timestamp: ts.Unix(), DT: capsule.FormatDT(ts),
			UserAgent: "Mozilla/5.0", Topic: capsule.TopicEventError,
		}
		if seq != nil {
			ec.UUID = capsule.UUID("intake1", *seq, ts.Unix())
		}
		return ec
	}

	// The raw path: a beacon the intake wrote to raw-b, as the processor
	// reports it (Source set, RawEvent the raw line).
	nav := `{"event":{"responseStart":"slow","loadEventEnd":950},"revision":7,"schema":"NavigationTiming","webHost":"en.wikipedia.org","wiki":"enwiki"}`
	line := string(lineformat.RawLine([]byte(nav), "intake1", 42, base.Add(3*time.Second), "", "Mozilla/5.0"))
	rawPath = testError{
		ec: errorCapsule(3, seq(42), capsule.EventError{
			RawEvent: line, Message: "/event/responseStart: expected integer, but got string", Code: capsule.CodeValidation,
			Schema: "NavigationTiming", Revision: 7, Errors: violations, ProcessorID: "proc-1",
			Source: &capsule.Source{Topic: rawB, Partition: 0, Offset: 42},
		}),
		event: nav, raw: line, topic: rawB,
	}

	// The synchronous POST: no Source, RawEvent the JSON event itself.
	postEvent := `{"schema":"NavigationTiming","revision":7,"event":{"responseStart":"fast","loadEventEnd":10}}`
	post = testError{
		ec: errorCapsule(4, seq(43), capsule.EventError{
			RawEvent: postEvent, Message: "/event/responseStart: expected integer, but got string", Code: capsule.CodeValidation,
			Schema: "NavigationTiming", Revision: 7, Errors: violations,
		}),
		event: postEvent,
		raw:   string(lineformat.RawLine([]byte(postEvent), "intake1", 43, base.Add(4*time.Second), "", "Mozilla/5.0")),
		topic: rawA,
	}

	// Cut to size by the processor: cannot be replayed.
	big := `{"event":{"responseStart":"` + strings.Repeat("x", 200) + `"},"revision":7,"schema":"NavigationTiming"}`
	bigLine := string(lineformat.RawLine([]byte(big), "intake1", 40, base.Add(time.Second), "", "Mozilla/5.0"))
	truncated = testError{
		ec: errorCapsule(1, seq(40), capsule.EventError{
			RawEvent: bigLine[:64], RawEventBytes: len(bigLine), Message: "/event/responseStart: expected integer", Code: capsule.CodeValidation,
			Schema: "NavigationTiming", Revision: 7, Errors: violations,
			Source: &capsule.Source{Topic: rawA, Partition: 0, Offset: 40},
		}),
	}

	// Another schema, unknown to the registry, from the raw path.
	search := `{"event":{},"revision":99,"schema":"SearchQuery"}`
	searchLine := string(lineformat.RawLine([]byte(search), "intake1", 41, base.Add(2*time.Second), "", "Mozilla/5.0"))
	other = testError{
		ec: errorCapsule(2, seq(41), capsule.EventError{
			RawEvent: searchLine, Message: "schema SearchQuery revision 99: not found", Code: capsule.CodeProcessor,
			Schema: "SearchQuery", Revision: 99, Source: &capsule.Source{Topic: rawA, Partition: 0, Offset: 41},
		}),
		event: search, raw: searchLine, topic: rawA,
	}
	return truncated, other, rawPath, post
}

// produceErrors writes the fixture to the error topic, spread over both
// partitions, with a record that is not an EventError in between.
func produceErrors(ctx context.Context, t *testing.T, brokers []string, errs ...testError) {
	t.Helper()
	cl := testClient(t, brokers)
	for k, e := range errs {
		// Produced when the processor would have: at the receive time.
		produce(ctx, t, cl, &kgo.Record{Topic: capsule.TopicEventError, Partition: int32(k % 2), Timestamp: time.Unix(e.ec.Timestamp, 0), Value: e.ec.AppendJSON(nil)})
	}
	produce(ctx, t, cl, &kgo.Record{Topic: capsule.TopicEventError, Partition: 1, Value: []byte("not an EventError")})
}

func uuidsOf(recs []ErrorRecord) []string {
	out := make([]string, len(recs))
	for k, r := range recs {
		out[k] = r.UUID
	}
	return out
}

// withErrors is a cluster holding the fixture's EventErrors, an inspector
// of it, and a context of 30 s.
func withErrors(t *testing.T) (ctx context.Context, brokers []string, i *Inspector, truncated, other, rawPath, post testError) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	brokers = cluster(t)
	truncated, other, rawPath, post = fixture()
	produceErrors(ctx, t, brokers, truncated, other, rawPath, post)
	return ctx, brokers, newInspector(t, brokers), truncated, other, rawPath, post
}

func TestErrors(t *testing.T) {
	ctx, _, i, truncated, other, rawPath, post := withErrors(t)

	for _, c := range []struct {
		name string
		f    ErrorFilter
		want []testError // newest first
	}{
		{"all, newest first", ErrorFilter{}, []testError{post, rawPath, other, truncated}},
		{"one schema", ErrorFilter{Schema: "NavigationTiming"}, []testError{post, rawPath, truncated}},
		{"other schema", ErrorFilter{Schema: "SearchQuery"}, []testError{other}},
		{"unknown schema", ErrorFilter{Schema: "NoSuchSchema"}, nil},
		{"limit", ErrorFilter{Limit: 2}, []testError{post, rawPath}},
		{"limit with schema", ErrorFilter{Schema: "NavigationTiming", Limit: 1}, []testError{post}},
		{"no limit", ErrorFilter{Limit: -1}, []testError{post, rawPath, other, truncated}},
		{"since", ErrorFilter{Since: base.Add(3 * time.Second)}, []testError{post, rawPath}},
		{"until", ErrorFilter{Until: base.Add(2 * time.Second)}, []testError{other, truncated}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := i.Errors(ctx, c.f)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, e := range c.want {
				want = append(want, e.ec.UUID)
			}
			if !slices.Equal(uuidsOf(got), want) {
				t.Fatalf("Errors(%+v) = %v, want %v", c.f, uuidsOf(got), want)
			}
		})
	}

	got, err := i.Errors(ctx, ErrorFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("Errors = %d records, want 4", len(got))
	}
	for k, e := range []testError{post, rawPath, other, truncated} {
		r := got[k]
		t.Run(fmt.Sprintf("%d-%s", k, e.ec.Event.Schema), func(t *testing.T) {
			ee := e.ec.Event
			if want := time.Unix(e.ec.Timestamp, 0).UTC(); !r.Time.Equal(want) || r.Schema != ee.Schema || r.Revision != ee.Revision ||
				r.Code != ee.Code || r.Message != ee.Message || r.RawEvent != ee.RawEvent {
				t.Errorf("record %+v does not match its EventError %+v (time %s)", r, ee, want)
			}
			if r.Partition != int32(3-k)%2 {
				t.Errorf("partition %d, want %d", r.Partition, (3-k)%2)
			}
			if string(r.Event) != e.event {
				t.Errorf("Event = %s, want %s", r.Event, e.event)
			}
			var want []Violation
			for _, v := range ee.Errors {
				want = append(want, Violation{Path: v.Pointer, Message: v.Reason})
			}
			if !slices.Equal(r.Errors, want) {
				t.Errorf("Errors = %+v, want %+v", r.Errors, want)
			}
			if wantReplayable := ee.RawEventBytes == 0; r.Replayable != wantReplayable || r.Replayed {
				t.Errorf("Replayable %t Replayed %t, want replayable %t, not replayed", r.Replayable, r.Replayed, wantReplayable)
			}
		})
	}
}

func TestErrorsNoErrorTopic(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := newInspector(t, c.ListenAddrs()).Errors(t.Context(), ErrorFilter{})
	if err != nil || len(got) != 0 {
		t.Fatalf("Errors without an error topic = %v, %v; want nothing and no error", got, err)
	}
}

// outcome writes a replay outcome to the replay log, as a processor does.
func outcome(ctx context.Context, t *testing.T, brokers []string, uuid, status, message string) {
	t.Helper()
	v, err := json.Marshal(capsule.ReplayOutcome{Status: status, Time: time.Now().UTC(), Message: message})
	if err != nil {
		t.Fatal(err)
	}
	produce(ctx, t, testClient(t, brokers), &kgo.Record{Topic: capsule.TopicReplayLog, Key: []byte(uuid), Value: v})
}

// replayHeaders returns the replay header of every record of topic.
func replayHeaders(ctx context.Context, t *testing.T, brokers []string, topic string) []string {
	t.Helper()
	var out []string
	err := kafka.Read(ctx, kafka.ReadConfig{Kafka: kafka.Config{Brokers: brokers}, Topic: topic, AllPartitions: true}, func(r kafka.Record) error {
		v, _ := r.HeaderValue(capsule.HeaderReplayOf)
		out = append(out, string(v))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestReplay(t *testing.T) {
	ctx, brokers, i, truncated, _, rawPath, post := withErrors(t)

	// No processor here: without waiting, every replay is pending.
	res, err := i.Replay(ctx, []string{rawPath.ec.UUID, post.ec.UUID, truncated.ec.UUID, "no-such-uuid"}, ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Replayed != 2 || res.Skipped != 2 || len(res.Pending) != 2 || res.Valid != 0 || len(res.Failed) != 0 {
		t.Errorf("Replay = %+v, want 2 replayed (pending), 2 skipped", res)
	}
	for _, want := range []string{
		truncated.ec.UUID + ": the raw event was cut to size",
		"no-such-uuid: not among the recent EventErrors",
	} {
		if !slices.ContainsFunc(res.Reasons, func(r string) bool { return strings.HasPrefix(r, want) }) {
			t.Errorf("Reasons %q: none starts with %q", res.Reasons, want)
		}
	}
	// The raw-path error verbatim to its own raw topic; the POST one as
	// the raw line the intake would have written, to the first raw topic.
	// Each marked as the replay of its EventError.
	if got := values(readAll(ctx, t, brokers, rawB)); !slices.Equal(got, []string{rawPath.raw}) {
		t.Errorf("%s holds %q, want the raw-path line verbatim %q", rawB, got, rawPath.raw)
	}
	if got := values(readAll(ctx, t, brokers, rawA)); !slices.Equal(got, []string{post.raw}) {
		t.Errorf("%s holds %q, want the POST event as a raw line %q", rawA, got, post.raw)
	}
	if got := replayHeaders(ctx, t, brokers, rawB); !slices.Equal(got, []string{rawPath.ec.UUID}) {
		t.Errorf("%s replay headers %q, want %q", rawB, got, rawPath.ec.UUID)
	}

	// No outcome yet: nothing counts as replayed.
	replayedOf := func() map[string]bool {
		errs, err := i.Errors(ctx, ErrorFilter{})
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]bool{}
		for _, r := range errs {
			m[r.UUID] = r.Replayed
		}
		return m
	}
	if m := replayedOf(); m[rawPath.ec.UUID] || m[post.ec.UUID] {
		t.Errorf("replayed before any outcome: %v", m)
	}

	// The processors' outcomes: the raw-path one came out valid, the POST
	// one failed again.
	outcome(ctx, t, brokers, rawPath.ec.UUID, capsule.ReplayValid, "")
	outcome(ctx, t, brokers, post.ec.UUID, capsule.ReplayInvalid, "still unknown")
	for u, want := range replayedOf() {
		if want != (u == rawPath.ec.UUID) {
			t.Errorf("%s: Replayed %t after the outcomes", u, want)
		}
	}
	// Each record tells what came of its replay, and when.
	errs, err := i.Errors(ctx, ErrorFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range errs {
		var want string
		switch r.UUID {
		case rawPath.ec.UUID:
			want = capsule.ReplayValid + " "
		case post.ec.UUID:
			want = capsule.ReplayInvalid + " still unknown"
		default:
			if r.Replay != nil {
				t.Errorf("%s: never replayed, but Replay = %+v", r.UUID, *r.Replay)
			}
			continue
		}
		switch {
		case r.Replay == nil:
			t.Errorf("%s: no replay outcome, want %q", r.UUID, want)
		case r.Replay.Status+" "+r.Replay.Message != want || r.Replay.Time.IsZero():
			t.Errorf("%s: replay outcome %+v, want %q with its time", r.UUID, *r.Replay, want)
		}
	}

	// Again: the valid one is skipped; the one that failed is replayed.
	res, err = i.Replay(ctx, []string{rawPath.ec.UUID, post.ec.UUID}, ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Replayed != 1 || res.Skipped != 1 || !slices.Equal(res.Reasons, []string{rawPath.ec.UUID + ": already replayed"}) {
		t.Errorf("second Replay = %+v, want 1 replayed, %s already replayed", res, rawPath.ec.UUID)
	}
	if got := readAll(ctx, t, brokers, rawB); len(got) != 1 {
		t.Errorf("after the second Replay %s holds %d records %q, want 1", rawB, len(got), got)
	}
	if got := readAll(ctx, t, brokers, rawA); len(got) != 2 {
		t.Errorf("after the second Replay %s holds %d records %q, want 2", rawA, len(got), got)
	}

	// Forced: replayed although closed, and closed whatever comes of it.
	res, err = i.Replay(ctx, []string{rawPath.ec.UUID, post.ec.UUID}, ReplayOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Replayed != 2 || res.Skipped != 0 || !res.Forced {
		t.Errorf("forced Replay = %+v, want 2 replayed", res)
	}
	if m := replayedOf(); !m[rawPath.ec.UUID] || !m[post.ec.UUID] {
		t.Errorf("after a forced replay: %v, want both replayed", m)
	}

	// Nothing asked, nothing done.
	if res, err := i.Replay(ctx, nil, ReplayOptions{}); err != nil || res.Replayed != 0 || res.Skipped != 0 {
		t.Errorf("Replay(nil) = %+v, %v", res, err)
	}
}

// TestReplayWaitsForOutcomes: a stand-in processor answers each replayed
// record with an outcome; Replay reports them and closes only the valid.
func TestReplayWaitsForOutcomes(t *testing.T) {
	ctx, brokers, i, _, other, rawPath, post := withErrors(t)

	pctx, stop := context.WithCancel(ctx)
	defer stop()
	started := make(chan struct{})
	go func() {
		tc := kafka.TailConfig{Kafka: kafka.Config{Brokers: brokers}, Topics: []string{rawA, rawB}, OnStart: func() { close(started) }}
		_ = kafka.Tail(pctx, tc, func(r kafka.Record) error {
			of, ok := r.HeaderValue(capsule.HeaderReplayOf)
			if !ok {
				t.Errorf("replayed record without %s", capsule.HeaderReplayOf)
				return nil
			}
			status, msg := capsule.ReplayValid, ""
			if string(of) == other.ec.UUID {
				status, msg = capsule.ReplayInvalid, "schema SearchQuery revision 99 not found"
			}
			outcome(pctx, t, brokers, string(of), status, msg)
			return nil
		})
	}()
	// The stand-in must follow the raw topics before the replay produces.
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the stand-in processor did not start")
	}
	res, err := i.ReplayMatching(ctx, ErrorFilter{}, ReplayOptions{Wait: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Replayed != 3 || res.Valid != 2 || len(res.Failed) != 1 || len(res.Pending) != 0 {
		t.Fatalf("ReplayMatching = %+v, want 3 replayed: 2 valid, 1 failed", res)
	}
	if f := res.Failed[0]; f.UUID != other.ec.UUID || !strings.Contains(f.Message, "not found") {
		t.Errorf("failed = %+v, want %s with the reason", f, other.ec.UUID)
	}
	errs, err := i.Errors(ctx, ErrorFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range errs {
		want := r.UUID == rawPath.ec.UUID || r.UUID == post.ec.UUID
		if r.Replayed != want {
			t.Errorf("%s: Replayed %t, want %t", r.UUID, r.Replayed, want)
		}
	}
}

func TestReplayMatching(t *testing.T) {
	ctx, brokers, i, _, other, rawPath, post := withErrors(t)

	steps := []struct {
		name              string
		f                 ErrorFilter
		dryRun            bool
		valid             []testError // outcomes written after the step
		replayed, skipped int
		rawA, rawB        []string // the raw topics afterwards
	}{
		{name: "dry run counts", f: ErrorFilter{}, dryRun: true, replayed: 3, skipped: 1},
		{name: "dry run of one schema", f: ErrorFilter{Schema: "NavigationTiming"}, dryRun: true, replayed: 2, skipped: 1},
		{name: "one schema", f: ErrorFilter{Schema: "SearchQuery"}, valid: []testError{other}, replayed: 1, rawA: []string{other.raw}},
		{name: "dry run after", f: ErrorFilter{}, dryRun: true, replayed: 2, skipped: 2, rawA: []string{other.raw}},
		{name: "the rest", f: ErrorFilter{}, valid: []testError{post}, replayed: 2, skipped: 2, rawA: []string{other.raw, post.raw}, rawB: []string{rawPath.raw}},
		// rawPath had no outcome: it stays replayable.
		{name: "what is not valid yet", f: ErrorFilter{}, valid: []testError{rawPath}, replayed: 1, skipped: 3, rawA: []string{other.raw, post.raw}, rawB: []string{rawPath.raw, rawPath.raw}},
		{name: "nothing left", f: ErrorFilter{}, replayed: 0, skipped: 4, rawA: []string{other.raw, post.raw}, rawB: []string{rawPath.raw, rawPath.raw}},
	}
	for _, s := range steps {
		res, err := i.ReplayMatching(ctx, s.f, ReplayOptions{DryRun: s.dryRun})
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if res.Replayed != s.replayed || res.Skipped != s.skipped || len(res.Reasons) != s.skipped {
			t.Errorf("%s: ReplayMatching(%+v, dryRun %t) = %+v, want %d replayed, %d skipped with reasons", s.name, s.f, s.dryRun, res, s.replayed, s.skipped)
		}
		if got := values(readAll(ctx, t, brokers, rawA)); !slices.Equal(got, s.rawA) {
			t.Errorf("%s: %s holds %q, want %q", s.name, rawA, got, s.rawA)
		}
		if got := values(readAll(ctx, t, brokers, rawB)); !slices.Equal(got, s.rawB) {
			t.Errorf("%s: %s holds %q, want %q", s.name, rawB, got, s.rawB)
		}
		for _, e := range s.valid {
			outcome(ctx, t, brokers, e.ec.UUID, capsule.ReplayValid, "")
		}
	}
}

func TestOverview(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const (
		topic  = "eventlogging_Foo"
		group  = "eventlogging-sink-test"
		n      = 40 // records before the first sample
		m      = 10 // records between the samples
		commit = 25 // records the group commits
	)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic, rawA, rawB, capsule.TopicEventError, "_eventlogging_replayed"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	cl := testClient(t, brokers)
	recs := func(from, to int) []*kgo.Record {
		var out []*kgo.Record
		for k := from; k < to; k++ {
			out = append(out, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, `{"n":%d}`, k)})
		}
		return out
	}
	produce(ctx, t, cl, recs(0, n)...)
	produce(ctx, t, cl, &kgo.Record{Topic: capsule.TopicEventError, Value: []byte(`{}`)}, &kgo.Record{Topic: capsule.TopicEventError, Value: []byte(`{}`)})

	// A consumer group that read everything but committed only the first
	// `commit` records.
	member := testClient(t, brokers, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var consumed []*kgo.Record
	for len(consumed) < n {
		f := member.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records before the deadline", len(consumed), n)
		}
		if err := f.Err0(); err != nil {
			t.Fatal(err)
		}
		consumed = append(consumed, f.Records()...)
	}
	if err := member.CommitRecords(ctx, consumed[:commit]...); err != nil {
		t.Fatal(err)
	}

	i := newInspector(t, brokers)
	i.Sample(ctx)
	produce(ctx, t, cl, recs(n, n+m)...)
	i.Sample(ctx)
	ov, err := i.Overview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ov.Time.IsZero() {
		t.Error("Overview.Time is zero after two samples")
	}

	streams := map[string]StreamStats{}
	var topics []string
	for _, s := range ov.Streams {
		streams[s.Topic] = s
		topics = append(topics, s.Topic)
	}
	if !slices.IsSorted(topics) || slices.Contains(topics, "_eventlogging_replayed") {
		t.Errorf("streams %v: want them sorted, without the internal replay log", topics)
	}
	for _, w := range []struct {
		topic string
		kind  string
		total int64
	}{
		{topic, "schema", n + m},
		{capsule.TopicEventError, "error", 2},
		{rawA, "raw", 0},
		{rawB, "raw", 0},
	} {
		s, ok := streams[w.topic]
		if !ok {
			t.Errorf("no stream %s in %v", w.topic, topics)
			continue
		}
		if s.Kind != w.kind || s.Total != w.total || len(s.Recent) != 1 {
			t.Errorf("stream %s = %+v, want kind %s, total %d, one rate", w.topic, s, w.kind, w.total)
		}
	}
	if s := streams[topic]; s.Rate <= 0 || ov.ValidRate != s.Rate {
		t.Errorf("%s rate %v and valid rate %v: want the same positive rate (%d records between the samples)", topic, s.Rate, ov.ValidRate, m)
	}
	if ov.InvalidRate != 0 {
		t.Errorf("invalid rate %v, want 0 (no error between the samples)", ov.InvalidRate)
	}

	want := GroupStats{Group: group, State: "Stable", Members: 1, Lag: n + m - commit, Topics: []TopicGroupLag{{Topic: topic, Lag: n + m - commit}}}
	if len(ov.Groups) != 1 {
		t.Fatalf("groups %+v, want only %s", ov.Groups, group)
	}
	if g := ov.Groups[0]; g.Group != want.Group || g.State != want.State || g.Members != want.Members || g.Lag != want.Lag || !slices.Equal(g.Topics, want.Topics) {
		t.Errorf("group %+v, want %+v", g, want)
	}
	if !slices.ContainsFunc(ov.Roles, func(r RoleHealth) bool { return r.Role == "sink-test" && r.Healthy }) {
		t.Errorf("roles %+v: want sink-test healthy (the group has a member)", ov.Roles)
	}
}

func TestRead(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "events"), kfake.SeedTopics(1, "empty"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	// Five records per partition, record k of partition p at base+k s.
	cl := testClient(t, brokers)
	for p := range int32(2) {
		for k := range 5 {
			produce(ctx, t, cl, &kgo.Record{Topic: "events", Partition: p, Timestamp: base.Add(time.Duration(k) * time.Second), Value: fmt.Appendf(nil, "p%d-r%d", p, k)})
		}
	}
	offsets := func(p int32, from, to int) []string {
		var out []string
		for k := from; k < to; k++ {
			out = append(out, fmt.Sprintf("%d/%d:p%d-r%d", p, k, p, k))
		}
		return out
	}
	both := func(from, to int) []string { return append(offsets(0, from, to), offsets(1, from, to)...) }

	for _, tc := range []struct {
		name string
		cfg  kafka.ReadConfig
		want []string
	}{
		{"whole topic", kafka.ReadConfig{Topic: "events", AllPartitions: true}, both(0, 5)},
		{"last 2 per partition", kafka.ReadConfig{Topic: "events", AllPartitions: true, LastN: 2}, both(3, 5)},
		{"last n beyond the start", kafka.ReadConfig{Topic: "events", AllPartitions: true, LastN: 50}, both(0, 5)},
		{"since", kafka.ReadConfig{Topic: "events", AllPartitions: true, Since: base.Add(3 * time.Second)}, both(3, 5)},
		{"since between records", kafka.ReadConfig{Topic: "events", AllPartitions: true, Since: base.Add(1500 * time.Millisecond)}, both(2, 5)},
		{"since narrows last n", kafka.ReadConfig{Topic: "events", AllPartitions: true, LastN: 4, Since: base.Add(3 * time.Second)}, both(3, 5)},
		{"last n narrows since", kafka.ReadConfig{Topic: "events", AllPartitions: true, LastN: 1, Since: base.Add(time.Second)}, both(4, 5)},
		{"since after the end", kafka.ReadConfig{Topic: "events", AllPartitions: true, Since: base.Add(time.Hour)}, nil},
		{"one partition", kafka.ReadConfig{Topic: "events", Partition: 1}, offsets(1, 0, 5)},
		{"offset range", kafka.ReadConfig{Topic: "events", Partition: 0, FromOffset: 1, ToOffset: 3}, offsets(0, 1, 3)},
		{"from an offset to the end", kafka.ReadConfig{Topic: "events", Partition: 1, FromOffset: 3}, offsets(1, 3, 5)},
		{"empty topic", kafka.ReadConfig{Topic: "empty", AllPartitions: true}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Kafka = kafka.Config{Brokers: brokers}
			var got []string
			last := map[int32]int64{}
			err := kafka.Read(ctx, tc.cfg, func(r kafka.Record) error {
				if prev, ok := last[r.Partition]; ok && r.Offset <= prev {
					t.Errorf("partition %d: offset %d after %d", r.Partition, r.Offset, prev)
				}
				last[r.Partition] = r.Offset
				got = append(got, fmt.Sprintf("%d/%d:%s", r.Partition, r.Offset, r.Value))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Read(%+v) = %q, want %q", tc.cfg, got, tc.want)
			}
		})
	}

	t.Run("missing topic", func(t *testing.T) {
		err := kafka.Read(ctx, kafka.ReadConfig{Kafka: kafka.Config{Brokers: brokers}, Topic: "missing", AllPartitions: true}, func(r kafka.Record) error {
			t.Errorf("unexpected record %s", r.Value)
			return nil
		})
		if !errors.Is(err, kerr.UnknownTopicOrPartition) || !strings.Contains(err.Error(), "topic missing does not exist") {
			t.Fatalf("Read of a missing topic = %v, want an error wrapping UnknownTopicOrPartition", err)
		}
	})

	t.Run("fn stops", func(t *testing.T) {
		calls := 0
		err := kafka.Read(ctx, kafka.ReadConfig{Kafka: kafka.Config{Brokers: brokers}, Topic: "events", AllPartitions: true}, func(kafka.Record) error {
			calls++
			return fmt.Errorf("enough: %w", kafka.ErrStopTail)
		})
		if err != nil || calls != 1 {
			t.Fatalf("Read stopped by ErrStopTail = %v after %d calls, want nil after 1", err, calls)
		}
		boom := errors.New("boom")
		if err := kafka.Read(ctx, kafka.ReadConfig{Kafka: kafka.Config{Brokers: brokers}, Topic: "events", AllPartitions: true}, func(kafka.Record) error { return boom }); !errors.Is(err, boom) {
			t.Fatalf("Read with a failing fn = %v, want boom", err)
		}
	})

	// Records produced after Read started are not waited for: it returns
	// at the end offsets it saw.
	t.Run("bounded", func(t *testing.T) {
		n := 0
		err := kafka.Read(ctx, kafka.ReadConfig{Kafka: kafka.Config{Brokers: brokers}, Topic: "events", AllPartitions: true}, func(r kafka.Record) error {
			if n++; n == 1 {
				produce(ctx, t, cl, &kgo.Record{Topic: "events", Partition: r.Partition, Value: []byte("late")})
			}
			return nil
		})
		if err != nil || n != 10 {
			t.Fatalf("Read with a record produced meanwhile = %v after %d records, want nil after 10", err, n)
		}
	})
}

// TestHideRawTopics: with HideRawTopics the live tail neither lists nor
// follows the raw topics (their lines carry client IPs); without it, it does.
func TestHideRawTopics(t *testing.T) {
	brokers := cluster(t)
	for _, hide := range []bool{false, true} {
		i, err := New(Config{Kafka: kafka.Config{Brokers: brokers}, RawTopics: []string{rawA, rawB}, HideRawTopics: hide, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		topics, err := i.Topics(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if listed := slices.Contains(topics, rawA) || slices.Contains(topics, rawB); listed == hide {
			t.Errorf("HideRawTopics %t: topics %v", hide, topics)
		}
		if !slices.Contains(topics, capsule.TopicEventError) {
			t.Errorf("HideRawTopics %t: the error topic is not listed: %v", hide, topics)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		err = i.Tail(ctx, rawA, func(TailEvent) error { return nil })
		cancel()
		if hide != errors.Is(err, ErrRawHidden) {
			t.Errorf("HideRawTopics %t: Tail(raw) = %v", hide, err)
		}
		i.Close()
	}
}

// TestExpectedRoles: the roles the configuration expects are in the
// overview before anything consumed or answered — a group nobody joined
// and a health URL that does not answer are down — while a group with a
// member and a URL answering 200 are up; a group found by prefix only is
// shown but not expected.
func TestExpectedRoles(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const topic = "eventlogging_Foo"
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	produce(ctx, t, testClient(t, brokers), &kgo.Record{Topic: topic, Value: []byte(`{}`)})
	// The processors' group has a member; the sinks' groups were never
	// joined; an old group of the prefix has offsets and no member.
	member := testClient(t, brokers, kgo.ConsumerGroup("run-processor"), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for {
		if f := member.PollFetches(ctx); ctx.Err() != nil {
			t.Fatal("the member consumed nothing before the deadline")
		} else if len(f.Records()) > 0 {
			break
		}
	}
	old := testClient(t, brokers, kgo.ConsumerGroup("eventlogging-old"), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	for {
		f := old.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("the old member consumed nothing before the deadline")
		}
		if recs := f.Records(); len(recs) > 0 {
			if err := old.CommitRecords(ctx, recs...); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	old.Close() // leaves the group: Empty, with its offsets

	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer up.Close()
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close() // refuses connections

	i, err := New(Config{
		Kafka:  kafka.Config{Brokers: brokers},
		Health: map[string]string{"registry": up.URL + "/", "intake": down.URL + "/readyz"},
		Expect: []ExpectedGroup{
			{Role: "processor", Group: "run-processor"},
			{Role: "sink-sql", Group: "run-sink-sql"},
			{Role: "sink-files", Group: "run-sink-files"},
		},
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer i.Close()

	ov, err := i.Overview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r := ov.Roles[len(ov.Roles)-1]; r.Role != "sink-files" || r.Healthy || r.Detail != "not sampled yet" {
		t.Errorf("before a sample: %+v, want sink-files down, not sampled yet", r)
	}

	i.Sample(ctx)
	ov, err = i.Overview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		healthy, expected bool
		group, url        string
		detail            string
	}
	wants := map[string]want{
		"intake":     {false, true, "", down.URL + "/readyz", "connection refused"},
		"registry":   {true, true, "", up.URL + "/", "200 OK"},
		"processor":  {true, true, "run-processor", "", "1 members"},
		"sink-sql":   {false, true, "run-sink-sql", "", "no member: group run-sink-sql does not exist"},
		"sink-files": {false, true, "run-sink-files", "", "no member: group run-sink-files does not exist"},
		"old":        {false, false, "eventlogging-old", "", "no member: group eventlogging-old is Empty"},
	}
	var order []string
	for _, r := range ov.Roles {
		order = append(order, r.Role)
		w, ok := wants[r.Role]
		if !ok {
			t.Errorf("unexpected role %+v", r)
			continue
		}
		if r.Healthy != w.healthy || r.Expected != w.expected || r.Group != w.group || r.URL != w.url || !strings.Contains(r.Detail, w.detail) {
			t.Errorf("role %+v, want %+v", r, w)
		}
	}
	if want := []string{"intake", "registry", "processor", "sink-sql", "sink-files", "old"}; !slices.Equal(order, want) {
		t.Errorf("roles in order %v, want %v", order, want)
	}
	var downRoles []string
	for _, r := range ov.Down() {
		downRoles = append(downRoles, r.Role)
	}
	if want := []string{"intake", "sink-sql", "sink-files", "old"}; !slices.Equal(downRoles, want) {
		t.Errorf("Down() = %v, want %v", downRoles, want)
	}
	var groups []string
	for _, g := range ov.Groups {
		groups = append(groups, g.Group+"="+g.State)
	}
	if want := []string{"eventlogging-old=Empty", "run-processor=Stable", "run-sink-files=Dead", "run-sink-sql=Dead"}; !slices.Equal(groups, want) {
		t.Errorf("groups %v, want %v", groups, want)
	}
}
