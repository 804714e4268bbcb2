//go:build !unix

package objstore

import "sync"

var dirLock sync.Mutex

// lockFile excludes the other users of Dirs in this process (no flock
// here).
func lockFile(string) (func(), error) {
	dirLock.Lock()
	return dirLock.Unlock, nil
}
