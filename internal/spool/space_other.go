//go:build !(linux || darwin || freebsd || dragonfly)

package spool

import (
	"errors"
	"os"
)

// diskSpace returns errors.ErrUnsupported: on this platform the spool does
// not check the filesystem's free space (Config.MinFreeBytes).
func diskSpace(*os.File) (avail, size int64, err error) {
	return 0, 0, errors.ErrUnsupported
}
