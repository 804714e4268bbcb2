package testsupport

import (
	"testing"
	"time"
)

// WaitFor polls cond every 100 ms until it holds, and fails the test when
// it does not within timeout.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond) // polling interval, not synchronisation
	}
}
