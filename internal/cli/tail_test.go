package cli

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestSplitArgs(t *testing.T) {
	fs := newFlagSet("tail", "", &bytes.Buffer{})
	fs.Bool("pretty", false, "")
	fs.Int("count", 0, "")
	cases := []struct {
		args, flags, pos []string
	}{
		{[]string{"a", "b"}, nil, []string{"a", "b"}},
		{[]string{"--count", "2", "a", "--pretty", "b"}, []string{"--count", "2", "--pretty"}, []string{"a", "b"}},
		{[]string{"a", "-count=3", "--pretty=false"}, []string{"-count=3", "--pretty=false"}, []string{"a"}},
		{[]string{"--count", "1", "--", "--pretty", "-"}, []string{"--count", "1"}, []string{"--pretty", "-"}},
		{[]string{"--unknown", "a"}, []string{"--unknown"}, []string{"a"}},
		{[]string{"a", "--count"}, []string{"--count"}, []string{"a"}},
	}
	for _, c := range cases {
		flags, pos := splitArgs(fs, c.args)
		if !slices.Equal(flags, c.flags) || !slices.Equal(pos, c.pos) {
			t.Errorf("splitArgs(%q) = %q, %q; want %q, %q", c.args, flags, pos, c.flags, c.pos)
		}
	}
}

// TestTailRealKafka runs tail against the real Apache Kafka broker.

func TestTailCommandUsage(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"tail"}, "no topic given"},
		{[]string{"tail", "--from-beginning"}, "no topic given"},
		{[]string{"tail", "--count", "-1", "t"}, "--count -1"},
		{[]string{"tail", "--timeout", "-1s", "t"}, "--timeout -1s"},
		{[]string{"tail", "--timeout", "soon", "t"}, "invalid value"},
		{[]string{"tail", "--grep", "(", "t"}, "--grep"},
		{[]string{"tail", "--bogus", "t"}, "unknown flag --bogus"},
		{[]string{"tail", "t", "--count"}, "flag --count needs a value"},
	}
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		code := Run(c.args, nil, &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 containing %q", c.args, code, stderr.String(), c.want)
		}
	}
}

func TestTailHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Run([]string{"tail", "--help"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d", code)
	}
	help := stderr.String()
	for _, want := range []string{"Usage:", "eventlogging tail [flags] TOPIC", "Examples:", "e.g."} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q:\n%s", want, help)
		}
	}
	for _, name := range []string{"brokers", "kafka-brokers", "data-dir", "from-beginning", "pretty", "schema", "grep", "count", "timeout"} {
		if !strings.Contains(help, "  --"+name) {
			t.Errorf("help does not explain --%s", name)
		}
	}
	if !strings.Contains(usage, "tail ") {
		t.Error("the command list does not mention tail")
	}
}
