//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Lock takes an exclusive, non-blocking flock on name.
func (osFS) Lock(name string, perm fs.FileMode) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, perm)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			err = ErrLocked
		}
		return nil, &fs.PathError{Op: "flock", Path: name, Err: err}
	}
	return f, nil
}
