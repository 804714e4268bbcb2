package spool

import (
	"errors"
	"fmt"
)

// ErrFull is returned by Append when the batch would take the spool past
// Config.MaxBytes, or leave less than Config.MinFreeBytes free on the
// filesystem. Nothing was written; the intake answers 503.
var ErrFull = errors.New("spool full")

// ErrClosed is returned by Append, Peek and Ack after Close.
var ErrClosed = errors.New("spool closed")

// CorruptError reports data that failed validation where it cannot be a
// torn last write: Open returns it for a record frame in an older segment
// and for a cursor file with neither slot valid, Peek if a segment file
// changed under a running Queue.
type CorruptError struct {
	Path   string // the segment or cursor file
	Offset int64  // byte offset of the bad frame in Path; 0 for the cursor file
	Reason string // what is wrong with the frame or the cursor file

	cursor bool // Path is the cursor file
}

// Error implements error.
func (e *CorruptError) Error() string {
	if e.cursor {
		return fmt.Sprintf("spool: corrupt cursor file %s: %s (moving it away replays from the oldest segment, delivering acked records again)", e.Path, e.Reason)
	}
	return fmt.Sprintf("spool: corrupt record in %s at offset %d: %s", e.Path, e.Offset, e.Reason)
}
