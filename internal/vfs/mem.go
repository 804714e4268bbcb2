package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// ErrCrashed is the error (wrapped in an *fs.PathError) of every operation
// on a Mem from its crash point (Mem.CrashAfter) until Mem.Crash, and of a
// File opened before the last Mem.Crash.
var ErrCrashed = errors.New("simulated crash")

// MemCapacity is the size a Mem reports in DiskSpace.
const MemCapacity = 1 << 30

// Mem is a strict in-memory FS: Crash keeps only what was synced (see the
// package documentation). Paths are slash-separated from one root; a
// relative path is read from the root too. It is safe for concurrent use.
type Mem struct {
	mu      sync.Mutex
	root    *memNode
	epoch   int             // bumped by Crash; older Files fail
	ops     int             // mutating operations so far
	crashIn int             // mutating operations left before the crash point; -1: none
	crashed string          // the operation refused at the crash point; "" if not reached
	locks   map[string]bool // held by Lock
}

// memNode is a file or a directory. The live state is what reads see;
// the synced state is what Crash keeps.
type memNode struct {
	dir  bool
	mode fs.FileMode

	data, synced []byte // a file's; never sharing an array

	children, syncedChildren map[string]*memNode // a directory's
}

// NewStrictMem returns an empty Mem holding only its root directory.
func NewStrictMem() *Mem {
	return &Mem{root: newMemDir(fs.ModeDir | 0o755), crashIn: -1, locks: map[string]bool{}}
}

func newMemDir(mode fs.FileMode) *memNode {
	return &memNode{dir: true, mode: mode, children: map[string]*memNode{}, syncedChildren: map[string]*memNode{}}
}

// CrashAfter arranges a crash point: n more mutating operations (opening
// with O_CREATE or O_TRUNC, Write, WriteAt, Truncate, Sync, a Mkdir that
// creates, MkdirAll, Rename, Remove, Lock) succeed, and the next one fails
// with ErrCrashed without effect, as does every operation after it, reads
// included, until Crash. A negative n removes the crash point.
func (m *Mem) CrashAfter(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.crashIn = max(n, -1)
}

// Ops returns the number of mutating operations so far (those refused at
// or after a crash point not counted).
func (m *Mem) Ops() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ops
}

// Crashed returns the operation refused at the crash point, such as
// "sync /spool/cursor", or "" if the crash point has not been reached.
func (m *Mem) Crashed() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.crashed
}

// Crash simulates a power loss and a restart: every file goes back to the
// data of its last Sync, every directory to the entries of its last Sync,
// Files opened before fail with ErrCrashed, locks are released, and the
// crash point is removed. It is CrashKeeping(nil).
func (m *Mem) Crash() { m.CrashKeeping(nil) }

// KeepFunc returns what the file at path holds after a power loss, given
// the data it had at its last Sync and the data last written to it (which
// differ). It may return any bytes, such as synced and a part of what
// followed, as a disk that wrote some pages back before the power went.
type KeepFunc func(path string, synced, written []byte) []byte

// CrashKeeping is Crash, except that keep (if not nil) decides what each
// file whose data changed since its last Sync holds afterwards. Directory
// entries are as strict as in Crash: keep is called only for the files
// whose entries were synced.
func (m *Mem) CrashKeeping(keep KeepFunc) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.root = m.root.afterCrash("/", keep, map[*memNode]*memNode{})
	m.epoch++
	m.crashIn = -1
	m.crashed = ""
	clear(m.locks)
}

// afterCrash returns a new node holding what n, at path, keeps through a
// power loss. done maps nodes already copied to their copies.
func (n *memNode) afterCrash(path string, keep KeepFunc, done map[*memNode]*memNode) *memNode {
	if c, ok := done[n]; ok {
		return c
	}
	c := &memNode{dir: n.dir, mode: n.mode}
	done[n] = c
	if !n.dir {
		data := n.synced
		if keep != nil && !bytes.Equal(n.synced, n.data) {
			data = keep(path, slices.Clone(n.synced), slices.Clone(n.data))
		}
		c.data, c.synced = slices.Clone(data), slices.Clone(data)
		return c
	}
	c.children = make(map[string]*memNode, len(n.syncedChildren))
	for name, child := range n.syncedChildren {
		c.children[name] = child.afterCrash(strings.TrimSuffix(path, "/")+"/"+name, keep, done)
	}
	c.syncedChildren = maps.Clone(c.children)
	return c
}

