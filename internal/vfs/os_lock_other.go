//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package vfs

import (
	"io"
	"io/fs"
	"os"
)

// Lock opens name. On this platform it takes no lock: the caller must not
// lock one file twice.
func (osFS) Lock(name string, perm fs.FileMode) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}
