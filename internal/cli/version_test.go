package cli

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionString(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "8196215a1b2c3d4e5f60718293a4b5c6d7e8f901"},
		{Key: "vcs.time", Value: "2026-12-01T19:40:40Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	for _, c := range []struct {
		ld   string
		bi   *debug.BuildInfo
		want string
	}{
		{"dev", bi, "eventlogging dev (commit 8196215a1b2c+dirty, 2026-12-01T19:40:40Z) go1.26.8"},
		{"v1.2.0", bi, "eventlogging v1.2.0 (commit 8196215a1b2c+dirty, 2026-12-01T19:40:40Z) go1.26.8"},
		{"dev", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.0"}}, "eventlogging v0.3.0 go1.26.8"},
		{"dev", nil, "eventlogging dev"},
	} {
		if got := versionString(c.ld, c.bi); got != c.want {
			t.Errorf("versionString(%q) = %q, want %q", c.ld, got, c.want)
		}
	}
	// The test binary itself has build information with a Go version.
	if got := versionString(Version, readBuildInfo()); !strings.Contains(got, "go1.") {
		t.Errorf("version of this binary: %q", got)
	}
}