// begin starts operation op on path: it fails if the crash point has been
// reached, and counts a mutating operation. The caller holds mu.
func (m *Mem) begin(op, path string, mutating bool) error {
	if m.crashed != "" {
		return &fs.PathError{Op: op, Path: path, Err: ErrCrashed}
	}
	if !mutating {
		return nil
	}
	if m.crashIn == 0 {
		m.crashed = op + " " + path
		return &fs.PathError{Op: op, Path: path, Err: ErrCrashed}
	}
	if m.crashIn > 0 {
		m.crashIn--
	}
	m.ops++
	return nil
}

// split returns the components of name below the root.
func split(name string) []string {
	name = strings.Trim(filepath.ToSlash(filepath.Clean(name)), "/")
	if name == "" || name == "." {
		return nil
	}
	return strings.Split(name, "/")
}

// lookup finds the directory holding name and name's last component. The
// root has no parent: it is returned as dir with base "". The caller holds
// mu.
func (m *Mem) lookup(op, name string) (dir *memNode, base string, err error) {
	parts := split(name)
	dir = m.root
	if len(parts) == 0 {
		return dir, "", nil
	}
	for _, p := range parts[:len(parts)-1] {
		next := dir.children[p]
		switch {
		case next == nil:
			return nil, "", &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
		case !next.dir:
			return nil, "", &fs.PathError{Op: op, Path: name, Err: errNotDir}
		}
		dir = next
	}
	return dir, parts[len(parts)-1], nil
}

// node returns the node at name. The caller holds mu.
func (m *Mem) node(op, name string) (*memNode, error) {
	dir, base, err := m.lookup(op, name)
	if err != nil {
		return nil, err
	}
	if base == "" {
		return dir, nil
	}
	n := dir.children[base]
	if n == nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return n, nil
}

var (
	errNotDir   = errors.New("not a directory")
	errIsDir    = errors.New("is a directory")
	errNotEmpty = errors.New("directory not empty")
	errBadFD    = errors.New("bad file descriptor")
	errInvalid  = errors.New("invalid argument")
)

// OpenFile implements FS.
func (m *Mem) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin("open", name, flag&(os.O_CREATE|os.O_TRUNC) != 0); err != nil {
		return nil, err
	}
	acc := flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
	write := acc == os.O_WRONLY || acc == os.O_RDWR
	dir, base, err := m.lookup("open", name)
	if err != nil {
		return nil, err
	}
	n := dir
	if base != "" {
		n = dir.children[base]
	}
	switch {
	case n == nil && flag&os.O_CREATE == 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	case n == nil:
		n = &memNode{mode: perm.Perm()}
		dir.children[base] = n
	case flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrExist}
	case n.dir && write:
		return nil, &fs.PathError{Op: "open", Path: name, Err: errIsDir}
	}
	if flag&os.O_TRUNC != 0 && write {
		n.data = nil
	}
	return &memFile{
		m: m, n: n, name: name, epoch: m.epoch,
		read: acc != os.O_WRONLY, write: write, append: flag&os.O_APPEND != 0,
	}, nil
}

// Stat implements FS.
func (m *Mem) Stat(name string) (fs.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin("stat", name, false); err != nil {
		return nil, err
	}
	n, err := m.node("stat", name)
	if err != nil {
		return nil, err
	}
	return n.info(filepath.Base(name)), nil
}

// ReadDir implements FS.
func (m *Mem) ReadDir(name string) ([]fs.DirEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin("readdir", name, false); err != nil {
		return nil, err
	}
	n, err := m.node("readdir", name)
	if err != nil {
		return nil, err
	}
	if !n.dir {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errNotDir}
	}
	out := make([]fs.DirEntry, 0, len(n.children))
	for _, child := range slices.Sorted(maps.Keys(n.children)) {
		out = append(out, fs.FileInfoToDirEntry(n.children[child].info(child)))
	}
	return out, nil
}

// Mkdir implements FS.
func (m *Mem) Mkdir(name string, perm fs.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin("mkdir", name, false); err != nil {
		return err
	}
	dir, base, err := m.lookup("mkdir", name)
	if err != nil {
		return err
	}
	if base == "" || dir.children[base] != nil {
		return &fs.PathError{Op: "mkdir", Path: name, Err: fs.ErrExist}
	}
	// Only a Mkdir that creates is a mutating operation.
	if err := m.begin("mkdir", name, true); err != nil {
		return err
	}
	dir.children[base] = newMemDir(fs.ModeDir | perm.Perm())
	return nil
}

