package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// impls returns each FS with a directory of its own to test in.
func impls(t *testing.T) map[string]struct {
	fsys FS
	dir  string
} {
	return map[string]struct {
		fsys FS
		dir  string
	}{
		"OS":  {OS, t.TempDir()},
		"Mem": {NewStrictMem(), "/tmp/test"},
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, fsys FS, name, data string) {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
	must(t, err)
	defer f.Close()
	if _, err := f.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, fsys FS, name string) string {
	t.Helper()
	b, err := ReadFile(fsys, name)
	must(t, err)
	return string(b)
}

func names(t *testing.T, fsys FS, dir string) []string {
	t.Helper()
	entries, err := fsys.ReadDir(dir)
	must(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// TestSemantics runs the operations the spool uses on both file systems,
// so that Mem answers as the operating system does.
func TestSemantics(t *testing.T) {
	for name, impl := range impls(t) {
		t.Run(name, func(t *testing.T) {
			fsys, dir := impl.fsys, impl.dir
			must(t, fsys.MkdirAll(filepath.Join(dir, "a", "b"), 0o750))
			must(t, fsys.MkdirAll(dir, 0o750)) // exists: fine
			must(t, fsys.Mkdir(filepath.Join(dir, "a", "c"), 0o750))
			if err := fsys.Mkdir(filepath.Join(dir, "a", "c"), 0o750); !errors.Is(err, fs.ErrExist) {
				t.Fatalf("Mkdir of an existing directory: %v, want ErrExist", err)
			}
			if err := fsys.Mkdir(filepath.Join(dir, "x", "y"), 0o750); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("Mkdir below a missing directory: %v, want ErrNotExist", err)
			}
			if fi, err := fsys.Stat(filepath.Join(dir, "a", "c")); err != nil || !fi.IsDir() {
				t.Fatalf("Stat after Mkdir: %v, %v", fi, err)
			}
			fi, err := fsys.Stat(filepath.Join(dir, "a"))
			if err != nil || !fi.IsDir() || fi.Name() != "a" {
				t.Fatalf("Stat of a directory: %v, %v", fi, err)
			}

			p := filepath.Join(dir, "f")
			if _, err := fsys.OpenFile(p, os.O_RDONLY, 0); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("open of a missing file: %v, want ErrNotExist", err)
			}
			if _, err := fsys.Stat(p); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("Stat of a missing file: %v, want ErrNotExist", err)
			}
			f, err := fsys.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640)
			must(t, err)
			if _, err := fsys.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640); !errors.Is(err, fs.ErrExist) {
				t.Fatalf("O_EXCL of an existing file: %v, want ErrExist", err)
			}
			if _, err := f.WriteAt([]byte("world"), 6); err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write([]byte("hello ")); err != nil { // at offset 0
				t.Fatal(err)
			}
			must(t, f.Sync())
			buf := make([]byte, 8)
			if n, err := f.ReadAt(buf, 6); n != 5 || !errors.Is(err, io.EOF) || string(buf[:n]) != "world" {
				t.Fatalf("ReadAt past the end: %d %q %v", n, buf[:n], err)
			}
			if n, err := f.Read(buf); n != 5 || err != nil || string(buf[:n]) != "world" { // from offset 6
				t.Fatalf("Read: %d %q %v", n, buf[:n], err)
			}
			if n, err := f.Read(buf); n != 0 || !errors.Is(err, io.EOF) {
				t.Fatalf("Read at the end: %d %v", n, err)
			}
			must(t, f.Truncate(5))
			if fi, err := f.Stat(); err != nil || fi.Size() != 5 || !fi.Mode().IsRegular() || fi.Name() != "f" {
				t.Fatalf("Stat after Truncate(5): %v, %v", fi, err)
			}
			must(t, f.Truncate(7))
			if got := readFile(t, fsys, p); got != "hello\x00\x00" {
				t.Fatalf("after Truncate(5), Truncate(7): %q", got)
			}
			must(t, f.Close())
			if err := f.Close(); err == nil {
				t.Fatal("second Close: no error")
			}

			ro, err := fsys.OpenFile(p, os.O_RDONLY, 0)
			must(t, err)
			if _, err := ro.Write([]byte("x")); err == nil {
				t.Fatal("Write to a read-only file: no error")
			}
			ro.Close()

			writeFile(t, fsys, filepath.Join(dir, "g"), "gee")
			must(t, fsys.Rename(filepath.Join(dir, "g"), p)) // replaces f
			if got := readFile(t, fsys, p); got != "gee" {
				t.Fatalf("after rename over it: %q", got)
			}
			if err := fsys.Rename(filepath.Join(dir, "g"), p); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("rename of a missing file: %v, want ErrNotExist", err)
			}
			writeFile(t, fsys, filepath.Join(dir, "e"), "")
			if got, want := names(t, fsys, dir), []string{"a", "e", "f"}; !slices.Equal(got, want) {
				t.Fatalf("ReadDir: %v, want %v", got, want)
			}
			entries, err := fsys.ReadDir(dir)
			must(t, err)
			if !entries[0].IsDir() || !entries[1].Type().IsRegular() {
				t.Fatalf("entry types: %v %v", entries[0].Type(), entries[1].Type())
			}

			d, err := fsys.OpenFile(dir, os.O_RDONLY, 0)
			must(t, err)
			must(t, d.Sync())
			d.Close()

			if err := fsys.Remove(filepath.Join(dir, "a")); err == nil {
				t.Fatal("Remove of a non-empty directory: no error")
			}
			must(t, fsys.Remove(filepath.Join(dir, "e")))
			if err := fsys.Remove(filepath.Join(dir, "e")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("second Remove: %v, want ErrNotExist", err)
			}
			if err := fsys.MkdirAll(filepath.Join(p, "x"), 0o750); err == nil {
				t.Fatal("MkdirAll below a file: no error")
			}

			d, err = fsys.OpenFile(dir, os.O_RDONLY, 0)
			must(t, err)
			defer d.Close()
			avail, size, err := fsys.DiskSpace(d)
			switch {
			case errors.Is(err, errors.ErrUnsupported):
			case err != nil:
				t.Fatal(err)
			case size <= 0 || avail < 0 || avail > size:
				t.Fatalf("DiskSpace: avail %d, size %d", avail, size)
			}
		})
	}
}

