//go:build unix

package filesink

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockRoot takes an exclusive, non-blocking lock on the root's lock file.
// The kernel releases it when the process dies.
func lockRoot(p string) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("root is in use by another process (%s is locked)", p)
		}
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	return f, nil
}
