package iphash

import (
	"context"
	"fmt"
	"log/slog"
)

// KeyStore persists the candidate keys of each period. Implementations must be
// safe for concurrent use.
//
// Contract:
//   - Append adds a candidate key for a period. It returns only once the entry
//     is durable and will be seen by every later Load of every store on the
//     same log, whichever process calls it.
//   - Load returns every entry seen so far, in log order (Offset ascending).
//     It includes at least every entry whose Append returned before Load was
//     called.
//   - The winning key of a period is the entry with the lowest Offset for that
//     period. Because an Append lands after everything already in the log, an
//     Append followed by a Load settles the winner for good.
//
// The context governs only the call it is passed to.
type KeyStore interface {
	Load(ctx context.Context) ([]Entry, error)
	Append(ctx context.Context, e Entry) error
}

// Entry is one candidate key for a period, as stored in a KeyStore.
type Entry struct {
	// Period is the index of the period: floor(unix seconds / period seconds).
	Period int64
	// Key is the secret HMAC key. Never log it; Entry's String and LogValue
	// leave it out.
	Key []byte
	// Offset is the entry's position in the log; set by the store on Load
	// and ignored by Append.
	Offset int64
	// Writer names the process that appended the entry, for logs.
	Writer string
}

// String describes e without its key.
func (e Entry) String() string {
	return fmt.Sprintf("iphash.Entry{Period:%d Offset:%d Writer:%q Key:[%d bytes redacted]}", e.Period, e.Offset, e.Writer, len(e.Key))
}

// GoString is String, so %#v does not print the key either.
func (e Entry) GoString() string { return e.String() }

// LogValue implements [slog.LogValuer] without the key.
func (e Entry) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Int64("period", e.Period),
		slog.Int64("offset", e.Offset),
		slog.String("writer", e.Writer),
	)
}

// winner returns the entry with the lowest offset among the usable entries
// for period, and how many candidates there were.
func winner(entries []Entry, period int64) (w Entry, candidates int, ok bool) {
	for _, e := range entries {
		if e.Period != period || len(e.Key) < MinKeySize {
			continue
		}
		candidates++
		if !ok || e.Offset < w.Offset {
			w, ok = e, true
		}
	}
	return w, candidates, ok
}
