package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config tunes a Client. Zero values are documented per field.
type Config struct {
	// HTTPClient sends the batches. Default: a client of its own with a 10 s
	// timeout per request, whose idle connections Close closes.
	HTTPClient *http.Client
	// Wiki and WebHost are set on the capsules of Log when not empty.
	Wiki, WebHost string
	// QueueSize bounds the events waiting to be sent (besides the batch in
	// flight); past it Log and Submit return ErrQueueFull. Default 10,000.
	QueueSize int
	// BatchSize is the most events in one POST; default 500 (the intake
	// takes up to intake.max_batch_events, 1,000 by default).
	BatchSize int
	// FlushInterval is how long a queued event may wait for a fuller batch;
	// default 1 s.
	FlushInterval time.Duration
	// MinBackoff is the wait after the first failed attempt; it doubles
	// (with jitter) for each further one up to MaxBackoff. Retry-After of a
	// 429 or 503 answer is honoured up to MaxBackoff. Defaults 100 ms and 30 s.
	MinBackoff, MaxBackoff time.Duration
	// DeliveryTimeout ends the retries of a batch this long after its first
	// attempt: its events fail with ErrDeliveryTimeout. Default 2 minutes.
	DeliveryTimeout time.Duration
	// UserAgent is sent with each request; default "eventlogging-go-client/1".
	UserAgent string
	// OnResult is called once for each event when its fate is known:
	// accepted, invalid (with the intake's reasons) or failed. It runs on
	// the client's sending goroutine, one call at a time: it must return
	// quickly and must not call Flush or Close. Default: results are only
	// counted in Stats.
	OnResult func(Result)
	// Logger receives a warning for each failed attempt; default: nothing
	// is logged.
	Logger *slog.Logger
}

// Client queues events and sends them to an intake in batches. Its methods
// are safe for concurrent use.
type Client struct {
	cfg       Config
	endpoint  string
	hc        *http.Client
	ownHC     bool
	log       *slog.Logger
	queue     chan item
	flushReq  chan struct{}
	closing   chan struct{}
	done      chan struct{}
	runCtx    context.Context
	cancelRun context.CancelFunc

	mu       sync.RWMutex // guards closed and started against Close
	closed   bool
	started  bool
	startRun sync.Once

	progressMu sync.Mutex
	progress   chan struct{} // closed and replaced whenever events are resolved

	enqueued, resolved, queueFull atomic.Uint64
	accepted, invalid, failed     atomic.Uint64
	requests, retries             atomic.Uint64

	closeOnce sync.Once
	closeWait chan struct{} // closed when the first Close returns
	closeErr  error
}

// item is one encoded event.
type item struct {
	json     []byte
	schema   string
	revision int64
	stream   string
}

// New returns a client of the intake at baseURL (e.g.
// "http://localhost:8080"); events go to baseURL + "/v1/events". It starts
// nothing: the sending goroutine starts with the first event and ends in
// Close.
func New(baseURL string, cfg Config) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("eventlogging client: base URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("eventlogging client: base URL %q: want http(s)://host[:port][/path]", baseURL)
	}
	for name, v := range map[string]int64{
		"QueueSize": int64(cfg.QueueSize), "BatchSize": int64(cfg.BatchSize), "FlushInterval": int64(cfg.FlushInterval),
		"MinBackoff": int64(cfg.MinBackoff), "MaxBackoff": int64(cfg.MaxBackoff), "DeliveryTimeout": int64(cfg.DeliveryTimeout),
	} {
		if v < 0 {
			return nil, fmt.Errorf("eventlogging client: Config.%s is negative", name)
		}
	}
	if cfg.QueueSize == 0 {
		cfg.QueueSize = 10_000
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = 500
	}
	if cfg.FlushInterval == 0 {
		cfg.FlushInterval = time.Second
	}
	if cfg.MinBackoff == 0 {
		cfg.MinBackoff = 100 * time.Millisecond
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = 30 * time.Second
	}
	cfg.MaxBackoff = max(cfg.MaxBackoff, cfg.MinBackoff)
	if cfg.DeliveryTimeout == 0 {
		cfg.DeliveryTimeout = 2 * time.Minute
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "eventlogging-go-client/1"
	}
	c := &Client{
		cfg:       cfg,
		endpoint:  u.String() + "/v1/events",
		hc:        cfg.HTTPClient,
		log:       cfg.Logger,
		queue:     make(chan item, cfg.QueueSize),
		flushReq:  make(chan struct{}, 1),
		closing:   make(chan struct{}),
		done:      make(chan struct{}),
		progress:  make(chan struct{}),
		closeWait: make(chan struct{}),
	}
	if c.hc == nil {
		tr := &http.Transport{Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true, IdleConnTimeout: 90 * time.Second}
		if def, ok := http.DefaultTransport.(*http.Transport); ok {
			tr = def.Clone()
		}
		c.hc = &http.Client{Timeout: 10 * time.Second, Transport: tr}
		c.ownHC = true
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	// The context of requests and backoffs; Close cancels it when its own
	// context ends first. WithCancel on Background starts no goroutine.
	c.runCtx, c.cancelRun = context.WithCancel(context.Background())
	return c, nil
}

