package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventlogging/eventlogging/internal/loadgen"
)

// TestBenchEndToEnd starts `eventlogging standalone` with the example
// schemas and runs `eventlogging bench` against it: 3,000 beacons, 10%
// invalid, then 2,000 events in synchronous batches of 50. Every accepted
// event is found once in its topic, every invalid one in the error topic.
func TestBenchEndToEnd(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	_, base := startStandalone(t, nil, dataDir, "--schemas", "../../examples/schemas", "--streams", "../../examples/streams.yaml")

	for _, tc := range []struct {
		name   string
		args   []string
		events int64
	}{
		{"beacon", []string{"--events", "3000", "--invalid", "0.1"}, 3000},
		{"post", []string{"--mode", "post", "--batch", "50", "--events", "2000", "--invalid", "0.1"}, 2000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"bench", "--url", base, "--data-dir", dataDir, "--schemas", "../../examples/schemas",
				"--concurrency", "8", "--follow-timeout", "90s", "--json"}, tc.args...)
			out := runCLI(t, args...)
			var rep loadgen.Report
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("bench --json printed %q: %v", out, err)
			}
			f := rep.Follow
			if f == nil {
				t.Fatalf("no follow section: %s", out)
			}
			if rep.Events.Sent != tc.events || rep.Events.Accepted != tc.events || rep.Events.Refused != 0 {
				t.Errorf("sent %d, accepted %d, refused %d; want %d accepted", rep.Events.Sent, rep.Events.Accepted, rep.Events.Refused, tc.events)
			}
			if !f.Complete || f.Lost != 0 || f.Duplicates != 0 || f.Seen != tc.events {
				t.Errorf("complete %v, lost %d, duplicates %d, seen %d of %d", f.Complete, f.Lost, f.Duplicates, f.Seen, tc.events)
			}
			// 10% of the events are invalid: with 2,000+ events, at least 5%.
			if rep.Events.InvalidSent < tc.events/20 || f.InvalidRouted != rep.Events.InvalidSent {
				t.Errorf("%d invalid sent, %d routed to the error topic", rep.Events.InvalidSent, f.InvalidRouted)
			}
			if f.UnexpectedErrors != 0 || f.UnexpectedValid != 0 || f.SeenNotAccepted != 0 || rep.Events.Misjudged != 0 {
				t.Errorf("misrouted: %+v, misjudged %d", f, rep.Events.Misjudged)
			}
			if tc.name == "post" && rep.Events.AnsweredInvalid != rep.Events.InvalidSent {
				t.Errorf("answered invalid %d, sent invalid %d", rep.Events.AnsweredInvalid, rep.Events.InvalidSent)
			}
			if f.Latency.Count != tc.events || f.Latency.P99 <= 0 || rep.IntakeLatency.Count != rep.Requests.Sent || rep.StoppedBy != "events" {
				t.Errorf("latencies: end to end %+v, intake %+v (%d requests), stopped by %s", f.Latency, rep.IntakeLatency, rep.Requests.Sent, rep.StoppedBy)
			}
			if len(rep.Schemas) != 7 {
				t.Errorf("schemas sent: %v, want the 7 legacy example schemas", rep.Schemas)
			}
		})
	}
	// The text report, found through the data directory alone (no --url).
	out := runCLI(t, "bench", "--data-dir", dataDir, "--schemas", "../../examples/schemas", "--events", "200", "--schema-mix", "Generic")
	for _, want := range []string{"200 accepted", "0 lost, 0 duplicates", "schemas    Generic/13 200", "request to answer p50", "read back by bench"} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}
}
