//go:build !(linux || darwin || freebsd || dragonfly)

package vfs

import "errors"

// DiskSpace returns errors.ErrUnsupported: this platform has no statfs.
func (osFS) DiskSpace(File) (avail, size int64, err error) {
	return 0, 0, errors.ErrUnsupported
}
