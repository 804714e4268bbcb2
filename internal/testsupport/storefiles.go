package testsupport

import (
	"compress/gzip"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventlogging/eventlogging/internal/objstore"
)

// UploadTree puts every file under dir into the store a target URL names
// (s3://…, hdfs://…), under the same relative keys.
func UploadTree(tb testing.TB, dir, target string) {
	tb.Helper()
	st, err := objstore.Open(tb.Context(), target)
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		return st.PutFile(tb.Context(), filepath.ToSlash(rel), p)
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// DownloadTree copies every object of a target's store whose key does not
// start with one of skip into a new local directory, to check it as a
// local root.
func DownloadTree(tb testing.TB, target string, skip ...string) string {
	tb.Helper()
	st, err := objstore.Open(tb.Context(), target)
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	objs, err := st.List(tb.Context(), "")
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
next:
	for _, o := range objs {
		for _, s := range skip {
			if strings.HasPrefix(o.Key, s) {
				continue next
			}
		}
		p := filepath.Join(dir, filepath.FromSlash(o.Key))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := st.GetFile(tb.Context(), o.Key, p); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

// Gunzip returns the decompressed content of a gzip file.
func Gunzip(tb testing.TB, path string) string {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	zr, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}
