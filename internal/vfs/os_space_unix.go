//go:build linux || darwin || freebsd || dragonfly

package vfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// DiskSpace reads fstatfs(2) of f, an *os.File.
func (osFS) DiskSpace(f File) (avail, size int64, err error) {
	of, ok := f.(*os.File)
	if !ok {
		return 0, 0, fmt.Errorf("vfs: DiskSpace of a %T, not a file OS opened", f)
	}
	var st syscall.Statfs_t
	for {
		err = syscall.Fstatfs(int(of.Fd()), &st)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		return 0, 0, &fs.PathError{Op: "statfs", Path: of.Name(), Err: err}
	}
	bsize := int64(st.Bsize)
	return max(int64(st.Bavail), 0) * bsize, int64(st.Blocks) * bsize, nil
}
