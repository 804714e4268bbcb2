package objstore

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/aws/smithy-go"
)

// The fence of a shared store: PutIf. S3 checks the version itself
// (If-Match, If-None-Match); HDFS and Dir have no conditional write, so
// PutIf holds a lock file beside the key, created exclusively (HDFS's
// create without overwrite, flock for Dir), while it compares the content's
// hash and renames the new content over the key.

// lockSuffix ends the hidden lock file PutIf holds beside a key on HDFS:
// ".NAME" + lockSuffix. Neither List nor AbortUploads returns it.
const lockSuffix = ".objstore-lock"

// lockStale is the age after which a lock file is taken to be left by a
// writer that died inside PutIf, and removed. PutIf holds it for a read
// and a small write.
const lockStale = 30 * time.Second

// probeKey returns a key for Check's probe object, its own per call: two
// writers starting at once never write or delete each other's.
func probeKey() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return ProbePrefix + hex.EncodeToString(b[:])
}

// ProbePrefix starts the keys of Check's probe objects: a writer that
// aborts others' unfinished writes leaves these alone (another process
// may be checking the store right now).
const ProbePrefix = "_filesink/probe-"

// contentVersion is the version of an object on HDFS and Dir: a hash of its
// content (manifests carry their writer and a time, so two writes differ).
func contentVersion(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// lockName returns the lock file of the object at p.
func lockName(p string) string {
	return path.Join(path.Dir(p), "."+path.Base(p)+lockSuffix)
}

// preconditionFailed returns PutIf's error for key.
func preconditionFailed(store, key string) error {
	return fmt.Errorf("%s: put %s: %w", store, key, ErrPrecondition)
}

// uploadKey returns the key an unfinished upload's hidden temp file
// (".NAME.HEX" + hdfsTmp, see tmpName) would have created, and whether the
// name has that form.
func uploadKey(tmpKey string) (string, bool) {
	dir, name := path.Split(tmpKey)
	name, ok := strings.CutSuffix(name, hdfsTmp)
	if !ok {
		return "", false
	}
	name, ok = strings.CutPrefix(name, ".")
	if !ok {
		return "", false
	}
	i := strings.LastIndexByte(name, '.')
	if i <= 0 || len(name)-i-1 != 12 {
		return "", false
	}
	if _, err := hex.DecodeString(name[i+1:]); err != nil {
		return "", false
	}
	return dir + name[:i], true
}

// isS3Precondition reports whether err is S3's refusal of a conditional
// write: 412 Precondition Failed, or 409 ConditionalRequestConflict (a
// concurrent conditional write to the same key won).
func isS3Precondition(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) && (ae.ErrorCode() == "PreconditionFailed" || ae.ErrorCode() == "ConditionalRequestConflict") {
		return true
	}
	var re interface{ HTTPStatusCode() int }
	return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusPreconditionFailed
}
