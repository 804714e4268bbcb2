package loadgen

import (
	"sync"
	"sync/atomic"
)

// Per-event state bits, four per event, packed 16 events to a word.
const (
	bitAccepted  = 1 << iota // the intake answered success for it
	bitSeen                  // found in an output topic
	bitInvalid               // generated with a violation
	bitsPerEvent = 4
	perWord      = 64 / bitsPerEvent
	// chunkEvents are allocated at once, when the first of them is sent.
	chunkEvents = 1 << 20
	chunkWords  = chunkEvents / perWord
)

type chunk [chunkWords]atomic.Uint64

// tracker holds the state of every event of a run, indexed by sequence
// number, and the counts the report needs. Safe for concurrent use.
type tracker struct {
	mu     sync.Mutex // guards allocating chunks
	chunks []atomic.Pointer[chunk]

	accepted   atomic.Int64 // events answered with success
	matched    atomic.Int64 // accepted and seen
	seen       atomic.Int64 // distinct events seen
	duplicates atomic.Int64 // sightings after the first
	// invalidRouted: generated invalid, seen first in the error topic.
	invalidRouted atomic.Int64
	// unexpectedError: generated valid, seen first in the error topic.
	unexpectedError atomic.Int64
	// unexpectedValid: generated invalid, seen first in a schema topic.
	unexpectedValid atomic.Int64
}

// newTracker can follow events 0 .. maxEvents-1.
func newTracker(maxEvents uint64) *tracker {
	t := &tracker{chunks: make([]atomic.Pointer[chunk], (maxEvents+chunkEvents-1)/chunkEvents)}
	t.chunks[0].Store(new(chunk)) // every run has a first event
	return t
}

// word returns the word and shift of event seq, allocating its chunk when
// alloc is set; nil for events never generated (or out of range).
func (t *tracker) word(seq uint64, alloc bool) (*atomic.Uint64, uint) {
	ci := seq / chunkEvents
	if ci >= uint64(len(t.chunks)) {
		return nil, 0
	}
	c := t.chunks[ci].Load()
	if c == nil {
		if !alloc {
			return nil, 0
		}
		t.mu.Lock()
		if c = t.chunks[ci].Load(); c == nil {
			c = new(chunk)
			t.chunks[ci].Store(c)
		}
		t.mu.Unlock()
	}
	i := seq % chunkEvents
	return &c[i/perWord], uint(i%perWord) * bitsPerEvent
}

// generated records that event seq exists (before it is sent), and
// whether it is invalid.
func (t *tracker) generated(seq uint64, invalid bool) {
	w, sh := t.word(seq, true)
	if invalid {
		w.Or(bitInvalid << sh)
	}
}

// accept records the intake's success answer for event seq.
func (t *tracker) accept(seq uint64) {
	w, sh := t.word(seq, true)
	old := w.Or(bitAccepted << sh)
	if old&(bitAccepted<<sh) != 0 {
		return
	}
	t.accepted.Add(1)
	if old&(bitSeen<<sh) != 0 {
		t.matched.Add(1)
	}
}

// sighting is what seeing an event in an output topic meant.
type sighting int

const (
	foreign   sighting = iota // not an event of this run's range
	first                     // first sighting
	duplicate                 // seen before
)

// see records event seq found in a topic (the error topic when inError).
func (t *tracker) see(seq uint64, inError bool) sighting {
	w, sh := t.word(seq, false)
	if w == nil {
		return foreign
	}
	old := w.Or(bitSeen << sh)
	if old&(bitSeen<<sh) != 0 {
		t.duplicates.Add(1)
		return duplicate
	}
	t.seen.Add(1)
	if old&(bitAccepted<<sh) != 0 {
		t.matched.Add(1)
	}
	invalid := old&(bitInvalid<<sh) != 0
	switch {
	case inError && invalid:
		t.invalidRouted.Add(1)
	case inError:
		t.unexpectedError.Add(1)
	case invalid:
		t.unexpectedValid.Add(1)
	}
	return first
}

// complete reports whether every accepted event was seen.
func (t *tracker) complete() bool { return t.matched.Load() == t.accepted.Load() }
