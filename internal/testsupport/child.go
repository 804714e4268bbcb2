package testsupport

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// StartChild starts the test binary again to run only the test named test
// (a child of the calling test, which kills it), with env ("NAME=value")
// added to the environment. The buffer collects the child's output; read
// it only once the child has exited.
func StartChild(t testing.TB, test string, env ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+test+"$", "-test.v")
	// The child's temporary directories go under the parent's: a child
	// killed with SIGKILL cannot remove them, the parent's cleanup does.
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	cmd.Env = append(cmd.Env, env...)
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out // one writer: exec serialises its writes
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out
}

// KillChild kills the started child process of cmd with SIGKILL, as a
// crash would, and waits for it. It fails the test when the child had
// finished on its own before it was killed; label (which round, say)
// starts that message and out is the child's output, shown with it.
func KillChild(t testing.TB, cmd *exec.Cmd, label string, out fmt.Stringer) {
	t.Helper()
	if err := cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Success() {
		t.Fatalf("%s: the child finished before it was killed (%v); make its input bigger:\n%s", label, err, out.String())
	}
}

// WaitChild polls cond every interval (polling, not synchronisation)
// until it holds. When it does not within timeout, it kills the child
// process of cmd, waits for it, and fails the test with msg and the
// child's output out.
func WaitChild(t testing.TB, cmd *exec.Cmd, out fmt.Stringer, timeout, interval time.Duration, msg string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("%s:\n%s", msg, out.String())
		}
		time.Sleep(interval)
	}
}