func TestLock(t *testing.T) {
	for name, impl := range impls(t) {
		t.Run(name, func(t *testing.T) {
			fsys, dir := impl.fsys, impl.dir
			must(t, fsys.MkdirAll(dir, 0o750))
			p := filepath.Join(dir, "lock")
			l, err := fsys.Lock(p, 0o640)
			must(t, err)
			if _, err := fsys.Stat(p); err != nil {
				t.Fatalf("Lock did not create the file: %v", err)
			}
			if l2, err := fsys.Lock(p, 0o640); !errors.Is(err, ErrLocked) {
				if err == nil {
					l2.Close()
				}
				if name == "OS" && errors.Is(err, errors.ErrUnsupported) {
					t.Skip("no flock")
				}
				t.Fatalf("second Lock: %v, want ErrLocked", err)
			}
			must(t, l.Close())
			l, err = fsys.Lock(p, 0o640)
			must(t, err)
			l.Close()
		})
	}
}

// TestMemCrash: a crash keeps a file's data as of its last Sync, and a
// directory's entries as of the directory's last Sync.
func TestMemCrash(t *testing.T) {
	const dir = "/d"
	file := filepath.Join(dir, "f")
	setup := func(t *testing.T) *Mem {
		m := NewStrictMem()
		must(t, m.MkdirAll(dir, 0o750))
		syncDir(t, m, "/")
		return m
	}
	tests := []struct {
		name  string
		steps func(t *testing.T, m *Mem)
		want  map[string]string // file → content after the crash; absent: no file
	}{
		{"write, no sync", func(t *testing.T, m *Mem) {
			writeFile(t, m, file, "lost")
		}, map[string]string{}},
		{"write, file sync, no directory sync", func(t *testing.T, m *Mem) {
			writeSync(t, m, file, "lost too")
		}, map[string]string{}},
		{"write, directory sync, no file sync", func(t *testing.T, m *Mem) {
			writeFile(t, m, file, "data lost")
			syncDir(t, m, dir)
		}, map[string]string{"f": ""}},
		{"write, both synced", func(t *testing.T, m *Mem) {
			writeSync(t, m, file, "kept")
			syncDir(t, m, dir)
		}, map[string]string{"f": "kept"}},
		{"synced, then more written", func(t *testing.T, m *Mem) {
			writeSync(t, m, file, "kept")
			syncDir(t, m, dir)
			f, err := m.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
			must(t, err)
			f.Write([]byte(" and lost"))
			f.Close()
		}, map[string]string{"f": "kept"}},
		{"synced, then truncated", func(t *testing.T, m *Mem) {
			writeSync(t, m, file, "kept")
			syncDir(t, m, dir)
			f, err := m.OpenFile(file, os.O_WRONLY, 0)
			must(t, err)
			must(t, f.Truncate(1))
			f.Close()
		}, map[string]string{"f": "kept"}},
		{"rename, no directory sync", func(t *testing.T, m *Mem) {
			writeSync(t, m, file, "old")
			syncDir(t, m, dir)
			writeSync(t, m, file+".tmp", "new")
			must(t, m.Rename(file+".tmp", file))
		}, map[string]string{"f": "old"}},
		{"rename, directory synced", func(t *testing.T, m *Mem) {
			writeSync(t, m, file, "old")
			syncDir(t, m, dir)
			writeSync(t, m, file+".tmp", "new")
			must(t, m.Rename(file+".tmp", file))
			syncDir(t, m, dir)
		}, map[string]string{"f": "new"}},
		{"rename of a synced entry, no directory sync", func(t *testing.T, m *Mem) {
			writeSync(t, m, file+".tmp", "new")
			syncDir(t, m, dir)
			must(t, m.Rename(file+".tmp", file))
		}, map[string]string{"f.tmp": "new"}},
		{"remove, no directory sync", func(t *testing.T, m *Mem) {
			writeSync(t, m, file, "back")
			syncDir(t, m, dir)
			must(t, m.Remove(file))
		}, map[string]string{"f": "back"}},
		{"remove, directory synced", func(t *testing.T, m *Mem) {
			writeSync(t, m, file, "gone")
			syncDir(t, m, dir)
			must(t, m.Remove(file))
			syncDir(t, m, dir)
		}, map[string]string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := setup(t)
			tc.steps(t, m)
			m.Crash()
			got := map[string]string{}
			for _, n := range names(t, m, dir) {
				got[n] = readFile(t, m, filepath.Join(dir, n))
			}
			if len(got) != len(tc.want) {
				t.Fatalf("after the crash %q, want %q", got, tc.want)
			}
			for n, want := range tc.want {
				if got[n] != want {
					t.Fatalf("after the crash %q, want %q", got, tc.want)
				}
			}
		})
	}
}

