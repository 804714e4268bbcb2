package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestBenchUsage: remote targets are refused without --allow-remote, bad
// flags are usage errors (exit 2), and --help documents every flag.
func TestBenchUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--url", "http://example.org:8080", "--no-follow"}, "not a loopback address"},
		{[]string{"--url", "ftp://127.0.0.1"}, "want http://host:port"},
		{[]string{"--mode", "udp"}, "want beacon, post, hasty or mix"},
		{[]string{"--batch", "5000"}, "--batch 5000"},
		{[]string{"--invalid", "1.5"}, "--invalid 1.5"},
		{[]string{"--events", "200000000"}, "--events 200000000"},
		{[]string{"--duration", "48h"}, "--duration 48h0m0s"},
		{[]string{"--schema-mix", "Generic:0", "--no-follow"}, "weight"},
		{[]string{"--schema-mix", "NoSuchSchema", "--schemas", "../../examples/schemas", "--no-follow"}, `no schema "NoSuchSchema"`},
	} {
		var stdout, stderr bytes.Buffer
		code := Run(append([]string{"bench"}, tc.args...), nil, &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("bench %v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr.String(), tc.want)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := Run([]string{"bench", "--help"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("bench --help: exit %d", code)
	}
	help := stderr.String()
	for _, flag := range []string{"url", "allow-remote", "mode", "batch", "rate", "concurrency", "duration", "events", "schemas",
		"schema-mix", "invalid", "event-size", "seed", "timeout", "no-follow", "follow-timeout", "kafka-brokers", "data-dir",
		"topic-template", "error-topic", "json", "progress"} {
		if !strings.Contains(help, "  --"+flag+" ") && !strings.Contains(help, "  --"+flag+"\n") {
			t.Errorf("--help does not document --%s", flag)
		}
	}
	if !strings.Contains(help, "Examples:") {
		t.Error("--help has no examples")
	}
	if !strings.Contains(usage, "bench") {
		t.Error("the command list does not name bench")
	}
}
