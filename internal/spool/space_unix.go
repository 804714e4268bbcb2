//go:build linux || darwin || freebsd || dragonfly

package spool

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// diskSpace returns the bytes available to an unprivileged user on the
// filesystem holding f (an open file or directory) and the filesystem's
// size.
func diskSpace(f *os.File) (avail, size int64, err error) {
	var st syscall.Statfs_t
	for {
		err = syscall.Fstatfs(int(f.Fd()), &st)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		return 0, 0, fmt.Errorf("spool: statfs %s: %w", f.Name(), err)
	}
	bsize := int64(st.Bsize)
	return max(int64(st.Bavail), 0) * bsize, int64(st.Blocks) * bsize, nil
}
