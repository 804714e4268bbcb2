package loadgen

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eventlogging/eventlogging/internal/capsule"
)

// Mode is how events reach the intake.
type Mode string

// The modes.
const (
	// ModeBeacon: GET /beacon/event?<url-encoded capsule>; one event per
	// request, 204.
	ModeBeacon Mode = "beacon"
	// ModePost: POST /v1/events with a JSON array of Batch events,
	// validated at once: 201, 207 or 400 with a result per event.
	ModePost Mode = "post"
	// ModeHasty: POST /v1/events?hasty=true, 202, validated later.
	ModeHasty Mode = "hasty"
	// ModeMix: each request is a beacon, a POST or a hasty POST at random.
	ModeMix Mode = "mix"
)

// ParseMode checks a mode name.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeBeacon, ModePost, ModeHasty, ModeMix:
		return m, nil
	}
	return "", fmt.Errorf("mode %q: want beacon, post, hasty or mix", s)
}

// Hard limits of a run.
const (
	MaxEvents   = 100_000_000
	MaxDuration = 24 * time.Hour
	MaxBatch    = 1000 // the intake's default intake.max_batch_events
)

// Config describes a run. Zero values are documented per field.
type Config struct {
	// URL is the intake's base URL, e.g. http://127.0.0.1:8080; required.
	URL string
	// Mode; default beacon.
	Mode Mode
	// Batch is the number of events per POST (post, hasty, mix); default 50.
	Batch int
	// Rate is the target in events/s; 0 sends as fast as the clients can.
	Rate float64
	// Concurrency is the number of clients, each with its own keep-alive
	// connection, sending one request at a time; default 8.
	Concurrency int
	// Events stops the run after this many events; 0: MaxEvents.
	Events int64
	// Duration stops the run after this long; 0: MaxDuration. Events and
	// Duration may both be set: the first reached ends the run.
	Duration time.Duration
	// Generator makes the events; required.
	Generator *Generator
	// RunID names the run; it must be the one the Generator was built for.
	RunID string
	// Follow, if set, follows the events into the output topics.
	Follow *FollowConfig
	// RequestTimeout bounds each request; default 30s.
	RequestTimeout time.Duration
	// Progress, if set, receives a progress line every second.
	Progress io.Writer
	// Seed makes the generated values reproducible (not their order across
	// clients); 0 picks one at random.
	Seed uint64
	// Logger; nil discards.
	Logger *slog.Logger
	// Notes are added to the report (e.g. the generator's).
	Notes []string
}

// NewRunID returns a random run id (10 hex digits).
func NewRunID() string {
	var b [5]byte
	_, _ = rand.Read(b[:]) // never fails
	return hex.EncodeToString(b[:])
}

func (c *Config) check() error {
	if c.Mode == "" {
		c.Mode = ModeBeacon
	}
	if _, err := ParseMode(string(c.Mode)); err != nil {
		return err
	}
	if c.Batch <= 0 {
		c.Batch = 50
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 8
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Seed == 0 {
		c.Seed = mrand.Uint64()
	}
	switch {
	case c.Generator == nil:
		return errors.New("no generator")
	case c.RunID == "":
		return errors.New("no run id")
	case c.Batch > MaxBatch:
		return fmt.Errorf("batch %d: at most %d events per request", c.Batch, MaxBatch)
	case c.Events < 0 || c.Events > MaxEvents:
		return fmt.Errorf("events %d: must be within 0 and %d", c.Events, MaxEvents)
	case c.Duration < 0 || c.Duration > MaxDuration:
		return fmt.Errorf("duration %v: must be within 0 and %v", c.Duration, MaxDuration)
	case c.Rate < 0 || c.Rate != c.Rate:
		return fmt.Errorf("rate %v: must be 0 or more", c.Rate)
	case c.Concurrency > 10_000:
		return fmt.Errorf("concurrency %d: at most 10000", c.Concurrency)
	}
	if c.Duration == 0 {
		c.Duration = MaxDuration
	}
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("url %q: want http://host:port", c.URL)
	}
	c.URL = strings.TrimSuffix(c.URL, "/")
	return nil
}

// workerStats is one client's share of the counts.
type workerStats struct {
	requests, errors        int64
	sent, accepted, refused int64
	invalid, answeredBad    int64
	misjudged               int64
	status                  map[int]int64
	perSchema               []int64
	hist                    Histogram
}

