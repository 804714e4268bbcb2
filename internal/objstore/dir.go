package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Dir is a Store in a local directory, with the semantics of the remote
// ones (atomic writes by rename, hidden temp files): the file sink's tests
// use it for the publishing protocol without a server.
type Dir struct {
	root string
}

// NewDir returns the Store rooted at dir, which is created if missing.
func NewDir(dir string) (*Dir, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, err
	}
	return &Dir{root: abs}, nil
}

// String is the file:// URL of the directory.
func (d *Dir) String() string { return "file://" + filepath.ToSlash(d.root) }

// Close does nothing.
func (d *Dir) Close() error { return nil }

func (d *Dir) abs(key string) (string, error) {
	if err := cleanKey(key); err != nil {
		return "", err
	}
	return filepath.Join(d.root, filepath.FromSlash(key)), nil
}

func (d *Dir) write(key string, r io.Reader) error {
	p, err := d.abs(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp, err := tmpName(p)
	if err != nil {
		return err
	}
	if err := writeLocal(tmp, r); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, p)
}

// GetVersion implements Store: the version is a hash of the content.
func (d *Dir) GetVersion(ctx context.Context, key string) ([]byte, string, error) {
	b, err := d.Get(ctx, key)
	if err != nil {
		return nil, "", err
	}
	return b, contentVersion(b), nil
}

// PutIf implements Store: the comparison and the write hold the key's
// lock file (flock, so processes sharing the directory exclude each other
// too).
func (d *Dir) PutIf(ctx context.Context, key string, b []byte, match string) (string, error) {
	p, err := d.abs(key)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(lockName(p))
	if err != nil {
		return "", err
	}
	defer unlock()
	cur, err := d.Get(ctx, key)
	switch {
	case IsNotExist(err):
		if match != "" {
			return "", preconditionFailed(d.String(), key)
		}
	case err != nil:
		return "", err
	case match == "" || contentVersion(cur) != match:
		return "", preconditionFailed(d.String(), key)
	}
	if err := d.Put(ctx, key, b); err != nil {
		return "", err
	}
	return contentVersion(b), nil
}

// Put implements Store.
func (d *Dir) Put(_ context.Context, key string, b []byte) error {
	return d.write(key, strings.NewReader(string(b)))
}

// PutFile implements Store.
func (d *Dir) PutFile(_ context.Context, key, p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	return d.write(key, f)
}

// Get implements Store.
func (d *Dir) Get(_ context.Context, key string) ([]byte, error) {
	p, err := d.abs(key)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, notExist(key)
	}
	return b, err
}

// GetFile implements Store.
func (d *Dir) GetFile(_ context.Context, key, local string) error {
	p, err := d.abs(key)
	if err != nil {
		return err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return notExist(key)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	return writeLocal(local, f)
}

// Exists implements Store.
func (d *Dir) Exists(_ context.Context, key string) (bool, error) {
	p, err := d.abs(key)
	if err != nil {
		return false, err
	}
	_, err = os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// Delete implements Store.
func (d *Dir) Delete(_ context.Context, key string) error {
	p, err := d.abs(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (d *Dir) list(prefix string, tmp bool) ([]Object, error) {
	var out []Object
	err := filepath.WalkDir(d.root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(d.root, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if !strings.HasPrefix(key, prefix) || strings.HasSuffix(key, hdfsTmp) != tmp || strings.HasSuffix(key, lockSuffix) {
			return nil
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		out = append(out, Object{Key: key, Size: fi.Size()})
		return nil
	})
	slices.SortFunc(out, func(a, b Object) int { return strings.Compare(a.Key, b.Key) })
	return out, err
}

// List implements Store.
func (d *Dir) List(_ context.Context, prefix string) ([]Object, error) { return d.list(prefix, false) }

// AbortUploads deletes the hidden temp files of unfinished writes whose
// key match accepts.
func (d *Dir) AbortUploads(_ context.Context, match func(key string) bool) (int, error) {
	tmps, err := d.list("", true)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, o := range tmps {
		if k, ok := uploadKey(o.Key); !ok || !match(k) {
			continue
		}
		if err := os.Remove(filepath.Join(d.root, filepath.FromSlash(o.Key))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return n, err
		}
		n++
	}
	return n, nil
}

// Check writes and deletes a probe file.
func (d *Dir) Check(ctx context.Context) error {
	probe := probeKey()
	if err := d.Put(ctx, probe, []byte("probe\n")); err != nil {
		return fmt.Errorf("%s: %w", d, err)
	}
	return d.Delete(ctx, probe)
}

// writeLocal writes r to the local file p (created or truncated) and
// fsyncs it.
func writeLocal(p string, r io.Reader) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
