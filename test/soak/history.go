package main

import (
	"encoding/json"
	"os"
	"sync"
	"time"
)

// entry is one line of the history file: an operation of the soak (a
// role started, the load begun, a sample of the pipeline's lag) or a
// fault of the nemesis.
type entry struct {
	Time    time.Time      `json:"time"`
	Kind    string         `json:"kind"`
	Target  string         `json:"target,omitempty"`
	Details map[string]any `json:"details,omitempty"`
}

// history appends entries to a JSON-lines file; safe for concurrent use.
type history struct {
	mu sync.Mutex
	f  *os.File
}

func openHistory(path string) (*history, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &history{f: f}, nil
}

// add writes one entry (kv: alternating keys and values of its details).
func (h *history) add(kind, target string, kv ...any) {
	e := entry{Time: time.Now().UTC(), Kind: kind, Target: target}
	if len(kv) > 0 {
		e.Details = map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			k, _ := kv[i].(string)
			e.Details[k] = kv[i+1]
		}
	}
	b, _ := json.Marshal(e)
	h.mu.Lock()
	defer h.mu.Unlock()
	_, _ = h.f.Write(append(b, '\n'))
}

func (h *history) close() error { return h.f.Close() }
