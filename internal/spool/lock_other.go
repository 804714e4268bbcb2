//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package spool

import (
	"fmt"
	"os"
	"path/filepath"
)

// lockDir opens <dir>/lock. On this platform it takes no lock: the caller
// must not open one directory twice.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, filePerm)
	if err != nil {
		return nil, fmt.Errorf("spool: lock: %w", err)
	}
	return f, nil
}
