package objstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/user"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/colinmarc/hdfs/v2"
)

// hdfsTmp marks the hidden temporary files of unfinished writes (a leading
// "." hides them from Hive, Spark and the file sink's own listing).
const hdfsTmp = ".objstore-tmp"

// hdfsStore is a directory of an HDFS namespace. The client has no
// deadlines of its own, so every call runs under opTimeout: a namenode that
// stops answering fails the call, and the next call reconnects.
type hdfsStore struct {
	opts   hdfs.ClientOptions
	root   string // absolute, no trailing slash
	target string

	mu sync.Mutex
	c  *hdfs.Client
}

// opTimeout bounds one HDFS call (an upload counts as one).
const opTimeout = 2 * time.Minute

func openHDFS(u *url.URL) (*hdfsStore, error) {
	if u.Host == "" {
		return nil, fmt.Errorf("target %q: no namenode (hdfs://NAMENODE:PORT/PATH)", u.Redacted())
	}
	q := u.Query()
	for k := range q {
		if k != "user" {
			return nil, fmt.Errorf("target %q: unknown parameter %q (want user)", u.Redacted(), k)
		}
	}
	name := q.Get("user")
	if name == "" {
		name = os.Getenv("HADOOP_USER_NAME")
	}
	if name == "" {
		if cu, err := user.Current(); err == nil {
			name = cu.Username
		}
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "8020")
	}
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	opts := hdfs.ClientOptions{Addresses: []string{host}, User: name, NamenodeDialFunc: d.DialContext, DatanodeDialFunc: d.DialContext}
	root := "/" + strings.Trim(u.Path, "/")
	return &hdfsStore{opts: opts, root: strings.TrimSuffix(root, "/"), target: u.Redacted()}, nil
}

func (h *hdfsStore) String() string { return h.target }

func (h *hdfsStore) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.c == nil {
		return nil
	}
	err := h.c.Close()
	h.c = nil
	return err
}

// do runs fn with a client, under ctx and opTimeout. A call that fails for
// a reason other than the file system's answer, or that times out, drops
// the client so the next call reconnects.
func (h *hdfsStore) do(ctx context.Context, fn func(c *hdfs.Client) error) error {
	h.mu.Lock()
	if h.c == nil {
		c, err := hdfs.NewClient(h.opts)
		if err != nil {
			h.mu.Unlock()
			return fmt.Errorf("%s: cannot reach the namenode: %w", h.target, err)
		}
		h.c = c
	}
	c := h.c
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- fn(c) }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = fmt.Errorf("%s: %w", h.target, ctx.Err())
	}
	if err != nil && !isFSAnswer(err) {
		h.mu.Lock()
		if h.c == c {
			_ = c.Close()
			h.c = nil
		}
		h.mu.Unlock()
	}
	return err
}

// isFSAnswer reports whether err is the file system's answer (not found,
// exists, permission) rather than a broken connection.
func isFSAnswer(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrExist) || errors.Is(err, fs.ErrPermission) || errors.Is(err, ErrPrecondition)
}

func (h *hdfsStore) abs(key string) (string, error) {
	if err := cleanKey(key); err != nil {
		return "", err
	}
	return h.root + "/" + key, nil
}

func tmpName(p string) (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return path.Join(path.Dir(p), "."+path.Base(p)+"."+hex.EncodeToString(b[:])+hdfsTmp), nil
}

// write creates p's parent, writes from r to a hidden temp name and renames
// it over p.
func (h *hdfsStore) write(ctx context.Context, key string, r func() (io.ReadCloser, error)) error {
	p, err := h.abs(key)
	if err != nil {
		return err
	}
	tmp, err := tmpName(p)
	if err != nil {
		return err
	}
	err = h.do(ctx, func(c *hdfs.Client) error {
		if err := c.MkdirAll(path.Dir(p), 0o755); err != nil {
			return err
		}
		src, err := r()
		if err != nil {
			return err
		}
		defer src.Close()
		return writeRename(c, src, tmp, p)
	})
	if err != nil {
		return fmt.Errorf("hdfs put %s: %w", p, err)
	}
	return nil
}

// writeRename writes src to the hidden temp file tmp and renames it over
// p; a failed write removes tmp.
func writeRename(c *hdfs.Client, src io.Reader, tmp, p string) error {
	w, err := c.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, src); err != nil {
		_ = w.Close()
		_ = c.Remove(tmp)
		return err
	}
	if err := closeWriter(w); err != nil {
		_ = c.Remove(tmp)
		return err
	}
	return c.Rename(tmp, p)
}

func (h *hdfsStore) Put(ctx context.Context, key string, b []byte) error {
	return h.write(ctx, key, func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(string(b))), nil })
}

func (h *hdfsStore) PutFile(ctx context.Context, key, p string) error {
	return h.write(ctx, key, func() (io.ReadCloser, error) { return os.Open(p) })
}

// GetVersion implements Store: the version is a hash of the content.
func (h *hdfsStore) GetVersion(ctx context.Context, key string) ([]byte, string, error) {
	b, err := h.Get(ctx, key)
	if err != nil {
		return nil, "", err
	}
	return b, contentVersion(b), nil
}

