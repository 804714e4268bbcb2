// Package deploy_test checks the deployment files under deploy/ with the
// tools that read them: systemd-analyze for the units, helm for the chart,
// the configuration loader for the examples, hadolint (when installed) for
// the Dockerfile; and the eventlogging binary itself for every command line
// the files start it with.
package deploy_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// requireTool returns the path of a command-line tool, or skips the test
// when it is missing — except under CI=true, where every check must run
// (scripts/test.sh installs the tools).
func requireTool(t *testing.T, name, install string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	msg := fmt.Sprintf("%s not found on PATH: %s", name, install)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// eventloggingBinary builds ./cmd/eventlogging once per test run, as
// deploy/docker/Dockerfile does (static: CGO_ENABLED=0, -trimpath), and
// returns its path.
func eventloggingBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			binErr = err
			return
		}
		if binDir, binErr = os.MkdirTemp("", "eventlogging-deploy-"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "eventlogging")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, goTool, "build", "-trimpath", "-ldflags=-s -w", "-o", binPath, "./cmd/eventlogging")
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./cmd/eventlogging: %w\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// checkArgs runs the binary with a deployment file's arguments and --help:
// the flag parser stops at the first flag it does not know (exit status 2),
// so exit status 0 means that the command exists and takes every flag given.
func checkArgs(t *testing.T, where string, args []string) {
	t.Helper()
	bin := eventloggingBinary(t)
	cmd := exec.CommandContext(t.Context(), bin, append(append([]string{}, args...), "--help")...)
	// The configuration file the arguments name need not exist here.
	cmd.Env = []string{"HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Errorf("%s: eventlogging %s --help: exit status %d (an unknown command or flag):\n%s", where, strings.Join(args, " "), exit.ExitCode(), lastLines(out, 5))
			return
		}
		t.Fatalf("%s: %v", where, err)
	}
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// unsetEnv removes every EVENTLOGGING_* variable for the test (restored
// after it): scripts/test.sh exports EVENTLOGGING_KAFKA_BROKERS and others,
// which the configuration loader would apply over the files under test.
func unsetEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "EVENTLOGGING_") {
			t.Setenv(k, "")
			if err := os.Unsetenv(k); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// parseBytes reads a memory size with the unit suffixes of one tool
// (systemd: K, M, G are powers of 1024; Go's GOMEMLIMIT: KiB, MiB, GiB;
// Kubernetes: Ki, Mi, Gi, and K, M, G as powers of 1000).
func parseBytes(s string, units map[string]int64) (int64, error) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	if i == 0 {
		return 0, fmt.Errorf("%q: not a size", s)
	}
	num, suffix := s, ""
	if i > 0 {
		num, suffix = s[:i], s[i:]
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", s, err)
	}
	mult, ok := units[suffix]
	if !ok {
		return 0, fmt.Errorf("%q: unknown unit %q", s, suffix)
	}
	return n * mult, nil
}

var (
	systemdUnits = map[string]int64{"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
	goUnits      = map[string]int64{"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
	k8sUnits     = map[string]int64{"": 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "K": 1e3, "M": 1e6, "G": 1e9}
)
