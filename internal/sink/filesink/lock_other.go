//go:build !unix

package filesink

import "os"

// lockRoot opens the lock file; without flock nothing stops a second
// process from using the root.
func lockRoot(p string) (*os.File, error) {
	return os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
}
