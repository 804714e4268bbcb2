package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxAnswerBytes bounds how much of an answer is read (1,000 results with
// violations fit easily).
const maxAnswerBytes = 16 << 20

// run is the sending goroutine: it gathers batches from the queue and
// delivers them one at a time until Close.
func (c *Client) run() {
	defer close(c.done)
	batch := make([]item, 0, c.cfg.BatchSize)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	lingering := false
	send := func() {
		if lingering {
			timer.Stop()
			lingering = false
		}
		if len(batch) > 0 {
			c.deliver(batch)
			clear(batch)
			batch = batch[:0]
		}
	}
	// drain sends what the queue holds now, in full batches.
	drain := func() {
		for n := len(c.queue); n > 0; n-- {
			batch = append(batch, <-c.queue)
			if len(batch) >= c.cfg.BatchSize {
				send()
			}
		}
		send()
	}
	for {
		select {
		case it := <-c.queue:
			batch = append(batch, it)
			switch {
			case len(batch) >= c.cfg.BatchSize:
				send()
			case !lingering:
				timer.Reset(c.cfg.FlushInterval)
				lingering = true
			}
		case <-timer.C:
			lingering = false
			send()
		case <-c.flushReq:
			drain()
		case <-c.closing:
			// Close set closed before closing: nothing is added any more.
			drain()
			return
		}
	}
}

// outcome is what one POST gave.
type outcome struct {
	results    []eventResult // per-event answer (201, 207, 400)
	split      bool          // 413 for several events: send halves
	retry      bool          // network error, 5xx, 429, 503
	retryAfter time.Duration // from a 429 or 503
	err        error         // why it failed (retry or not)
}

// eventResult is one entry of the intake's answer.
type eventResult struct {
	Index   int         `json:"index"`
	Status  string      `json:"status"`
	UUID    string      `json:"uuid"`
	Topic   string      `json:"topic"`
	Code    string      `json:"code"`
	Message string      `json:"message"`
	Errors  []Violation `json:"errors"`
}

// deliver sends items until each has a Result: retries with backoff until
// Config.DeliveryTimeout, splits on 413.
func (c *Client) deliver(items []item) {
	start := time.Now()
	var last error
	for attempt := 0; ; attempt++ {
		if c.runCtx.Err() != nil {
			c.fail(items, closedErr(last))
			return
		}
		if attempt > 0 {
			c.retries.Add(1)
		}
		c.requests.Add(1)
		out := c.post(items)
		switch {
		case out.results != nil:
			c.resolve(items, out.results)
			return
		case out.split:
			half := len(items) / 2
			c.deliver(items[:half])
			c.deliver(items[half:])
			return
		case !out.retry:
			c.fail(items, out.err)
			return
		}
		last = out.err
		remaining := c.cfg.DeliveryTimeout - time.Since(start)
		if remaining <= 0 {
			c.fail(items, fmt.Errorf("%w after %d attempts: %w", ErrDeliveryTimeout, attempt+1, last))
			return
		}
		wait := min(c.backoff(attempt, out.retryAfter), remaining)
		c.log.Warn("eventlogging intake did not take a batch; retrying", "attempt", attempt+1, "events", len(items), "wait", wait, "err", last)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-c.runCtx.Done():
			t.Stop()
		}
	}
}

func closedErr(last error) error {
	if last == nil {
		return ErrClosed
	}
	return fmt.Errorf("%w before the event was delivered: %w", ErrClosed, last)
}

// backoff is the wait after failed attempt number attempt (0-based):
// MinBackoff doubled per attempt, capped at MaxBackoff, the upper half
// jittered; at least retryAfter (itself capped at MaxBackoff).
func (c *Client) backoff(attempt int, retryAfter time.Duration) time.Duration {
	d := c.cfg.MaxBackoff
	if attempt < 30 {
		d = min(c.cfg.MinBackoff<<attempt, c.cfg.MaxBackoff)
	}
	d = d/2 + rand.N(d/2+1)
	if retryAfter > d {
		d = min(retryAfter, c.cfg.MaxBackoff)
	}
	return d
}

