package config

import (
	"reflect"
	"strings"
	"testing"
)

// envNames lists every EVENTLOGGING_* override, as applyEnv spells them.
func envNames() []string {
	var names []string
	_ = applyEnv(&Config{}, func(name string) (string, bool) {
		names = append(names, name)
		return "", false
	})
	return names
}

// FuzzParse decodes arbitrary YAML over the defaults, applies one
// environment override and validates, as Load does with a file and the
// environment: an error naming the config or a valid Config, never a
// panic. A Config that validates validates again (Validate has no side
// effects), and parsing the same bytes twice gives the same Config. Seeds:
// testdata/*.yaml and testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	for _, file := range readTestdata(f, "*.yaml", 0) {
		f.Add(file.data, uint8(0), "")
	}
	f.Add([]byte("kafka:\n  brokers: [a:1]\n"), uint8(1), "b:2,c:3")
	f.Add([]byte("{}"), uint8(5), "not a duration")
	f.Add([]byte("intake:\n  canary_events: [{schema: X}]\n"), uint8(9), "99999999999999999999")
	f.Add([]byte("a: &a [*a]\n"), uint8(0), "")
	f.Add([]byte("kafka: {partitions: 1e400}\n"), uint8(0), "")
	names := envNames()
	if len(names) < 10 {
		f.Fatalf("only %d environment overrides found", len(names))
	}
	f.Fuzz(func(t *testing.T, data []byte, envIndex uint8, envValue string) {
		c, err := Parse(data)
		if err == nil {
			env := names[int(envIndex)%len(names)]
			err = applyEnv(&c, func(name string) (string, bool) { return envValue, name == env })
			if err == nil {
				err = c.Validate()
			}
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "config: ") {
				t.Fatalf("error %q does not name the config", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("a valid config fails Validate again: %v", err)
		}
		again, err := Parse(data)
		if err != nil {
			t.Fatalf("second Parse: %v", err)
		}
		env := names[int(envIndex)%len(names)]
		if err := applyEnv(&again, func(name string) (string, bool) { return envValue, name == env }); err != nil {
			t.Fatalf("second applyEnv: %v", err)
		}
		if !reflect.DeepEqual(c, again) {
			t.Fatalf("Parse is not deterministic:\n%+v\n%+v", c, again)
		}
	})
}
