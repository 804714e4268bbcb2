package spool

import (
	"errors"
	"fmt"
)

// ErrFull is returned by Append when the batch would take the spool past
// Config.MaxBytes. Nothing was written; the intake answers 503.
var ErrFull = errors.New("spool full")

// ErrClosed is returned by Append, Peek and Ack after Close.
var ErrClosed = errors.New("spool closed")

// CorruptError reports a record frame that failed validation in a segment
// file where it cannot be a torn last write: Open returns it for an older
// segment, Peek if a file changed under a running Queue.
type CorruptError struct {
	Path   string // the segment file
	Offset int64  // byte offset of the bad frame in Path
	Reason string // what is wrong with the frame
}

// Error implements error.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("spool: corrupt record in %s at offset %d: %s", e.Path, e.Offset, e.Reason)
}