// post sends one batch and classifies the answer.
func (c *Client) post(items []item) outcome {
	var body bytes.Buffer
	body.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			body.WriteByte(',')
		}
		body.Write(it.json)
	}
	body.WriteByte(']')
	req, err := http.NewRequestWithContext(c.runCtx, http.MethodPost, c.endpoint, &body)
	if err != nil {
		return outcome{err: fmt.Errorf("eventlogging client: %w", err)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	resp, err := c.hc.Do(req)
	if err != nil {
		return outcome{retry: true, err: fmt.Errorf("eventlogging client: POST %s: %w", c.endpoint, err)}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		// The intake may have stored the batch: sent again, at least once.
		return outcome{retry: true, err: fmt.Errorf("eventlogging client: reading the answer of %s: %w", c.endpoint, err)}
	}
	code := resp.StatusCode
	switch {
	case code == http.StatusCreated || code == http.StatusMultiStatus || code == http.StatusBadRequest:
		var pr struct {
			Events []eventResult `json:"events"`
		}
		if json.Unmarshal(data, &pr) == nil && len(pr.Events) == len(items) {
			return outcome{results: pr.Events}
		}
		if code == http.StatusBadRequest {
			return outcome{err: httpError(code, data)}
		}
		return outcome{err: fmt.Errorf("eventlogging client: the intake answered %d without a result per event: %.200s", code, data)}
	case code == http.StatusRequestEntityTooLarge && len(items) > 1:
		return outcome{split: true}
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		return outcome{retry: true, retryAfter: retryAfter(resp.Header.Get("Retry-After")), err: httpError(code, data)}
	case code >= 500:
		return outcome{retry: true, err: httpError(code, data)}
	default:
		return outcome{err: httpError(code, data)}
	}
}

func httpError(code int, body []byte) *HTTPError {
	var e struct {
		Error string `json:"error"`
	}
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		msg = e.Error
	}
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	if msg == "" {
		msg = http.StatusText(code)
	}
	return &HTTPError{StatusCode: code, Message: msg}
}

// retryAfter parses a Retry-After header: seconds or an HTTP date.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// resolve reports the intake's per-event answer.
func (c *Client) resolve(items []item, results []eventResult) {
	ordered := make([]*eventResult, len(items))
	for i := range results {
		r := &results[i]
		if r.Index >= 0 && r.Index < len(items) && ordered[r.Index] == nil {
			ordered[r.Index] = r
		}
	}
	for i, it := range items {
		r := ordered[i]
		if r == nil {
			r = &results[i] // indexes missing or repeated: by position
		}
		res := result(it)
		res.UUID, res.Topic = r.UUID, r.Topic
		if r.Status == string(StatusAccepted) {
			res.Status = StatusAccepted
			c.accepted.Add(1)
		} else {
			res.Status, res.Code, res.Message, res.Violations = StatusInvalid, r.Code, r.Message, r.Errors
			c.invalid.Add(1)
		}
		c.report(res)
	}
	c.resolvedN(len(items))
}

// fail reports items as not delivered.
func (c *Client) fail(items []item, err error) {
	if err == nil {
		err = errors.New("eventlogging client: not delivered")
	}
	for _, it := range items {
		res := result(it)
		res.Status, res.Err = StatusFailed, err
		c.failed.Add(1)
		c.report(res)
	}
	c.resolvedN(len(items))
}

func result(it item) Result {
	return Result{Schema: it.schema, Revision: it.revision, Stream: it.stream, JSON: it.json}
}

func (c *Client) report(r Result) {
	if c.cfg.OnResult != nil {
		c.cfg.OnResult(r)
	}
}

// resolvedN counts n resolved events and wakes Flush.
func (c *Client) resolvedN(n int) {
	c.resolved.Add(uint64(n))
	c.progressMu.Lock()
	close(c.progress)
	c.progress = make(chan struct{})
	c.progressMu.Unlock()
}
