package testsupport

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// MountTmpfs mounts a tmpfs of the given size option ("1m", "2m") on a new
// directory and unmounts it when the test ends. If mounting is not
// permitted (not root, or no CAP_SYS_ADMIN in this container) it skips the
// test, or fails it under CI=true, where these tests must run.
func MountTmpfs(t testing.TB, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mount a %s tmpfs (needs root with CAP_SYS_ADMIN; under CI=true this test must run): %v", size, err)
		}
		t.Skipf("cannot mount a %s tmpfs to fill up (needs root with CAP_SYS_ADMIN): %v", size, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}
