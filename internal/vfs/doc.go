// Package vfs is the file system the spool and the file sink's local
// state write through: the operating system's ([OS]), or a strict
// in-memory one ([Mem]) that, at a simulated power loss, keeps only what
// was fsync'd, so that tests can check the durability that SIGKILL (which
// keeps the page cache) cannot.
//
// # What a power loss keeps
//
// [Mem.Crash] models the weakest guarantees POSIX gives, the way pebble's
// vfs.NewStrictMem does:
//
//   - a file keeps the data it had at its last Sync; whatever was written
//     or truncated after it is gone;
//   - a directory keeps the entries it had at its last Sync (of the
//     directory itself, opened and synced like a file): a file created,
//     renamed or removed since is back where it was, whatever was synced
//     in the file. A directory made by MkdirAll is an entry of its parent
//     like any other.
//
// Nothing unsynced survives: the strict model drops it all.
// [Mem.CrashKeeping] lets a test choose what an unsynced file holds instead
// (part of a write, as a disk that wrote some pages back), to make torn
// writes. A test can also stop the file system at any mutating operation
// with [Mem.CrashAfter], to crash between every two steps of a workload.
//
// Locks ([FS.Lock]) and free space ([FS.DiskSpace]) are the operating
// system's on [OS] (flock and statfs); [Mem] keeps its own locks, released
// by a crash, and reports a fixed capacity less the bytes its files hold.
package vfs
