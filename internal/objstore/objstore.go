// Package objstore is the distributed storage the file sink publishes to
// when its target is not a local directory: S3-compatible object stores
// (s3://) and HDFS (hdfs://), behind one small interface, plus a local
// directory implementation (Dir) with the same semantics for tests.
//
// Keys are slash-separated and relative to the target URL's path (its
// prefix). Every write is atomic for readers: an object is absent or whole
// (S3: a single PUT or a completed multipart upload; HDFS: written under a
// hidden temporary name in the same directory, then renamed).
package objstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"
)

// Object is one stored object.
type Object struct {
	Key  string // relative to the store's prefix
	Size int64
}

// Store is a target the file sink publishes to. Methods are safe for
// concurrent use.
type Store interface {
	// Put stores b under key, replacing any object there atomically.
	Put(ctx context.Context, key string, b []byte) error
	// PutFile uploads the local file at path under key, atomically: a
	// reader never sees part of it. Uploading the same file twice is
	// harmless (the same content replaces itself).
	PutFile(ctx context.Context, key, path string) error
	// Get returns an object's content; an error wrapping fs.ErrNotExist
	// when there is none.
	Get(ctx context.Context, key string) ([]byte, error)
	// GetFile downloads an object into the local file path (created or
	// truncated).
	GetFile(ctx context.Context, key, path string) error
	// Exists reports whether key exists.
	Exists(ctx context.Context, key string) (bool, error)
	// Delete removes key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// List returns every object whose key starts with prefix, sorted by
	// key. Hidden temporary objects of unfinished writes are not listed.
	List(ctx context.Context, prefix string) ([]Object, error)
	// GetVersion returns an object's content and its version, an opaque
	// token for PutIf (S3: the ETag; HDFS and Dir: a hash of the content),
	// the content being that version's even while another writer puts
	// the object; an error wrapping ErrNotExist when there is none.
	GetVersion(ctx context.Context, key string) (b []byte, version string, err error)
	// PutIf stores b under key only if the object is still at version
	// match ("": only if there is no object), the check and the write one
	// atomic step for every writer that uses PutIf on that key, and returns
	// the new version. When the object changed it returns an error
	// wrapping ErrPrecondition and writes nothing. It is the fence of a
	// store shared by several writers (S3: PutObject with If-Match or
	// If-None-Match; HDFS and Dir: under a lock file created exclusively).
	PutIf(ctx context.Context, key string, b []byte, match string) (version string, err error)
	// AbortUploads cancels the unfinished uploads under the store's
	// prefix whose key match accepts (S3 multipart uploads, HDFS hidden
	// temp files; match gets the key the upload would have created) and
	// returns how many. A writer aborts only uploads it owns: those of the
	// keys of partitions it was just given, whose previous writer is
	// fenced off.
	AbortUploads(ctx context.Context, match func(key string) bool) (int, error)
	// Check verifies at start-up that the store is reachable with the
	// configured credentials and that its bucket or directory can be
	// written, with an error an operator can act on.
	Check(ctx context.Context) error
	// String is the target URL without credentials.
	String() string
	// Close releases connections.
	Close() error
}

// ErrNotExist is wrapped by Get and GetFile for a missing key.
var ErrNotExist = fs.ErrNotExist

// ErrPrecondition is wrapped by PutIf's error when the object is not at
// the version it was given: another writer changed it.
var ErrPrecondition = errors.New("the object changed since it was read (another writer)")

// IsRemote reports whether target names a distributed store (s3:// or
// hdfs://) rather than a local directory (a path or file://).
func IsRemote(target string) bool {
	s, _, ok := strings.Cut(target, "://")
	if !ok {
		return false
	}
	s = strings.ToLower(s)
	return s == "s3" || s == "hdfs"
}

// LocalPath returns the directory a local target names: the path itself,
// or the path of a file:// URL.
func LocalPath(target string) (string, error) {
	if !strings.Contains(target, "://") {
		return target, nil
	}
	u, err := url.Parse(target)
	if err != nil {
		return "", fmt.Errorf("target %q: %w", Redact(target), err)
	}
	if !strings.EqualFold(u.Scheme, "file") {
		return "", fmt.Errorf("target %q: unknown scheme %q (want a local path, file://, s3:// or hdfs://)", Redact(target), u.Scheme)
	}
	if u.Host != "" && u.Host != "localhost" {
		return "", fmt.Errorf("target %q: a file:// URL names no host (file:///path)", Redact(target))
	}
	if u.Path == "" {
		return "", fmt.Errorf("target %q: no path", Redact(target))
	}
	return u.Path, nil
}

// Open connects to the store a target URL names:
//
//	s3://BUCKET/PREFIX?endpoint=URL&region=R&use_path_style=true
//	hdfs://NAMENODE:PORT/PATH?user=NAME
//	file:///PATH  (Dir; for tests)
//
// S3 credentials come from the AWS SDK's default chain (AWS_ACCESS_KEY_ID
// and AWS_SECRET_ACCESS_KEY, the shared config and credentials files and
// AWS_PROFILE, web identity, or the instance role), never from the URL. The
// connection is not checked: call Check.
func Open(ctx context.Context, target string) (Store, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("target %q: %w", Redact(target), err)
	}
	if u.User != nil {
		return nil, fmt.Errorf("target %q: credentials do not belong in the URL (S3: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or a profile; HDFS: ?user=)", Redact(target))
	}
	switch strings.ToLower(u.Scheme) {
	case "s3":
		return openS3(ctx, u)
	case "hdfs":
		return openHDFS(u)
	case "file":
		p, err := LocalPath(target)
		if err != nil {
			return nil, err
		}
		return NewDir(p)
	case "":
		return nil, fmt.Errorf("target %q: not a URL (want s3://, hdfs:// or file://)", Redact(target))
	default:
		return nil, fmt.Errorf("target %q: unknown scheme %q (want a local path, file://, s3:// or hdfs://)", Redact(target), u.Scheme)
	}
}

// Redact returns a URL with any user information removed, for messages.
func Redact(target string) string {
	u, err := url.Parse(target)
	if err != nil || u.User == nil {
		if i := strings.Index(target, "@"); i >= 0 && strings.Contains(target[:i], "://") {
			return target[:strings.Index(target, "://")+3] + "REDACTED@" + target[i+1:]
		}
		return target
	}
	u.User = url.User("REDACTED")
	return u.String()
}

// cleanKey checks a key: relative, slash-separated, no "." or ".."
// segments.
func cleanKey(key string) error {
	if key == "" || strings.HasPrefix(key, "/") || strings.HasSuffix(key, "/") {
		return fmt.Errorf("objstore: bad key %q", key)
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("objstore: bad key %q", key)
		}
	}
	return nil
}

// notExist wraps ErrNotExist for key.
func notExist(key string) error {
	return fmt.Errorf("objstore: %s: %w", key, ErrNotExist)
}

// IsNotExist reports whether err means a missing object.
func IsNotExist(err error) bool { return errors.Is(err, ErrNotExist) }