// PutIf implements Store: under the key's lock file (created exclusively:
// HDFS refuses a create without overwrite of a file that exists), the
// current content's hash is compared with match and the new content is
// written under a hidden name and renamed over the key.
func (h *hdfsStore) PutIf(ctx context.Context, key string, b []byte, match string) (string, error) {
	p, err := h.abs(key)
	if err != nil {
		return "", err
	}
	tmp, err := tmpName(p)
	if err != nil {
		return "", err
	}
	lock := lockName(p)
	err = h.do(ctx, func(c *hdfs.Client) error {
		if err := c.MkdirAll(path.Dir(p), 0o755); err != nil {
			return err
		}
		if err := lockHDFS(ctx, c, lock); err != nil {
			return err
		}
		defer func() { _ = c.Remove(lock) }()
		cur, err := c.ReadFile(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if match != "" {
				return preconditionFailed(h.target, key)
			}
		case err != nil:
			return err
		case match == "" || contentVersion(cur) != match:
			return preconditionFailed(h.target, key)
		}
		return writeRename(c, bytes.NewReader(b), tmp, p)
	})
	if err != nil {
		if errors.Is(err, ErrPrecondition) {
			return "", err
		}
		return "", fmt.Errorf("hdfs put %s: %w", p, err)
	}
	return contentVersion(b), nil
}

// lockHDFS creates the lock file exclusively, waiting while another writer
// holds it, and removing one older than lockStale.
func lockHDFS(ctx context.Context, c *hdfs.Client, lock string) error {
	for {
		w, err := c.Create(lock)
		if err == nil {
			return closeWriter(w)
		}
		if !errors.Is(err, fs.ErrExist) {
			return err
		}
		if fi, err := c.Stat(lock); err == nil && time.Since(fi.ModTime()) > lockStale {
			_ = c.Remove(lock)
			continue
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("lock %s held by another writer: %w", lock, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (h *hdfsStore) Get(ctx context.Context, key string) ([]byte, error) {
	p, err := h.abs(key)
	if err != nil {
		return nil, err
	}
	var b []byte
	err = h.do(ctx, func(c *hdfs.Client) error {
		b, err = c.ReadFile(p)
		return err
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, notExist(key)
	}
	if err != nil {
		return nil, fmt.Errorf("hdfs get %s: %w", p, err)
	}
	return b, nil
}

func (h *hdfsStore) GetFile(ctx context.Context, key, local string) error {
	p, err := h.abs(key)
	if err != nil {
		return err
	}
	err = h.do(ctx, func(c *hdfs.Client) error {
		r, err := c.Open(p)
		if err != nil {
			return err
		}
		defer func() { _ = r.Close() }()
		return writeLocal(local, r)
	})
	if errors.Is(err, fs.ErrNotExist) {
		return notExist(key)
	}
	if err != nil {
		return fmt.Errorf("hdfs get %s: %w", p, err)
	}
	return nil
}

func (h *hdfsStore) Exists(ctx context.Context, key string) (bool, error) {
	p, err := h.abs(key)
	if err != nil {
		return false, err
	}
	err = h.do(ctx, func(c *hdfs.Client) error {
		_, err := c.Stat(p)
		return err
	})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	default:
		return false, fmt.Errorf("hdfs stat %s: %w", p, err)
	}
}

func (h *hdfsStore) Delete(ctx context.Context, key string) error {
	p, err := h.abs(key)
	if err != nil {
		return err
	}
	err = h.do(ctx, func(c *hdfs.Client) error { return c.Remove(p) })
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("hdfs delete %s: %w", p, err)
	}
	return nil
}

// walk lists the files under the root whose key starts with prefix,
// hidden temp files included when tmp is set (and only them).
func (h *hdfsStore) walk(ctx context.Context, prefix string, tmp bool) ([]Object, error) {
	// Walk from the deepest directory the prefix names entirely.
	start := h.root
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		start = h.root + "/" + prefix[:i]
	}
	var out []Object
	err := h.do(ctx, func(c *hdfs.Client) error {
		out = out[:0]
		err := c.Walk(start, func(p string, fi fs.FileInfo, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if fi.IsDir() {
				return nil
			}
			key := strings.TrimPrefix(strings.TrimPrefix(p, h.root), "/")
			if !strings.HasPrefix(key, prefix) || strings.HasSuffix(fi.Name(), hdfsTmp) != tmp || strings.HasSuffix(fi.Name(), lockSuffix) {
				return nil
			}
			out = append(out, Object{Key: key, Size: fi.Size()})
			return nil
		})
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("hdfs list %s: %w", start, err)
	}
	slices.SortFunc(out, func(a, b Object) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

func (h *hdfsStore) List(ctx context.Context, prefix string) ([]Object, error) {
	return h.walk(ctx, prefix, false)
}

func (h *hdfsStore) AbortUploads(ctx context.Context, match func(key string) bool) (int, error) {
	tmps, err := h.walk(ctx, "", true)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, o := range tmps {
		if k, ok := uploadKey(o.Key); !ok || !match(k) {
			continue
		}
		p := h.root + "/" + o.Key
		if err := h.do(ctx, func(c *hdfs.Client) error { return c.Remove(p) }); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return n, fmt.Errorf("hdfs delete %s: %w", p, err)
		}
		n++
	}
	return n, nil
}

func (h *hdfsStore) Check(ctx context.Context) error {
	probe := probeKey()
	err := h.Put(ctx, probe, []byte("probe\n"))
	if err == nil {
		err = h.Delete(ctx, probe)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s: permission denied for user %q (set ?user= or HADOOP_USER_NAME): %w", h.target, h.opts.User, err)
	default:
		return fmt.Errorf("%s: %w", h.target, err)
	}
}

// closeWriter closes an HDFS file, calling Close again while the namenode
// answers that the last block is still being replicated (the datanodes
// acknowledged everything; the Java client retries the same way).
func closeWriter(w *hdfs.FileWriter) error {
	wait := 20 * time.Millisecond
	for deadline := time.Now().Add(30 * time.Second); ; {
		err := w.Close()
		if err == nil || !hdfs.IsErrReplicating(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(wait)
		wait = min(2*wait, time.Second)
	}
}
