package dashboard

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/eventlogging/eventlogging/internal/inspect"
)

// Backend is what the dashboard reads. Its methods are called
// concurrently, one call per page or API request; ctx carries that
// request's deadline (a couple of seconds) and is cancelled when the
// client goes away.
type Backend interface {
	// Overview is the pipeline at a glance.
	Overview(ctx context.Context) (inspect.Overview, error)
	// Schemas lists the registry's subjects.
	Schemas(ctx context.Context) ([]inspect.SchemaSummary, error)
	// Schema is one subject with every version; an error wrapping
	// inspect.ErrNotFound when there is no such subject.
	Schema(ctx context.Context, name string) (inspect.SchemaDetail, error)
	// Errors reads EventErrors, newest first.
	Errors(ctx context.Context, f inspect.ErrorFilter) ([]inspect.ErrorRecord, error)
	// Replay re-submits the EventErrors with these uuids to the raw topic.
	Replay(ctx context.Context, uuids []string, opt inspect.ReplayOptions) (inspect.ReplayResult, error)
	// Topics lists the topics that can be tailed.
	Topics(ctx context.Context) ([]string, error)
	// Tail calls fn for each record of topic produced after Tail started,
	// until ctx is done or fn returns an error; fn must not block for
	// long. fn is called from one goroutine at a time and may keep the
	// event (its Value must not be reused). Tail returns once it no
	// longer calls fn; an error wrapping inspect.ErrNotFound when the
	// topic does not exist.
	Tail(ctx context.Context, topic string, fn func(inspect.TailEvent) error) error
}

// Config tunes a Handler; the zero value of each field is documented.
type Config struct {
	// Prefix is the path the handler is mounted at, e.g. "/dashboard"
	// (links are built with it); "" for the root. A trailing slash is
	// ignored.
	Prefix string
	// Logger receives backend failures; nil discards.
	Logger *slog.Logger
	// TailBuffer bounds the live-tail frames queued per client (default
	// 256); when full, frames are dropped and counted, never buffered
	// without bound.
	TailBuffer int
	// Stop, when closed, ends every live tail (server shutdown does not
	// cancel the requests of long-lived streams); nil: they end with their
	// requests only.
	Stop <-chan struct{}
	// Now is the clock for ages shown on pages; nil means time.Now.
	Now func() time.Time
}

// Limits and timings.
const (
	defaultTailBuffer = 256
	// backendTimeout bounds each backend call of a page or API request.
	backendTimeout = 2 * time.Second
	// replayTimeout bounds a replay, which produces to Kafka and waits
	// up to replayWait for the processors' outcomes.
	replayTimeout = 15 * time.Second
	replayWait    = 5 * time.Second
	// heartbeatEvery is how often an idle live tail sends a comment, so
	// that proxies keep the connection open.
	heartbeatEvery = 15 * time.Second
	// dropReportEvery is how often a live tail reports its dropped count
	// when it changed.
	dropReportEvery = time.Second
	// tailWriteTimeout bounds one write to a live-tail client; a client
	// that reads nothing for that long is disconnected.
	tailWriteTimeout = 30 * time.Second
	// errorsLimit is how many EventErrors the errors page shows.
	errorsLimit = 100
	// maxErrorsLimit caps ?limit= of /api/errors, and is how far back
	// /errors/{uuid} looks for its record.
	maxErrorsLimit = 1000
	// maxReplayUUIDs caps the uuids of one replay request.
	maxReplayUUIDs = 1000
	// maxReplayBody caps a replay request body.
	maxReplayBody = 1 << 20
)

// Handler serves the dashboard pages, the JSON API and the static assets.
// Mount it with http.StripPrefix(cfg.Prefix, h). It is safe for
// concurrent use; each live-tail request runs one Backend.Tail for as long
// as the client stays connected.
type Handler struct {
	b       Backend
	prefix  string
	log     *slog.Logger
	now     func() time.Time
	tailBuf int
	stop    <-chan struct{}

	tmpl   *template.Template
	static map[string]staticFile
	mux    *http.ServeMux
	// csrf refuses cross-site browser requests to replay (a form on
	// another site posting here).
	csrf *http.CrossOriginProtection

	// Live-tail timings; tests shorten them.
	heartbeat  time.Duration
	dropReport time.Duration
	// onQueued, when set (by tests), observes the queue length after each
	// frame a live tail queues.
	onQueued func(queued int)
}

