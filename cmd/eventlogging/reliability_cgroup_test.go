package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// cpuCap puts the process pid into a cgroup of its own limited to percent
// of one core (cgroup v2 cpu.max, or cgroup v1 cpu.cfs_quota_us), so that
// a test can give a role a known, small capacity on a machine whose other
// roles share the same cores. The cgroup is removed at cleanup. Without
// a writable cgroup filesystem (root is needed) the test skips, or fails
// under CI=true.
func cpuCap(t *testing.T, pid, percent int) {
	t.Helper()
	dir, err := newCPUCgroup(fmt.Sprintf("eventlogging-test-%d-%d", os.Getpid(), pid), percent)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
	}
	if err != nil {
		if dir != "" {
			_ = os.Remove(dir)
		}
		if os.Getenv("CI") == "true" {
			t.Fatalf("cap a process at %d%% of a core with a cgroup (needs root and a writable cgroup filesystem; under CI=true this test must run): %v", percent, err)
		}
		t.Skipf("cannot cap a process's CPU with a cgroup (needs root and a writable cgroup filesystem): %v", err)
	}
	t.Cleanup(func() {
		// Whatever still runs in it moves back to the parent first: a
		// cgroup with members cannot be removed.
		if b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err == nil {
			for _, p := range strings.Fields(string(b)) {
				_ = os.WriteFile(filepath.Join(filepath.Dir(dir), "cgroup.procs"), []byte(p), 0o644)
			}
		}
		if err := os.Remove(dir); err != nil {
			t.Logf("remove cgroup %s: %v", dir, err)
		}
	})
}

// newCPUCgroup creates the cgroup name with a CPU quota of percent of one
// core and returns its directory.
func newCPUCgroup(name string, percent int) (string, error) {
	const period = 100_000 // µs
	quota := period * percent / 100
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil { // v2
		dir := filepath.Join("/sys/fs/cgroup", name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, "cpu.max"), fmt.Appendf(nil, "%d %d", quota, period), 0o644); err != nil {
			return dir, fmt.Errorf("cgroup v2 cpu.max (is the cpu controller enabled in /sys/fs/cgroup/cgroup.subtree_control?): %w", err)
		}
		return dir, nil
	}
	root := "/sys/fs/cgroup/cpu"
	if _, err := os.Stat(filepath.Join(root, "cpu.cfs_quota_us")); err != nil {
		return "", errors.New("no cgroup v2 and no cgroup v1 cpu controller at /sys/fs/cgroup/cpu")
	}
	dir := filepath.Join(root, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "cpu.cfs_period_us"), []byte(strconv.Itoa(period)), 0o644); err != nil {
		return dir, err
	}
	if err := os.WriteFile(filepath.Join(dir, "cpu.cfs_quota_us"), []byte(strconv.Itoa(quota)), 0o644); err != nil {
		return dir, err
	}
	return dir, nil
}
