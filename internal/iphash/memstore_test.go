package iphash

import (
	"bytes"
	"context"
	"sync"
)

// MemStore is an in-memory KeyStore for the rotator's unit tests. Offsets are
// positions in its log.
type MemStore struct {
	mu      sync.Mutex
	log     []Entry
	appends int

	// beforeAppend, if set, runs at the start of every Append, outside the
	// lock: tests use it to make two rotators race.
	beforeAppend func()
	// err, if set, is returned by every call.
	err error
}

func (s *MemStore) Load(context.Context) ([]Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	out := make([]Entry, len(s.log))
	for i, e := range s.log {
		e.Key = bytes.Clone(e.Key)
		out[i] = e
	}
	return out, nil
}

func (s *MemStore) Append(_ context.Context, e Entry) error {
	if s.beforeAppend != nil {
		s.beforeAppend()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	e.Offset = int64(len(s.log))
	e.Key = bytes.Clone(e.Key)
	s.log = append(s.log, e)
	s.appends++
	return nil
}

func (s *MemStore) setErr(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

func (s *MemStore) entries(period int64) []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Entry
	for _, e := range s.log {
		if e.Period == period {
			out = append(out, e)
		}
	}
	return out
}