// Log queues a legacy EventLogging event: the capsule {schema, revision,
// event, webHost, wiki} (Config.WebHost and Config.Wiki when set). It never
// blocks: it returns ErrQueueFull when the queue is full, ErrClosed after
// Close, ctx's error when ctx is already done, or the JSON encoding error
// of an event that cannot be encoded. Its fate is reported to
// Config.OnResult later.
func (c *Client) Log(ctx context.Context, schema string, revision int64, event map[string]any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if schema == "" {
		return errors.New("eventlogging client: Log: empty schema name")
	}
	if event == nil {
		event = map[string]any{}
	}
	b, err := json.Marshal(struct {
		Schema   string         `json:"schema"`
		Revision int64          `json:"revision"`
		Event    map[string]any `json:"event"`
		WebHost  string         `json:"webHost,omitempty"`
		Wiki     string         `json:"wiki,omitempty"`
	}{schema, revision, event, c.cfg.WebHost, c.cfg.Wiki})
	if err != nil {
		return fmt.Errorf("eventlogging client: Log %s/%d: %w", schema, revision, err)
	}
	return c.enqueue(item{json: b, schema: schema, revision: revision})
}

// Submit queues an Event Platform event for stream: a copy of event with
// meta.stream set to stream and dt set to the current time (RFC 3339, UTC)
// unless it has one. The event must name its schema in "$schema" (e.g.
// "/analytics/search_satisfaction/1.0.0"), else Submit returns
// ErrNoSchema. Otherwise it behaves as Log.
func (c *Client) Submit(ctx context.Context, stream string, event map[string]any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if stream == "" {
		return errors.New("eventlogging client: Submit: empty stream name")
	}
	if s, _ := event["$schema"].(string); s == "" {
		return fmt.Errorf("%w (Submit to stream %q)", ErrNoSchema, stream)
	}
	ev := make(map[string]any, len(event)+2)
	for k, v := range event {
		ev[k] = v
	}
	meta := map[string]any{}
	switch m := event["meta"].(type) {
	case nil:
	case map[string]any:
		for k, v := range m {
			meta[k] = v
		}
	default:
		return fmt.Errorf("eventlogging client: Submit to stream %q: meta is a %T, want an object", stream, m)
	}
	meta["stream"] = stream
	ev["meta"] = meta
	if _, ok := ev["dt"]; !ok {
		ev["dt"] = time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("eventlogging client: Submit to stream %q: %w", stream, err)
	}
	return c.enqueue(item{json: b, stream: stream})
}

func (c *Client) enqueue(it item) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return ErrClosed
	}
	// Counted before the send, so that resolved never passes enqueued.
	c.enqueued.Add(1)
	select {
	case c.queue <- it:
	default:
		c.enqueued.Add(^uint64(0))
		c.queueFull.Add(1)
		return ErrQueueFull
	}
	c.startRun.Do(func() {
		c.started = true // under RLock: Close reads it only under Lock
		go c.run()
	})
	return nil
}

// Flush sends every event queued before the call now and waits until each
// has its Result (accepted, invalid or failed), or until ctx ends, and then
// returns ctx's error. Events still being retried keep Flush waiting until
// they are delivered or reach Config.DeliveryTimeout.
func (c *Client) Flush(ctx context.Context) error {
	target := c.enqueued.Load()
	select {
	case c.flushReq <- struct{}{}:
	default: // a flush is already requested
	}
	return c.waitResolved(ctx, target)
}

// waitResolved waits until target events are resolved.
func (c *Client) waitResolved(ctx context.Context, target uint64) error {
	for {
		c.progressMu.Lock()
		ch := c.progress
		c.progressMu.Unlock()
		if c.resolved.Load() >= target {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close stops taking events (Log and Submit return ErrClosed), sends what
// is queued and waits for the sending goroutine to end. When ctx ends
// first, the request or backoff in progress is abandoned, the events not
// delivered get failed Results with ErrClosed, and Close returns ctx's
// error once the goroutine has ended. After Close no goroutine of the
// client is left and its own idle connections are closed. Calling Close
// again waits for the first call and returns its error.
func (c *Client) Close(ctx context.Context) error {
	c.closeOnce.Do(func() {
		defer close(c.closeWait)
		c.mu.Lock()
		c.closed = true
		started := c.started
		c.mu.Unlock()
		if started {
			close(c.closing)
			select {
			case <-c.done:
			case <-ctx.Done():
				c.cancelRun()
				<-c.done
				c.closeErr = ctx.Err()
			}
		}
		c.cancelRun()
		if c.ownHC {
			c.hc.CloseIdleConnections()
		}
	})
	<-c.closeWait
	return c.closeErr
}

// Stats returns the client's counters.
func (c *Client) Stats() Stats {
	enq, res := c.enqueued.Load(), c.resolved.Load()
	return Stats{
		Enqueued:  enq,
		QueueFull: c.queueFull.Load(),
		Pending:   enq - min(res, enq),
		Accepted:  c.accepted.Load(),
		Invalid:   c.invalid.Load(),
		Failed:    c.failed.Load(),
		Requests:  c.requests.Load(),
		Retries:   c.retries.Load(),
	}
}
