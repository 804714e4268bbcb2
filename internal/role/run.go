package role

import (
	"context"

	"golang.org/x/sync/errgroup"
)

// Role is one part of the pipeline: Run starts its goroutines, runs until
// ctx ends (or it fails), stops them and returns.
type Role interface {
	Run(ctx context.Context) error
}

// Readier is a Role that says when the roles after it may start (the
// registry once the schema folder is imported, the intake once it is
// built). A Role without it is ready as soon as it runs.
type Readier interface {
	Ready() <-chan struct{}
}

// RunInOrder runs roles in one errgroup. They start in order: each once
// the one before it is ready. They stop in the reverse order: when ctx
// ends or a role fails, the last role's context ends first, and each
// role's context ends only after every role after it returned. It returns
// the first error.
func RunInOrder(ctx context.Context, roles ...Role) error {
	g, gctx := errgroup.WithContext(ctx)
	stops := make([]context.CancelFunc, 0, len(roles))
	dones := make([]chan struct{}, 0, len(roles))
	for _, r := range roles {
		if gctx.Err() != nil {
			break // a role failed or ctx ended: start no more
		}
		rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		done := make(chan struct{})
		stops, dones = append(stops, stop), append(dones, done)
		g.Go(func() error {
			defer close(done)
			return r.Run(rctx)
		})
		if rd, ok := r.(Readier); ok {
			select {
			case <-rd.Ready():
			case <-done: // returned before it was ready: its error stops the rest
			case <-gctx.Done():
			}
		}
	}
	all := make(chan struct{})
	go func() {
		for _, d := range dones {
			<-d
		}
		close(all)
	}()
	select {
	case <-gctx.Done():
	case <-all: // every role returned on its own
	}
	for i := len(stops) - 1; i >= 0; i-- {
		stops[i]()
		<-dones[i]
	}
	return g.Wait()
}

// ready is a Readier's signal.
type ready struct {
	ch   chan struct{}
	done bool
}

func newReady() ready { return ready{ch: make(chan struct{})} }

// Ready is closed once the role is ready.
func (r *ready) Ready() <-chan struct{} { return r.ch }

func (r *ready) markReady() {
	if !r.done {
		r.done = true
		close(r.ch)
	}
}
