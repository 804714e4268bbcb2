package cli

import (
	"runtime/debug"
	"testing"
)

// TestSetGCPercent: bench collects at 400 unless GOGC is set;
// the other commands keep the runtime's setting.
func TestSetGCPercent(t *testing.T) {
	orig := debug.SetGCPercent(100)
	defer debug.SetGCPercent(orig)
	for _, tc := range []struct {
		cmd, gogc string
		want      int
	}{
		{"intake", "", 100},
		{"bench", "", gcPercent},
		{"sink", "", 100},
		{"standalone", "", 100},
		{"process", "", 100},
		{"bench", "100", 100},
	} {
		t.Setenv("GOGC", tc.gogc)
		debug.SetGCPercent(100)
		setGCPercent(tc.cmd)
		if got := debug.SetGCPercent(100); got != tc.want {
			t.Errorf("%s with GOGC=%q: GC percent %d, want %d", tc.cmd, tc.gogc, got, tc.want)
		}
	}
}
