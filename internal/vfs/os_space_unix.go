//go:build linux || darwin || freebsd || dragonfly

package vfs

import (
	"errors"
	"io/fs"
	"syscall"
)

// DiskSpace reads statfs(2) of path.
func (osFS) DiskSpace(path string) (avail, size int64, err error) {
	var st syscall.Statfs_t
	for {
		err = syscall.Statfs(path, &st)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		return 0, 0, &fs.PathError{Op: "statfs", Path: path, Err: err}
	}
	bsize := int64(st.Bsize)
	return max(int64(st.Bavail), 0) * bsize, int64(st.Blocks) * bsize, nil
}