// MkdirAll implements FS.
func (m *Mem) MkdirAll(path string, perm fs.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin("mkdir", path, true); err != nil {
		return err
	}
	dir := m.root
	for _, p := range split(path) {
		next := dir.children[p]
		switch {
		case next == nil:
			next = newMemDir(fs.ModeDir | perm.Perm())
			dir.children[p] = next
		case !next.dir:
			return &fs.PathError{Op: "mkdir", Path: path, Err: errNotDir}
		}
		dir = next
	}
	return nil
}

// Rename implements FS.
func (m *Mem) Rename(oldpath, newpath string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	linkErr := func(err error) error { return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err} }
	if err := m.begin("rename", oldpath, true); err != nil {
		return linkErr(errors.Unwrap(err))
	}
	odir, obase, err := m.lookup("rename", oldpath)
	if err != nil {
		return linkErr(errors.Unwrap(err))
	}
	ndir, nbase, err := m.lookup("rename", newpath)
	if err != nil {
		return linkErr(errors.Unwrap(err))
	}
	n := odir.children[obase]
	switch {
	case obase == "" || nbase == "":
		return linkErr(errInvalid)
	case n == nil:
		return linkErr(fs.ErrNotExist)
	case n.dir:
		return linkErr(errors.New("renaming a directory is not supported by vfs.Mem"))
	}
	if old := ndir.children[nbase]; old != nil && old.dir {
		return linkErr(errIsDir)
	}
	delete(odir.children, obase)
	ndir.children[nbase] = n
	return nil
}

// Remove implements FS.
func (m *Mem) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin("remove", name, true); err != nil {
		return err
	}
	dir, base, err := m.lookup("remove", name)
	if err != nil {
		return err
	}
	n := dir.children[base]
	switch {
	case base == "":
		return &fs.PathError{Op: "remove", Path: name, Err: errInvalid}
	case n == nil:
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	case n.dir && len(n.children) > 0:
		return &fs.PathError{Op: "remove", Path: name, Err: errNotEmpty}
	}
	delete(dir.children, base)
	return nil
}

// Lock implements FS. The lock is this Mem's, released by Crash.
func (m *Mem) Lock(name string, perm fs.FileMode) (io.Closer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin("lock", name, true); err != nil {
		return nil, err
	}
	dir, base, err := m.lookup("lock", name)
	if err != nil {
		return nil, err
	}
	n := dir.children[base]
	switch {
	case base == "" || n != nil && n.dir:
		return nil, &fs.PathError{Op: "lock", Path: name, Err: errIsDir}
	case n == nil:
		dir.children[base] = &memNode{mode: perm.Perm()}
	}
	key := strings.Join(split(name), "/")
	if m.locks[key] {
		return nil, &fs.PathError{Op: "lock", Path: name, Err: ErrLocked}
	}
	m.locks[key] = true
	return &memLock{m: m, key: key, epoch: m.epoch}, nil
}

// memLock is a lock Mem.Lock took.
type memLock struct {
	m      *Mem
	key    string
	epoch  int
	closed bool
}

func (l *memLock) Close() error {
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	if l.closed {
		return &fs.PathError{Op: "close", Path: l.key, Err: fs.ErrClosed}
	}
	l.closed = true
	if l.epoch == l.m.epoch {
		delete(l.m.locks, l.key)
	}
	return nil
}

