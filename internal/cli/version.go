package cli

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// readBuildInfo is the binary's build information; nil when absent.
func readBuildInfo() *debug.BuildInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return bi
}

// versionString is what `eventlogging version` prints: the version (set
// with -ldflags "-X main.version=…", else the module version), the VCS
// commit and time the binary was built from (with "+dirty" for a modified
// work tree) and the Go version, e.g.
//
//	eventlogging v1.2.0 (commit 8196215a1b2c, 2026-12-01T19:40:40Z) go1.26.8
func versionString(ldflagsVersion string, bi *debug.BuildInfo) string {
	v := ldflagsVersion
	if bi == nil {
		return "eventlogging " + v
	}
	if v == "" || v == "dev" {
		if mv := bi.Main.Version; mv != "" && mv != "(devel)" {
			v = mv
		} else {
			v = "dev"
		}
	}
	var rev, when string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	var parts []string
	if rev != "" {
		c := "commit " + rev[:min(12, len(rev))]
		if dirty {
			c += "+dirty"
		}
		parts = append(parts, c)
	}
	if when != "" {
		parts = append(parts, when)
	}
	out := "eventlogging " + v
	if len(parts) > 0 {
		out += " (" + strings.Join(parts, ", ") + ")"
	}
	return fmt.Sprintf("%s %s", out, bi.GoVersion)
}