// live are the counts the progress line reads while clients run.
type live struct {
	sent, accepted, failed atomic.Int64
}

// Run sends events to the intake as configured, follows them when
// cfg.Follow is set, and reports. Cancelling ctx stops sending (and
// following) early; the report then says "interrupted". Run fails only
// when it cannot start: bad configuration, or Kafka unreachable for
// following.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.check(); err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	log := cfg.Logger
	limit := uint64(MaxEvents)
	if cfg.Events > 0 {
		limit = uint64(cfg.Events)
	}
	tr := newTracker(limit)
	var fol *follower
	var topics []string
	if cfg.Follow != nil {
		fc := *cfg.Follow
		fc.setDefaults()
		var err error
		if topics, err = outputTopics(fc, cfg.Generator.Schemas()); err != nil {
			return nil, err
		}
		if fol, err = startFollower(ctx, fc, tr, cfg.RunID, topics, log); err != nil {
			return nil, err
		}
		defer fol.stop()
		cfg.Follow = &fc
	}

	tp := &http.Transport{
		Proxy:               nil, // straight to the target, whatever HTTP_PROXY says
		MaxIdleConns:        cfg.Concurrency,
		MaxIdleConnsPerHost: cfg.Concurrency,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	defer tp.CloseIdleConnections()
	hc := &http.Client{Transport: tp, Timeout: cfg.RequestTimeout}
	base, err := url.Parse(cfg.URL) // checked by cfg.check
	if err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}

	start := time.Now()
	if fol != nil {
		fol.setStart(start)
	}
	deadline := start.Add(cfg.Duration)
	sendCtx, stopSending := context.WithDeadline(ctx, deadline.Add(cfg.RequestTimeout))
	defer stopSending()
	is := newIssuer(start, cfg.Rate, limit) // the tracker holds no more
	var lv live
	stats := make([]*workerStats, cfg.Concurrency)
	var wg sync.WaitGroup
	for i := range cfg.Concurrency {
		w := &worker{
			cfg: &cfg, cl: newClient(base, hc, cfg.RequestTimeout), path: base.EscapedPath(),
			is: is, tr: tr, live: &lv, start: start, deadline: deadline,
			rng:   mrand.New(mrand.NewPCG(cfg.Seed, uint64(i))),
			stats: &workerStats{status: map[int]int64{}, perSchema: make([]int64, len(cfg.Generator.Schemas()))},
		}
		stats[i] = w.stats
		wg.Go(func() { w.run(sendCtx) })
	}
	progressDone := make(chan struct{})
	var progressWG sync.WaitGroup
	if cfg.Progress != nil {
		progressWG.Go(func() { progress(cfg.Progress, start, &lv, tr, fol != nil, progressDone) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	stoppedBy := "duration"
	switch {
	case ctx.Err() != nil:
		stoppedBy = "interrupted"
	case is.issued() >= limit && time.Now().Before(deadline):
		stoppedBy = "events"
	}

	batch := cfg.Batch
	if cfg.Mode == ModeBeacon {
		batch = 1
	}
	rep := &Report{
		RunID: cfg.RunID, URL: cfg.URL, Mode: string(cfg.Mode), Batch: batch, Concurrency: cfg.Concurrency,
		TargetRate: cfg.Rate, StoppedBy: stoppedBy, Elapsed: round3(elapsed.Seconds()),
		Schemas: map[string]int64{}, Requests: RequestStats{Status: map[string]int64{}},
		Notes: cfg.Notes,
	}
	var hist Histogram
	for _, s := range stats {
		rep.Requests.Sent += s.requests
		rep.Requests.Errors += s.errors
		for code, n := range s.status {
			rep.Requests.Status[strconv.Itoa(code)] += n
		}
		rep.Events.Sent += s.sent
		rep.Events.Accepted += s.accepted
		rep.Events.Refused += s.refused
		rep.Events.InvalidSent += s.invalid
		rep.Events.AnsweredInvalid += s.answeredBad
		rep.Events.Misjudged += s.misjudged
		for i, n := range s.perSchema {
			if n > 0 {
				rep.Schemas[cfg.Generator.Schemas()[i].ID.String()] += n
			}
		}
		hist.Merge(&s.hist)
	}
	secs := elapsed.Seconds()
	rep.Requests.PerSecond = round3(float64(rep.Requests.Sent) / secs)
	rep.Events.AcceptedPerSecond = round3(float64(rep.Events.Accepted) / secs)
	rep.IntakeLatency = latencyOf(&hist)

	if fol != nil {
		waitStart := time.Now()
		if ctx.Err() == nil {
			waitComplete(ctx, tr, cfg.Follow.Timeout)
		}
		fol.stop()
		fs := &FollowStats{
			Topics:           topics,
			Complete:         tr.complete(),
			Seen:             tr.seen.Load(),
			Lost:             tr.accepted.Load() - tr.matched.Load(),
			Duplicates:       tr.duplicates.Load(),
			InvalidRouted:    tr.invalidRouted.Load(),
			UnexpectedErrors: tr.unexpectedError.Load(),
			UnexpectedValid:  tr.unexpectedValid.Load(),
			SeenNotAccepted:  tr.seen.Load() - tr.matched.Load(),
			Latency:          latencyOf(&fol.hist),
			ReadLatency:      latencyOf(&fol.readHist),
			Wait:             round3(time.Since(waitStart).Seconds()),
			Errors:           fol.errs,
		}
		if last := fol.lastMilli.Load(); last > 0 {
			if span := time.UnixMilli(last).Sub(start).Seconds(); span > 0 {
				fs.EventsPerSecond = round3(float64(fs.Seen) / span)
			}
		}
		rep.Follow = fs
	}
	close(progressDone)
	progressWG.Wait()
	return rep, nil
}

// waitComplete returns once every accepted event was seen, after timeout,
// or when ctx ends.
func waitComplete(ctx context.Context, tr *tracker, timeout time.Duration) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !tr.complete() {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			return
		case <-tick.C:
		}
	}
}