// DiskSpace implements FS: MemCapacity less the bytes of the files.
func (m *Mem) DiskSpace(f File) (avail, size int64, err error) {
	mf, ok := f.(*memFile)
	if !ok || mf.m != m {
		return 0, 0, fmt.Errorf("vfs: DiskSpace of a %T, not a file this Mem opened", f)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := mf.begin("statfs", false, false); err != nil {
		return 0, 0, err
	}
	return max(MemCapacity-m.root.bytes(), 0), MemCapacity, nil
}

// bytes returns the bytes of the files at and below n.
func (n *memNode) bytes() int64 {
	if !n.dir {
		return int64(len(n.data))
	}
	var sum int64
	for _, c := range n.children {
		sum += c.bytes()
	}
	return sum
}

// info returns n's file information under name.
func (n *memNode) info(name string) fs.FileInfo {
	fi := memInfo{name: name, mode: n.mode}
	if !n.dir {
		fi.size = int64(len(n.data))
	}
	return fi
}

// memInfo is a Mem file's fs.FileInfo.
type memInfo struct {
	name string
	size int64
	mode fs.FileMode
}

func (fi memInfo) Name() string       { return fi.name }
func (fi memInfo) Size() int64        { return fi.size }
func (fi memInfo) Mode() fs.FileMode  { return fi.mode }
func (fi memInfo) ModTime() time.Time { return time.Time{} }
func (fi memInfo) IsDir() bool        { return fi.mode.IsDir() }
func (fi memInfo) Sys() any           { return nil }

// memFile is an open Mem file or directory.
type memFile struct {
	m                   *Mem
	n                   *memNode
	name                string
	epoch               int
	read, write, append bool
	off                 int64 // for Read and Write
	closed              bool
}

// begin checks that f may do op, and starts it on the Mem. The caller
// holds f.m.mu.
func (f *memFile) begin(op string, mutating, needWrite bool) error {
	switch {
	case f.closed:
		return &fs.PathError{Op: op, Path: f.name, Err: fs.ErrClosed}
	case f.epoch != f.m.epoch:
		return &fs.PathError{Op: op, Path: f.name, Err: ErrCrashed}
	}
	if err := f.m.begin(op, f.name, mutating); err != nil {
		return err
	}
	switch {
	case needWrite && (!f.write || f.n.dir):
		return &fs.PathError{Op: op, Path: f.name, Err: errBadFD}
	case !needWrite && op == "read" && (!f.read || f.n.dir):
		return &fs.PathError{Op: op, Path: f.name, Err: errBadFD}
	}
	return nil
}

func (f *memFile) Read(p []byte) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.begin("read", false, false); err != nil {
		return 0, err
	}
	n, err := f.readAt(p, f.off)
	f.off += int64(n)
	if err != nil && n > 0 {
		err = nil // io.Reader: a short read is not EOF yet
	}
	return n, err
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.begin("read", false, false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: errInvalid}
	}
	return f.readAt(p, off)
}

func (f *memFile) readAt(p []byte, off int64) (int, error) {
	if off >= int64(len(f.n.data)) {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	n := copy(p, f.n.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.begin("write", true, true); err != nil {
		return 0, err
	}
	if f.append {
		f.off = int64(len(f.n.data))
	}
	f.writeAt(p, f.off)
	f.off += int64(len(p))
	return len(p), nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.begin("write", true, true); err != nil {
		return 0, err
	}
	if off < 0 || f.append {
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: errInvalid}
	}
	f.writeAt(p, off)
	return len(p), nil
}

func (f *memFile) writeAt(p []byte, off int64) {
	if end := off + int64(len(p)); end > int64(len(f.n.data)) {
		f.n.resize(end)
	}
	copy(f.n.data[off:], p)
}

// resize sets a file's size, zero-filling what it adds.
func (n *memNode) resize(size int64) {
	if size <= int64(len(n.data)) {
		n.data = n.data[:size]
		return
	}
	n.data = slices.Grow(n.data, int(size)-len(n.data))
	n.data = append(n.data, make([]byte, int(size)-len(n.data))...)
}

func (f *memFile) Truncate(size int64) error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.begin("truncate", true, true); err != nil {
		return err
	}
	if size < 0 {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: errInvalid}
	}
	f.n.resize(size)
	return nil
}

// Sync makes the file's data, or the directory's entries, what a crash
// keeps.
func (f *memFile) Sync() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.begin("sync", true, false); err != nil {
		return err
	}
	if f.n.dir {
		f.n.syncedChildren = maps.Clone(f.n.children)
	} else {
		f.n.synced = append(f.n.synced[:0], f.n.data...)
	}
	return nil
}

func (f *memFile) Stat() (fs.FileInfo, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.begin("stat", false, false); err != nil {
		return nil, err
	}
	return f.n.info(filepath.Base(f.name)), nil
}

// Close closes the file. It fails only on a file already closed.
func (f *memFile) Close() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.closed {
		return &fs.PathError{Op: "close", Path: f.name, Err: fs.ErrClosed}
	}
	f.closed = true
	return nil
}

// String describes the Mem's live tree, for test failures: every file with
// its size and synced size, every directory entry not synced.
func (m *Mem) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	m.root.dump(&b, "/")
	return b.String()
}

func (n *memNode) dump(b *strings.Builder, path string) {
	for _, name := range slices.Sorted(maps.Keys(n.children)) {
		c := n.children[name]
		synced := ""
		if n.syncedChildren[name] != c {
			synced = " (entry not synced)"
		}
		if c.dir {
			fmt.Fprintf(b, "%s%s/%s\n", path, name, synced)
			c.dump(b, path+name+"/")
			continue
		}
		fmt.Fprintf(b, "%s%s %d bytes, %d synced%s\n", path, name, len(c.data), len(c.synced), synced)
	}
	for _, name := range slices.Sorted(maps.Keys(n.syncedChildren)) {
		if _, ok := n.children[name]; !ok {
			fmt.Fprintf(b, "%s%s (removed, not synced)\n", path, name)
		}
	}
}