// New returns the dashboard handler reading from b. It starts nothing.
func New(b Backend, cfg Config) (*Handler, error) {
	if b == nil {
		return nil, errors.New("dashboard: nil backend")
	}
	prefix := strings.TrimSuffix(cfg.Prefix, "/")
	if prefix != "" && (!strings.HasPrefix(prefix, "/") || strings.ContainsAny(prefix, "?#\"'<> ")) {
		return nil, fmt.Errorf("dashboard: prefix %q is not an absolute URL path", cfg.Prefix)
	}
	if cfg.TailBuffer < 0 {
		return nil, fmt.Errorf("dashboard: negative tail buffer %d", cfg.TailBuffer)
	}
	h := &Handler{
		b:          b,
		prefix:     prefix,
		log:        cfg.Logger,
		now:        cfg.Now,
		tailBuf:    cfg.TailBuffer,
		stop:       cfg.Stop,
		heartbeat:  heartbeatEvery,
		dropReport: dropReportEvery,
		csrf:       http.NewCrossOriginProtection(),
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.tailBuf == 0 {
		h.tailBuf = defaultTailBuffer
	}
	var err error
	if h.static, err = loadStatic(); err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	if h.tmpl, err = h.parseTemplates(); err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	h.mux = h.routes()
	return h, nil
}

// routes maps the paths (relative to the prefix) to their handlers.
func (h *Handler) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", h.overviewPage)
	mux.HandleFunc("GET /schemas", h.schemasPage)
	mux.HandleFunc("GET /schemas/{name}", h.schemaPage)
	mux.HandleFunc("GET /errors", h.errorsPage)
	mux.HandleFunc("GET /errors/{uuid}", h.errorPage)
	mux.HandleFunc("GET /tail", h.tailPage)
	mux.HandleFunc("GET /static/{file}", h.serveStatic)

	mux.HandleFunc("GET /api/overview", h.apiOverview)
	mux.HandleFunc("GET /api/schemas", h.apiSchemas)
	mux.HandleFunc("GET /api/schemas/{name}", h.apiSchema)
	mux.HandleFunc("GET /api/errors", h.apiErrors)
	mux.HandleFunc("GET /api/topics", h.apiTopics)
	mux.HandleFunc("GET /api/tail", h.apiTail)
	mux.HandleFunc("POST /api/replay", h.apiReplay)
	mux.HandleFunc("/api/replay", func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Allow", http.MethodPost)
		writeJSON(rw, http.StatusMethodNotAllowed, apiError{Error: "replay takes a POST"})
	})

	mux.HandleFunc("/api/", h.apiNotFound)
	mux.HandleFunc("/", h.notFoundPage)
	return mux
}

// ServeHTTP sets the security headers and routes the request.
func (h *Handler) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	hd := rw.Header()
	hd.Set("Content-Security-Policy", "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	if r.URL.Path == "" {
		// "/dashboard" without the slash, after StripPrefix.
		http.Redirect(rw, r, h.prefix+"/", http.StatusMovedPermanently)
		return
	}
	h.mux.ServeHTTP(rw, r)
}

// getOnly reports whether r's path is a page or an API endpoint that only
// GET (and HEAD) reach, r's method being another: the catch-all routes then
// answer 405 with an Allow header, not 404.
func (h *Handler) getOnly(rw http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return false
	}
	get := &http.Request{Method: http.MethodGet, URL: r.URL, Host: r.Host, Header: http.Header{}}
	if _, pattern := h.mux.Handler(get); pattern == "/" || pattern == "/api/" || pattern == "" {
		return false
	}
	rw.Header().Set("Allow", "GET, HEAD")
	return true
}

// backendCtx bounds one request's backend calls.
func backendCtx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), backendTimeout)
}

// statusOf maps a backend or request error to the HTTP status that
// reports it: the one place that does.
func statusOf(err error) int {
	var be badRequestError
	switch {
	case errors.As(err, &be):
		return http.StatusBadRequest
	case errors.Is(err, inspect.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	default:
		return http.StatusBadGateway
	}
}

// describe is the text shown for an error: the backend's own words, and
// what a timeout means.
func describe(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("the backend did not answer within %s: %v", backendTimeout, err)
	}
	return err.Error()
}

// badRequestError is a request the dashboard cannot answer as asked: a
// malformed query parameter or body.
type badRequestError struct{ msg string }

func (e badRequestError) Error() string { return e.msg }

func badRequestf(format string, args ...any) error {
	return badRequestError{msg: fmt.Sprintf(format, args...)}
}

// logFailure records a failed backend call; client mistakes and missing
// records are not worth a line.
func (h *Handler) logFailure(r *http.Request, op string, err error) {
	if st := statusOf(err); st == http.StatusBadRequest || st == http.StatusNotFound {
		return
	}
	if r.Context().Err() != nil {
		return // the client left
	}
	h.log.Warn("dashboard backend call failed", "op", op, "path", r.URL.Path, "err", err)
}
