package process

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/schema"
)

// TestReplayAfterSchemaPush is the operator's impatient path at the level
// of the processing function: an event of a missing schema fails and the
// failure is cached; the schema appears; a replay of the event is valid at
// once (the negative cache does not answer for replays), its outcome is
// recorded for the replay log, while an ordinary record of the same
// schema still meets the cached failure until then.
func TestReplayAfterSchemaPush(t *testing.T) {
	dir := t.TempDir()
	res := schema.NewResolver(schema.NewDirSource(dir), schema.ResolverConfig{NegativeTTL: time.Hour})
	p, err := New(res, nil, Config{IPPolicy: IPDrop, ProcessorID: "p1", Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	const format = "%q %{recvFrom}s %{seqId}d %t"
	tf, err := p.Transform([]Input{{Topic: "raw", Format: mustFormat(t, format)}})
	if err != nil {
		t.Fatal(err)
	}
	event := `{"schema":"ButtonClick","revision":1,"wiki":"enwiki","webHost":"en.wikipedia.org","event":{"button":"save","page":"Main_Page"}}`
	line := "?" + url.QueryEscape(event) + "; cp1 7 2026-11-30T11:00:00"
	run := func(replayOf string) []kafka.Message {
		t.Helper()
		r := kafka.Record{Topic: "raw", Offset: 1, Value: []byte(line)}
		if replayOf != "" {
			r.Headers = []kafka.Header{{Key: capsule.HeaderReplayOf, Value: []byte(replayOf)}}
		}
		return tf(t.Context(), []kafka.Record{r}, nil)
	}
	topics := func(ms []kafka.Message) (out []string) {
		for _, m := range ms {
			out = append(out, m.Topic)
		}
		return out
	}

	// Unknown schema: an EventError, remembered for an hour.
	out := run("")
	if len(out) != 1 || out[0].Topic != capsule.TopicEventError {
		t.Fatalf("before the schema exists: outputs to %v, want one EventError", topics(out))
	}
	var ec capsule.ErrorCapsule
	if err := json.Unmarshal(out[0].Value, &ec); err != nil {
		t.Fatal(err)
	}
	errUUID := ec.UUID

	// A replay that fails again records an invalid outcome with the reason.
	out = run(errUUID)
	if len(out) != 2 || out[0].Topic != capsule.TopicEventError || out[1].Topic != capsule.TopicReplayLog {
		t.Fatalf("replay before the push: outputs to %v, want EventError and the replay log", topics(out))
	}
	o := capsule.ParseReplayOutcome(out[1].Value)
	if string(out[1].Key) != errUUID || o.Status != capsule.ReplayInvalid || o.Message == "" || o.Processor != "p1" {
		t.Fatalf("outcome of a failed replay: key %q %+v", out[1].Key, o)
	}

	// The schema is pushed.
	if err := os.MkdirAll(filepath.Join(dir, "ButtonClick"), 0o755); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../examples/schemas/ButtonClick/1.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ButtonClick", "1.json"), doc, 0o644); err != nil {
		t.Fatal(err)
	}

	// An ordinary record still meets the cached failure...
	if out := run(""); len(out) != 1 || out[0].Topic != capsule.TopicEventError {
		t.Fatalf("ordinary record right after the push: outputs to %v, want the cached EventError", topics(out))
	}
	// ...but the replay, in the same instant, is valid and recorded so.
	out = run(errUUID)
	want := []string{"eventlogging_ButtonClick", capsule.TopicValidMixed, capsule.TopicReplayLog}
	if got := topics(out); len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("replay after the push: outputs to %v, want %v", got, want)
	}
	o = capsule.ParseReplayOutcome(out[2].Value)
	if string(out[2].Key) != errUUID || o.Status != capsule.ReplayValid || o.UUID != errUUID || !o.Replayed() {
		t.Fatalf("outcome of a valid replay: key %q %+v (the event keeps the EventError's uuid %s)", out[2].Key, o, errUUID)
	}
	// The replay's fresh resolution cached the schema: ordinary records
	// are valid from now on too.
	if out := run(""); len(out) != 2 || out[0].Topic != "eventlogging_ButtonClick" {
		t.Fatalf("ordinary record after the replay: outputs to %v", topics(out))
	}
}
