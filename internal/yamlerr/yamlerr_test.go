package yamlerr

import (
	"strings"
	"testing"
	"time"
)

type inner struct {
	SchemaTitle string        `yaml:"schema_title"`
	MaxAge      time.Duration `yaml:"max_age"`
	Count       int           `yaml:"count"`
	On          bool          `yaml:"on"`
	Names       []string      `yaml:"names"`
}

type doc struct {
	Streams []inner `yaml:"streams"`
	Sink    inner   `yaml:"sink"`
}

// TestDecodeErrors: each mistake is told as the user wrote it: file, line,
// column, the key's path, the nearest known key, what to write instead;
// never a Go type name.
func TestDecodeErrors(t *testing.T) {
	for _, c := range []struct {
		yaml, want string
	}{
		{"streams:\n  - schema_title: a\n  - schema_titel: b\n", `streams.yaml:3:5: streams[1].schema_titel: unknown key "schema_titel" (did you mean "schema_title"?)`},
		{"sink:\n  max_age: 5\n", `streams.yaml:2:12: sink.max_age: 5 is not a duration: write it with a unit, e.g. 5m, 5s or 5h`},
		{"sink:\n  max_age: soon\n", `streams.yaml:2:12: sink.max_age: "soon" is not a duration: write e.g. 5m, 30s or 1h30m`},
		{"sink:\n  count: many\n", `streams.yaml:2:10: sink.count: "many" is not a whole number`},
		{"sink:\n  on: maybe\n", `streams.yaml:2:7: sink.on: "maybe" is not true or false`},
		{"sink:\n  names: {a: b}\n", `streams.yaml:2: want a list here (- item, or [a, b]), not a mapping`},
		{"sinks:\n  count: 1\n", `streams.yaml:1:1: sinks: unknown key "sinks" (did you mean "sink"?)`},
		{"zzz: 1\n", `streams.yaml:1:1: zzz: unknown key "zzz"`},
		{"sink: [\n", `streams.yaml:1: not valid YAML: did not find expected node content`},
	} {
		var d doc
		err := Decode("streams.yaml", []byte(c.yaml), &d)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q:\n got %v\nwant %s", c.yaml, err, c.want)
		}
		if err != nil && (strings.Contains(err.Error(), "time.Duration") || strings.Contains(err.Error(), "yamlerr.")) {
			t.Errorf("%q: a Go type name in %q", c.yaml, err)
		}
	}
	var d doc
	if err := Decode("empty.yaml", nil, &d); err != nil {
		t.Errorf("empty document: %v", err)
	}
}
