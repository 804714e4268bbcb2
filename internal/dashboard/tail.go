package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/eventlogging/eventlogging/internal/inspect"
)

// tailQueue is the bounded hand-off from a Backend.Tail callback to the
// goroutine writing the event stream: a full queue drops and counts.
type tailQueue struct {
	ctx      context.Context
	frames   chan inspect.TailEvent
	dropped  atomic.Int64
	onQueued func(queued int) // test hook, may be nil
}

// offer is the Tail callback: it never blocks.
func (q *tailQueue) offer(ev inspect.TailEvent) error {
	if err := q.ctx.Err(); err != nil {
		return err // the client is gone: tell the backend to stop
	}
	select {
	case q.frames <- ev:
		if q.onQueued != nil {
			q.onQueued(len(q.frames))
		}
	default:
		q.dropped.Add(1)
	}
	return nil
}

// apiTail streams the records produced to ?topic= from now on as
// server-sent events: each record is "data: <TailEvent JSON>"; "event:
// dropped" carries the count of records this client missed because it
// read too slowly (sent when it grows); "event: tail-error" ends the
// stream when the backend fails, "event: end" when the tail stops; a
// comment is sent when idle. The backend's Tail runs, in its own
// goroutine, for as long as the client is connected; the handler returns
// only after it has.
func (h *Handler) apiTail(rw http.ResponseWriter, r *http.Request) {
	topic := r.URL.Query().Get("topic")
	if err := h.checkTopic(r, topic); err != nil {
		h.writeAPIError(rw, r, "tail", err)
		return
	}
	hd := rw.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	rw.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	if h.stop != nil {
		go func() {
			select {
			case <-h.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	q := &tailQueue{ctx: ctx, frames: make(chan inspect.TailEvent, h.tailBuf), onQueued: h.onQueued}
	done := make(chan error, 1)
	go func() { done <- h.b.Tail(ctx, topic, q.offer) }()

	s := &sseWriter{rw: rw, rc: http.NewResponseController(rw)}
	ended := h.streamTail(ctx, s, q, done)
	cancel()
	// Clear send's write deadline, which would otherwise outlive this
	// response on a kept-alive connection.
	_ = s.rc.SetWriteDeadline(time.Time{})
	if !ended {
		// The Tail goroutine is this handler's: wait for it.
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			h.log.Debug("dashboard tail stopped", "err", err)
		}
	}
}

// checkTopic refuses a missing topic, or one the backend does not list.
func (h *Handler) checkTopic(r *http.Request, topic string) error {
	if topic == "" {
		return badRequestf("?topic= is required")
	}
	ctx, cancel := backendCtx(r)
	defer cancel()
	topics, err := h.b.Topics(ctx)
	if err != nil {
		return err
	}
	if !slices.Contains(topics, topic) {
		return fmt.Errorf("topic %q: %w", topic, inspect.ErrNotFound)
	}
	return nil
}

// streamTail writes q's frames to the client until ctx is done, a write
// fails or Tail returns; ended reports that Tail returned (its result was
// read from done).
func (h *Handler) streamTail(ctx context.Context, s *sseWriter, q *tailQueue, done <-chan error) (ended bool) {
	if err := s.send([]byte("retry: 3000\n\n")); err != nil {
		return false
	}
	heartbeat := time.NewTicker(h.heartbeat)
	defer heartbeat.Stop()
	report := time.NewTicker(h.dropReport)
	defer report.Stop()
	var (
		buf      []byte
		reported int64
	)
	for {
		var err error
		select {
		case <-ctx.Done():
			return false
		case ev := <-q.frames:
			buf = appendFrame(buf[:0], ev)
			err = s.send(buf)
		case <-heartbeat.C:
			err = s.send([]byte(": heartbeat\n\n"))
		case <-report.C:
			if n := q.dropped.Load(); n != reported {
				reported = n
				buf = strconv.AppendInt(append(buf[:0], "event: dropped\ndata: "...), n, 10)
				err = s.send(append(buf, "\n\n"...))
			}
		case tailErr := <-done:
			h.finishTail(ctx, s, q, tailErr)
			return true
		}
		if err != nil {
			return false // the client is gone or stuck
		}
	}
}

// finishTail sends what is still queued after Tail returned, the final
// dropped count and why the stream ends.
func (h *Handler) finishTail(ctx context.Context, s *sseWriter, q *tailQueue, tailErr error) {
	if ctx.Err() != nil {
		return
	}
	var buf []byte
	for len(q.frames) > 0 {
		buf = appendFrame(buf[:0], <-q.frames)
		if s.send(buf) != nil {
			return
		}
	}
	if n := q.dropped.Load(); n > 0 {
		if s.send(fmt.Appendf(nil, "event: dropped\ndata: %d\n\n", n)) != nil {
			return
		}
	}
	if tailErr != nil {
		h.log.Warn("dashboard tail failed", "err", tailErr)
		msg, _ := json.Marshal(apiError{Error: "tail: " + tailErr.Error()})
		_ = s.send(fmt.Appendf(nil, "event: tail-error\ndata: %s\n\n", msg))
		return
	}
	_ = s.send([]byte("event: end\ndata: {}\n\n"))
}

// appendFrame appends ev as one "data:" event. A Value that is not JSON is
// sent as a JSON string.
func appendFrame(buf []byte, ev inspect.TailEvent) []byte {
	b, err := json.Marshal(ev)
	if err != nil {
		ev.Value, _ = json.Marshal(string(ev.Value))
		b, _ = json.Marshal(ev)
	}
	// json.Marshal writes no newlines, so the frame is one data line.
	buf = append(buf, "data: "...)
	buf = append(buf, b...)
	return append(buf, "\n\n"...)
}

// sseWriter writes whole frames and flushes each.
type sseWriter struct {
	rw http.ResponseWriter
	rc *http.ResponseController
}

// send writes and flushes one frame; a client that does not take it
// within tailWriteTimeout is given up (this also lifts the server's
// WriteTimeout, which would otherwise end every stream).
func (s *sseWriter) send(frame []byte) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(tailWriteTimeout)) // unsupported by some writers: then no deadline
	if _, err := s.rw.Write(frame); err != nil {
		return err
	}
	return s.rc.Flush()
}
