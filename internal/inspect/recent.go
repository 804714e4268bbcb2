package inspect

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/kafka"
)

// DefaultRecentErrors is how many of the latest EventErrors an Inspector
// keeps in memory for the dashboard.
const DefaultRecentErrors = 5000

// recentErrors is the in-memory window of the latest EventErrors that Run
// keeps up to date, so error pages never read Kafka on request. Safe for
// concurrent use.
type recentErrors struct {
	mu sync.RWMutex
	// following: Run follows the error topic; until the tail has started
	// (ready), queries answer from what the window holds rather than
	// reading Kafka on the request.
	following bool
	ready     bool
	entries   []errorEntry // arrival order; at most 2*cap before trimming
	index     map[string]int
	replayed  map[string]capsule.ReplayOutcome // the latest outcome of each replayed uuid
	cap       int
}

func (r *recentErrors) add(e errorEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.index[e.rec.UUID]; ok {
		return
	}
	o, ok := r.replayed[e.rec.UUID]
	e.rec.noteReplay(o, ok)
	r.index[e.rec.UUID] = len(r.entries)
	r.entries = append(r.entries, e)
	if len(r.entries) > 2*r.cap {
		r.entries = slices.Clone(r.entries[len(r.entries)-r.cap:])
		clear(r.index)
		for k, e := range r.entries {
			r.index[e.rec.UUID] = k
		}
	}
}

// setReplayed records the latest replay outcome of uuids (from the replay
// log or a replay): they count as replayed once one came out valid or was
// forced, and may be replayed again while it failed again.
func (r *recentErrors) setReplayed(outcomes map[string]capsule.ReplayOutcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for u, o := range outcomes {
		r.replayed[u] = o
		if k, ok := r.index[u]; ok {
			r.entries[k].rec.noteReplay(o, true)
		}
	}
}

// query filters the window; ok is false until the window is filled.
func (r *recentErrors) query(f ErrorFilter) ([]errorEntry, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if !r.ready && !r.following {
		return nil, false
	}
	start := max(len(r.entries)-r.cap, 0)
	var out []errorEntry
	for _, e := range r.entries[start:] {
		if f.match(e) {
			out = append(out, e)
		}
	}
	return newestFirst(out, f.Limit), true
}

// lookup returns the entries with these uuids, and the uuids not found.
func (r *recentErrors) lookup(uuids []string) ([]errorEntry, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if !r.ready {
		return nil, false
	}
	var out []errorEntry
	for _, u := range uuids {
		if k, ok := r.index[u]; ok {
			out = append(out, r.entries[k])
		}
	}
	return out, true
}

// followErrors keeps the window: it follows the error topic from now on,
// then fills in the latest records from before, and reloads the replay log
// every 10s (other dashboards replay too, and processors record outcomes
// that arrive after a replay stopped waiting). It retries while the error
// topic does not exist yet.
func (i *Inspector) followErrors(ctx context.Context) {
	i.recent.mu.Lock()
	i.recent.following = true
	i.recent.mu.Unlock()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		for {
			if set, err := i.replayed(ctx); err == nil {
				i.recent.setReplayed(set)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(10 * time.Second):
			}
		}
	})
	for ctx.Err() == nil {
		started := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- kafka.Tail(ctx, kafka.TailConfig{Kafka: i.cfg.Kafka, Topics: []string{i.cfg.ErrorTopic}, OnStart: func() { close(started) }},
				func(r kafka.Record) error {
					if e, ok := decodeError(r, nil); ok {
						i.recent.add(e)
					}
					return nil
				})
		}()
		select {
		case <-started:
			// From now on every new EventError reaches the window; the
			// latest older ones are filled in below, while it answers.
			i.recent.mu.Lock()
			i.recent.ready = true
			i.recent.mu.Unlock()
			err := kafka.Read(ctx, kafka.ReadConfig{Kafka: i.cfg.Kafka, Topic: i.cfg.ErrorTopic, LastN: i.cfg.ScanPerPartition, AllPartitions: true}, func(r kafka.Record) error {
				if e, ok := decodeError(r, nil); ok {
					i.recent.add(e)
				}
				return nil
			})
			if err != nil && ctx.Err() == nil {
				i.cfg.Logger.Warn("reading the latest EventErrors", "err", err)
			}
			err = <-done
			i.recent.mu.Lock()
			i.recent.ready = false
			i.recent.mu.Unlock()
			if err != nil && ctx.Err() == nil {
				i.cfg.Logger.Warn("following the error topic", "err", err)
			}
		case err := <-done:
			if err != nil && ctx.Err() == nil {
				i.cfg.Logger.Debug("error topic not readable yet", "err", err)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}
