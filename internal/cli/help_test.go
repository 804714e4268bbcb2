package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestStandaloneHelp: a newcomer learns from --help alone that Event
// Platform events need --streams, what the schema folder holds, and how to
// reload.
func TestStandaloneHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Run([]string{"standalone", "--help"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("standalone --help: exit %d\n%s", code, stderr.String())
	}
	help := stderr.String() + stdout.String()
	for _, want := range []string{
		"--streams FILE", "stream not configured", // Event Platform events need their stream
		"<Name>/<revision>.json", "jsonschema/<title>/<version>", // both schema layouts
		"A registered version never changes", // what to do after editing a schema
		"SIGHUP", "-watch",
		"the dashboard at /dashboard/ (and /)",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("standalone --help lacks %q", want)
		}
	}
}
