package loadgen

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func sampleReport() *Report {
	return &Report{
		RunID: "0a1b2c3d4e", URL: "http://127.0.0.1:8080", Mode: "post", Batch: 50, Concurrency: 32,
		TargetRate: 20000, StoppedBy: "duration", Elapsed: 20.004,
		Schemas:  map[string]int64{"Generic/13": 199_800, "NavigationTiming/7": 200_200},
		Requests: RequestStats{Sent: 8000, PerSecond: 399.92, Status: map[string]int64{"201": 7000, "207": 990, "503": 10}},
		Events: EventStats{Sent: 400_000, Accepted: 399_500, AcceptedPerSecond: 19_971.006, Refused: 500,
			InvalidSent: 19_950, AnsweredInvalid: 19_925, Misjudged: 0},
		IntakeLatency: Latency{Count: 8000, Mean: 1.25, P50: 1.02, P95: 2.5, P99: 4.75, Max: 31.2},
		Follow: &FollowStats{
			Topics:   []string{"eventlogging_Generic", "eventlogging_NavigationTiming", "eventlogging_EventError"},
			Complete: true, Seen: 399_500, Lost: 0, Duplicates: 3, InvalidRouted: 19_925,
			EventsPerSecond: 19_950.5, Latency: Latency{Count: 399_500, Mean: 3.1, P50: 2, P95: 6, P99: 11, Max: 40},
			ReadLatency: Latency{Count: 399_500, Mean: 5.2, P50: 4, P95: 9, P99: 15, Max: 52},
			Wait:        0.25,
		},
		Notes: []string{"schema NavigationTiming/7 has no free string property: its events are not padded to --event-size"},
	}
}

// TestReportGolden: the JSON (the --json contract) and text forms of a
// report, against testdata/report.golden.{json,txt} (go test -update
// rewrites them).
func TestReportGolden(t *testing.T) {
	rep := sampleReport()
	var js, txt bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][]byte{"report.golden.json": js.Bytes(), "report.golden.txt": txt.Bytes()} {
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.MkdirAll("testdata", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test -update writes it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs (go test -update rewrites it):\n got:\n%s\nwant:\n%s", name, got, want)
		}
	}
}

// TestReportJSONShape: the keys scripts read are where they are documented.
func TestReportJSONShape(t *testing.T) {
	var js bytes.Buffer
	if err := sampleReport().WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(js.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	keys := func(v any) []string {
		obj, _ := v.(map[string]any)
		var out []string
		for k := range obj {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	for path, want := range map[string][]string{
		"":                  {"batch", "concurrency", "elapsed_seconds", "events", "follow", "intake_latency_ms", "mode", "notes", "requests", "run_id", "schemas", "stopped_by", "target_rate", "url"},
		"requests":          {"errors", "per_second", "sent", "status"},
		"events":            {"accepted", "accepted_per_second", "answered_invalid", "invalid_sent", "misjudged", "refused", "sent"},
		"intake_latency_ms": {"count", "max", "mean", "p50", "p95", "p99"},
		"follow":            {"complete", "duplicates", "events_per_second", "invalid_routed", "latency_ms", "lost", "read_latency_ms", "seen", "seen_not_accepted", "topics", "unexpected_errors", "unexpected_valid", "wait_seconds"},
	} {
		v := any(m)
		if path != "" {
			v = m[path]
		}
		if got := keys(v); !slices.Equal(got, want) {
			t.Errorf("%q keys:\n got %q\nwant %q", path, got, want)
		}
	}
	rep := sampleReport()
	rep.Follow = nil
	js.Reset()
	_ = rep.WriteJSON(&js)
	m = nil
	_ = json.Unmarshal(js.Bytes(), &m)
	if _, ok := m["follow"]; ok {
		t.Error("--no-follow report has a follow object")
	}
}