// progress prints one line a second until done.
func progress(w io.Writer, start time.Time, lv *live, tr *tracker, following bool, done <-chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var lastSent int64
	lastT := start
	for {
		select {
		case <-done:
			return
		case now := <-tick.C:
			sent := lv.sent.Load()
			rate := float64(sent-lastSent) / now.Sub(lastT).Seconds()
			lastSent, lastT = sent, now
			line := fmt.Sprintf("bench %5.1fs: %s events sent (%s/s now), %s accepted, %s failed",
				now.Sub(start).Seconds(), num(float64(sent)), num(rate), num(float64(lv.accepted.Load())), num(float64(lv.failed.Load())))
			if following {
				line += fmt.Sprintf(", %s seen", num(float64(tr.seen.Load())))
			}
			fmt.Fprintln(w, line)
		}
	}
}

// worker is one client: it sends one request at a time.
type worker struct {
	cfg      *Config
	cl       client
	path     string // the URL's path, before /beacon/event and /v1/events
	is       *issuer
	tr       *tracker
	live     *live
	rng      *mrand.Rand
	stats    *workerStats
	start    time.Time
	deadline time.Time
	body     []byte
	ev       []byte
	target   []byte
	answer   []byte
	seqs     []uint64
	invalid  []bool
}

func (w *worker) run(ctx context.Context) {
	defer w.cl.close()
	for ctx.Err() == nil {
		mode := w.cfg.Mode
		if mode == ModeMix {
			mode = []Mode{ModeBeacon, ModePost, ModeHasty}[w.rng.IntN(3)]
		}
		n := w.cfg.Batch
		if mode == ModeBeacon {
			n = 1
		}
		first, got, due := w.is.take(n)
		if got == 0 {
			return
		}
		if !due.IsZero() {
			if !due.Before(w.deadline) {
				return
			}
			if d := time.Until(due); d > 0 && !sleepCtx(ctx, d) {
				return
			}
		} else if !time.Now().Before(w.deadline) {
			return
		}
		w.send(ctx, mode, first, got)
	}
}

