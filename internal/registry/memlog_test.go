package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/eventlogging/eventlogging/internal/kafka/schemalog"
)

// memTopic is an in-memory log shared by the memLogs of several registry
// instances. Appends are applied to every running instance before they
// return, in offset order, under the topic's lock.
type memTopic struct {
	mu      sync.Mutex
	records []schemalog.Record
	views   []*memLog
	leader  *memLog
}

// memLog is one instance's view of a memTopic, with the semantics of
// kafka.SchemaLog: replay then follow, one leader, Append applied locally
// before it returns.
type memLog struct {
	t     *memTopic
	url   string // this instance's URL, reported when it leads
	apply func(schemalog.Record)
	ready chan struct{}
}

func newMemTopic() *memTopic { return &memTopic{} }

// view returns a new instance's log; the first view is the leader.
func (t *memTopic) view() *memLog {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := &memLog{t: t, ready: make(chan struct{})}
	t.views = append(t.views, l)
	if t.leader == nil {
		t.leader = l
	}
	return l
}

// setURL sets the URL l reports when it leads.
func (l *memLog) setURL(url string) {
	l.t.mu.Lock()
	defer l.t.mu.Unlock()
	l.url = url
}

// setLeader makes l the leader (nil: none).
func (t *memTopic) setLeader(l *memLog) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.leader = l
}

func (l *memLog) Run(ctx context.Context, apply func(schemalog.Record)) error {
	l.t.mu.Lock()
	if l.apply != nil {
		l.t.mu.Unlock()
		return errors.New("memlog: Run called twice")
	}
	for _, r := range l.t.records {
		apply(r)
	}
	l.apply = apply
	close(l.ready)
	l.t.mu.Unlock()
	<-ctx.Done()
	l.t.mu.Lock()
	l.apply = nil
	l.t.mu.Unlock()
	return nil
}

func (l *memLog) WaitReady(ctx context.Context) error {
	select {
	case <-l.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *memLog) Append(ctx context.Context, key, value []byte) (int64, error) {
	if err := ctx.Err(); err != nil {
		return -1, err
	}
	l.t.mu.Lock()
	defer l.t.mu.Unlock()
	if l.t.leader != l {
		return -1, fmt.Errorf("memlog append: %w", schemalog.ErrNotLeader)
	}
	if l.apply == nil {
		return -1, errors.New("memlog append: not running")
	}
	rec := schemalog.Record{Key: slices.Clone(key), Offset: int64(len(l.t.records))}
	if value != nil {
		rec.Value = slices.Clone(value)
	}
	l.t.records = append(l.t.records, rec)
	for _, v := range l.t.views {
		if v.apply != nil {
			v.apply(rec)
		}
	}
	return rec.Offset, nil
}

func (l *memLog) Leader() (bool, string) {
	l.t.mu.Lock()
	defer l.t.mu.Unlock()
	if l.t.leader == l {
		return true, l.url
	}
	if l.t.leader == nil {
		return false, ""
	}
	return false, l.t.leader.url
}

// snapshot returns the records so far.
func (t *memTopic) snapshot() []schemalog.Record {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.records)
}