// TestMemCrashLosesNewDirectory: a directory MkdirAll made is an entry of
// its parent, lost unless the parent was synced.
func TestMemCrashLosesNewDirectory(t *testing.T) {
	m := NewStrictMem()
	must(t, m.MkdirAll("/a/b", 0o750))
	writeSync(t, m, "/a/b/f", "x")
	syncDir(t, m, "/a/b")
	syncDir(t, m, "/a")
	m.Crash()
	if _, err := m.Stat("/a"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("/a after the crash: %v, want ErrNotExist", err)
	}

	must(t, m.MkdirAll("/a/b", 0o750))
	writeSync(t, m, "/a/b/f", "x")
	for _, d := range []string{"/a/b", "/a", "/"} {
		syncDir(t, m, d)
	}
	m.Crash()
	if got := readFile(t, m, "/a/b/f"); got != "x" {
		t.Fatalf("/a/b/f after the crash: %q", got)
	}
}

// TestMemCrashAfter: the operation at the crash point fails without effect,
// and so does everything after it until Crash, which also invalidates the
// files opened before and releases locks.
func TestMemCrashAfter(t *testing.T) {
	m := NewStrictMem()
	must(t, m.MkdirAll("/d", 0o750))
	l, err := m.Lock("/d/lock", 0o640)
	must(t, err)
	f, err := m.OpenFile("/d/f", os.O_RDWR|os.O_CREATE, 0o640)
	must(t, err)
	if err := m.Mkdir("/d", 0o750); !errors.Is(err, fs.ErrExist) { // changes nothing: not counted
		t.Fatalf("Mkdir of an existing directory: %v", err)
	}
	if n := m.Ops(); n != 3 {
		t.Fatalf("Ops() = %d after MkdirAll, Lock, a create and a Mkdir of an existing directory, want 3", n)
	}
	m.CrashAfter(1)
	if _, err := f.Write([]byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); !errors.Is(err, ErrCrashed) {
		t.Fatalf("Sync at the crash point: %v, want ErrCrashed", err)
	}
	if got, want := m.Crashed(), "sync /d/f"; got != want {
		t.Fatalf("Crashed() = %q, want %q", got, want)
	}
	if _, err := f.ReadAt(make([]byte, 1), 0); !errors.Is(err, ErrCrashed) {
		t.Fatalf("ReadAt after the crash point: %v, want ErrCrashed", err)
	}
	if _, err := m.ReadDir("/d"); !errors.Is(err, ErrCrashed) {
		t.Fatalf("ReadDir after the crash point: %v, want ErrCrashed", err)
	}
	if err := m.Rename("/d/f", "/d/g"); !errors.Is(err, ErrCrashed) {
		t.Fatalf("Rename after the crash point: %v, want ErrCrashed", err)
	}
	if n := m.Ops(); n != 4 {
		t.Fatalf("Ops() = %d, want 4", n)
	}

	m.Crash()
	if m.Crashed() != "" {
		t.Fatalf("Crashed() = %q after Crash", m.Crashed())
	}
	if _, err := f.Write([]byte("b")); !errors.Is(err, ErrCrashed) {
		t.Fatalf("Write to a file opened before the crash: %v, want ErrCrashed", err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("Close of a file opened before the crash: %v", err)
	}
	if _, err := m.Stat("/d/f"); !errors.Is(err, fs.ErrNotExist) { // never synced
		t.Fatalf("Stat after the crash: %v", err)
	}
	must(t, m.MkdirAll("/d", 0o750))
	l2, err := m.Lock("/d/lock", 0o640)
	if err != nil {
		t.Fatalf("Lock after the crash: %v", err)
	}
	l.Close() // the old lock's Close does not release the new one
	if _, err := m.Lock("/d/lock", 0o640); !errors.Is(err, ErrLocked) {
		t.Fatalf("Lock held since the crash: %v, want ErrLocked", err)
	}
	l2.Close()
}

func writeSync(t *testing.T, m *Mem, name, data string) {
	t.Helper()
	f, err := m.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
	must(t, err)
	defer f.Close()
	if _, err := f.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	must(t, f.Sync())
}

func syncDir(t *testing.T, m *Mem, dir string) {
	t.Helper()
	d, err := m.OpenFile(dir, os.O_RDONLY, 0)
	must(t, err)
	defer d.Close()
	must(t, d.Sync())
}

// TestMemCrashKeeping: the keep function decides what a file whose data
// changed since its last Sync holds; directory entries stay strict.
func TestMemCrashKeeping(t *testing.T) {
	m := NewStrictMem()
	must(t, m.MkdirAll("/d", 0o750))
	syncDir(t, m, "/")
	writeSync(t, m, "/d/f", "synced")
	writeSync(t, m, "/d/same", "same")
	syncDir(t, m, "/d")
	writeFile(t, m, "/d/new", "entry not synced")
	f, err := m.OpenFile("/d/f", os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	if _, err := f.Write([]byte(" and not")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var calls []string
	m.CrashKeeping(func(path string, synced, written []byte) []byte {
		calls = append(calls, path)
		if string(synced) != "synced" || string(written) != "synced and not" {
			t.Errorf("keep(%q, %q, %q)", path, synced, written)
		}
		return written[:len(synced)+4]
	})
	if !slices.Equal(calls, []string{"/d/f"}) {
		t.Fatalf("keep called for %q, want only /d/f", calls)
	}
	if got := names(t, m, "/d"); !slices.Equal(got, []string{"f", "same"}) {
		t.Fatalf("after the crash: %v", got)
	}
	if got := readFile(t, m, "/d/f"); got != "synced and" {
		t.Fatalf("/d/f after the crash: %q", got)
	}
	m.Crash() // what keep returned is durable
	if got := readFile(t, m, "/d/f"); got != "synced and" {
		t.Fatalf("/d/f after a second crash: %q", got)
	}
}