// send builds and sends one request of got events starting at first.
func (w *worker) send(ctx context.Context, mode Mode, first uint64, got int) {
	t0 := time.Now()
	sentMicros := t0.Sub(w.start).Microseconds()
	w.seqs, w.invalid = w.seqs[:0], w.invalid[:0]
	w.body = w.body[:0]
	w.target = append(w.target[:0], w.path...)
	method, body := http.MethodGet, []byte(nil)
	if mode == ModeBeacon {
		var si int
		var bad bool
		w.ev, si, bad = w.cfg.Generator.Event(w.ev[:0], w.rng, first, sentMicros)
		w.note(first, si, bad)
		w.target = append(w.target, "/beacon/event?"...)
		w.target = append(appendURIComponent(w.target, w.ev), ';')
	} else {
		w.body = append(w.body, '[')
		for i := range got {
			if i > 0 {
				w.body = append(w.body, ',')
			}
			var si int
			var bad bool
			w.body, si, bad = w.cfg.Generator.Event(w.body, w.rng, first+uint64(i), sentMicros)
			w.note(first+uint64(i), si, bad)
		}
		w.body = append(w.body, ']')
		w.target = append(w.target, "/v1/events"...)
		if mode == ModeHasty {
			w.target = append(w.target, "?hasty=true"...)
		}
		method, body = http.MethodPost, w.body
	}
	w.stats.sent += int64(got)
	w.live.sent.Add(int64(got))
	sendT := time.Now()
	status, answer, err := w.cl.do(ctx, method, string(w.target), body, mode == ModePost, w.answer)
	w.answer = answer
	lat := time.Since(sendT)
	if err != nil {
		w.failed(ctx, got)
		return
	}
	w.stats.requests++
	w.stats.status[status]++
	w.stats.hist.Record(lat)
	switch {
	case mode == ModeBeacon && status == http.StatusNoContent,
		mode == ModeHasty && status == http.StatusAccepted:
		for _, seq := range w.seqs {
			w.tr.accept(seq)
		}
		w.stats.accepted += int64(got)
		w.live.accepted.Add(int64(got))
	case mode == ModePost && (status == http.StatusCreated || status == http.StatusMultiStatus || status == http.StatusBadRequest):
		w.postAnswer(answer)
	default:
		w.stats.refused += int64(got)
		w.live.failed.Add(int64(got))
	}
}

// note records a generated event.
func (w *worker) note(seq uint64, schemaIndex int, invalid bool) {
	w.tr.generated(seq, invalid)
	w.seqs = append(w.seqs, seq)
	w.invalid = append(w.invalid, invalid)
	w.stats.perSchema[schemaIndex]++
	if invalid {
		w.stats.invalid++
	}
}

// failed counts the events of a request without an answer; the request
// counts as an error unless the run was stopping (interrupted, or past the
// deadline).
func (w *worker) failed(ctx context.Context, got int) {
	w.stats.refused += int64(got)
	w.live.failed.Add(int64(got))
	if ctx.Err() == nil {
		w.stats.requests++
		w.stats.errors++
	}
}

// postAnswer reads the per-event results of a synchronous POST (decoded
// with capsule.Decode: encoding/json's reflection was an eighth of
// bench's CPU in POST mode).
func (w *worker) postAnswer(body []byte) {
	events, ok := answerEvents(body)
	if !ok || len(events) != len(w.seqs) {
		// A 400 for the whole request (malformed): nothing was taken.
		w.stats.refused += int64(len(w.seqs))
		w.live.failed.Add(int64(len(w.seqs)))
		return
	}
	for _, e := range events {
		m, _ := e.(map[string]any)
		n, _ := m["index"].(json.Number)
		index, err := n.Int64()
		if err != nil || index < 0 || index >= int64(len(w.seqs)) {
			continue
		}
		w.tr.accept(w.seqs[index])
		w.stats.accepted++
		bad := m["status"] != "accepted"
		if bad {
			w.stats.answeredBad++
		}
		if bad != w.invalid[index] {
			w.stats.misjudged++
		}
	}
	w.live.accepted.Add(int64(len(events)))
}

// answerEvents returns the "events" array of a POST's answer; false when
// the answer is not an object with one.
func answerEvents(body []byte) ([]any, bool) {
	v, err := capsule.Decode(body)
	if err != nil {
		return nil, false
	}
	m, _ := v.(map[string]any)
	events, ok := m["events"].([]any)
	return events, ok
}

// appendURIComponent percent-encodes s as JavaScript's encodeURIComponent
// does (what the browser client sends): all but A-Z a-z 0-9 - _ . ! ~ * ' ( ).
func appendURIComponent(dst, s []byte) []byte {
	const hexDigits = "0123456789ABCDEF"
	for _, c := range s {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
			dst = append(dst, c)
		case c == '-' || c == '_' || c == '.' || c == '!' || c == '~' || c == '*' || c == '\'' || c == '(' || c == ')':
			dst = append(dst, c)
		default:
			dst = append(dst, '%', hexDigits[c>>4], hexDigits[c&15])
		}
	}
	return dst
}
