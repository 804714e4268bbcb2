//go:build unix

package objstore

import (
	"os"
	"syscall"
)

// lockFile takes the lock file p, created if missing (flock: it excludes
// other processes, and other opens in this one).
func lockFile(p string) (func(), error) {
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}
