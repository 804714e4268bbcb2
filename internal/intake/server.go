package intake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/lineformat"
	"github.com/eventlogging/eventlogging/internal/process"
)

// Config tunes the intake. Zero values are documented per field.
type Config struct {
	// RawTopic receives beacons and hasty POSTs; default eventlogging-client-side.
	RawTopic string
	// RecvFrom names this intake in raw records and uuids; default host:pid.
	RecvFrom string
	// MaxURLLength answers 414 for longer beacon URLs; default 2000 (the
	// browser client's limit).
	MaxURLLength int
	// MaxBodyBytes answers 413 for larger POST bodies; default 4 MiB.
	MaxBodyBytes int64
	// MaxBatchEvents answers 413 for POSTed arrays with more events; default 1000.
	MaxBatchEvents int
	// MaxEventBytes answers 413 for a beacon or hasty event whose raw line
	// (the event URL-encoded, with the intake's fields) would be larger:
	// the processor would refuse it, and it might not fit a Kafka record.
	// Default process.DefaultMaxEventBytes, the processor's own limit.
	MaxEventBytes int
	// CORSOrigin is sent as Access-Control-Allow-Origin; default "*".
	CORSOrigin string
	// TrustedProxies may set X-Forwarded-For; default none (the socket
	// address is the client IP).
	TrustedProxies []netip.Prefix
	// DropClientIP keeps client IPs out of raw records ("-" instead), for
	// the drop IP policy.
	DropClientIP bool
	// AckAfterKafka answers beacons and hasty POSTs only once Kafka
	// acknowledged their records (or the spool holds them), instead of once
	// they are in the producer buffer: an intake crash then loses no
	// answered event.
	AckAfterKafka bool
	// RetryAfter is sent with 503 answers; default 30s.
	RetryAfter time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
	// Metrics counts received and refused events; nil counts nothing.
	Metrics *Metrics
}

// Validator is the processing function the synchronous POST uses.
type Validator interface {
	ProcessEvent(ctx context.Context, event []byte, m process.Meta, out []process.Output) ([]process.Output, process.Result)
}

// Streams is the stream configuration served to clients (may be nil).
type Streams interface {
	List() []process.Stream
}

// Server serves the intake's HTTP API.
type Server struct {
	cfg     Config
	w       *Writer
	val     Validator
	streams Streams
	log     *slog.Logger
	seq     atomic.Int64
	mux     *http.ServeMux
	refusal logThrottle // one "refusing events" line per interval
	cors    []string    // the Access-Control-Allow-Origin value, shared (see headerValue)
}

// headerValue is a header's value for rw.Header()[key] = v, shared by every
// response instead of Header().Set's allocation each time. Its capacity is
// its length, so a later Header().Add on the same key copies rather than
// writes into it; net/http only reads it.
func headerValue(v string) []string { return []string{v}[:1:1] }

// jsonContentType is the Content-Type of the JSON answers.
var jsonContentType = headerValue("application/json")

// NewServer builds the handlers; it starts nothing.
func NewServer(w *Writer, val Validator, streams Streams, cfg Config) (*Server, error) {
	if w == nil || val == nil {
		return nil, errors.New("intake: nil writer or validator")
	}
	if cfg.RawTopic == "" {
		cfg.RawTopic = capsule.TopicClientSide
	}
	if !capsule.ValidTopicName(cfg.RawTopic) {
		return nil, fmt.Errorf("intake: raw topic %q is not a valid topic name", cfg.RawTopic)
	}
	if cfg.RecvFrom == "" {
		host, _ := os.Hostname()
		cfg.RecvFrom = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	cfg.RecvFrom = strings.Map(func(r rune) rune {
		if r <= ' ' || r == 0x7f {
			return '_'
		}
		return r
	}, cfg.RecvFrom)
	if cfg.MaxURLLength <= 0 {
		cfg.MaxURLLength = 2000
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 4 << 20
	}
	if cfg.MaxBatchEvents <= 0 {
		cfg.MaxBatchEvents = 1000
	}
	if cfg.MaxEventBytes <= 0 {
		cfg.MaxEventBytes = process.DefaultMaxEventBytes
	}
	if cfg.CORSOrigin == "" {
		cfg.CORSOrigin = "*"
	}
	if cfg.RetryAfter <= 0 {
		cfg.RetryAfter = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, w: w, val: val, streams: streams, log: cfg.Logger, mux: http.NewServeMux(), refusal: logThrottle{every: 10 * time.Second}, cors: headerValue(cfg.CORSOrigin)}
	for _, p := range []string{"/beacon/event", "/beacon/event.gif", "/event.gif"} {
		s.mux.HandleFunc("GET "+p, s.beacon)
	}
	s.mux.HandleFunc("POST /v1/events", s.events)
	s.mux.HandleFunc("OPTIONS /v1/events", s.preflight)
	s.mux.HandleFunc("GET /v1/streams", s.streamConfig)
	s.mux.HandleFunc("GET /static/eventlogging.js", clientScript) // the browser client (static.go)
	s.mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(rw, "ok\n") })
	s.mux.HandleFunc("GET /readyz", s.ready)
	return s, nil
}

// ServeHTTP answers every request; a panic in a handler becomes a 500 and a
// log line, never a dead process.
func (s *Server) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler { //nolint:errorlint // sentinel compared as net/http does
				panic(p)
			}
			s.log.Error("handler panic", "path", r.URL.Path, "panic", fmt.Sprint(p))
			writeError(rw, http.StatusInternalServerError, "internal error")
		}
	}()
	rw.Header()["Access-Control-Allow-Origin"] = s.cors
	s.mux.ServeHTTP(rw, r)
}

// RecvFrom is the name this intake writes into raw records.
func (s *Server) RecvFrom() string { return s.cfg.RecvFrom }

// beacon: GET /beacon/event?<url-encoded JSON capsule>;
func (s *Server) beacon(rw http.ResponseWriter, r *http.Request) {
	m := s.cfg.Metrics
	m.receive("beacon", 1)
	if len(r.RequestURI) > s.cfg.MaxURLLength {
		m.reject("beacon", reasonTooLarge, 1)
		writeError(rw, http.StatusRequestURITooLong, fmt.Sprintf("beacon URL of %d characters exceeds the %d-character limit", len(r.RequestURI), s.cfg.MaxURLLength))
		return
	}
	q := r.URL.RawQuery
	if q == "" || q == ";" {
		m.reject("beacon", reasonMalformed, 1)
		writeError(rw, http.StatusBadRequest, "empty beacon: send /beacon/event?<url-encoded JSON>;")
		return
	}
	line := lineformat.AppendRawLine(make([]byte, 0, len(q)+128), []byte(q), s.cfg.RecvFrom, s.seq.Add(1), time.Now(), s.ip(r), r.UserAgent())
	if len(line) > s.cfg.MaxEventBytes { // a user agent of a megabyte
		m.reject("beacon", reasonTooLarge, 1)
		writeError(rw, http.StatusRequestEntityTooLarge, fmt.Sprintf("beacon's raw record of %d bytes (the event with the user agent and the intake's fields) exceeds the %d-byte limit", len(line), s.cfg.MaxEventBytes))
		return
	}
	if err := s.async(r.Context(), []kafka.Message{{Topic: s.cfg.RawTopic, Value: line}}); err != nil {
		s.refuse(rw, r, "beacon", 1, err)
		return
	}
	rw.WriteHeader(http.StatusNoContent)
}

func (s *Server) ip(r *http.Request) string {
	if s.cfg.DropClientIP {
		return ""
	}
	return clientIP(r, s.cfg.TrustedProxies)
}

func (s *Server) preflight(rw http.ResponseWriter, _ *http.Request) {
	h := rw.Header()
	h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Content-Type")
	h.Set("Access-Control-Max-Age", "86400")
	rw.WriteHeader(http.StatusNoContent)
}

// EventResult is one event's entry in a POST answer.
type EventResult struct {
	Index  int    `json:"index"`
	Status string `json:"status"` // "accepted" or "invalid"
	// UUID is what the event is stored under, as it is stored, so that a
	// client can look it up: an accepted legacy event's capsule uuid (32
	// hex digits, the sinks' uuid column), an accepted Event Platform
	// event's meta.id (the sinks' uuid column too: the client's own, or
	// the intake's in RFC 4122 form with dashes, as EventGate writes it);
	// for an event found invalid, the uuid of its EventError (32 hex
	// digits); an event whose record Kafka refused keeps its own.
	// The forms differ because the stored values do: a uuid rewritten to
	// one form would not find an Event Platform event. Empty when the
	// processor gives none (process.Result.UUID: an element that is not
	// a JSON object).
	UUID    string              `json:"uuid,omitempty"`
	Topic   string              `json:"topic,omitempty"`
	Code    string              `json:"code,omitempty"`
	Message string              `json:"message,omitempty"`
	Errors  []capsule.Violation `json:"errors,omitempty"`
}

// PostResponse is the body of a synchronous POST answer.
type PostResponse struct {
	Accepted int           `json:"accepted"`
	Invalid  int           `json:"invalid"`
	Events   []EventResult `json:"events"`
}

// events: POST /v1/events with one JSON event or an array of events.
func (s *Server) events(rw http.ResponseWriter, r *http.Request) {
	m := s.cfg.Metrics
	route := "post"
	if r.URL.RawQuery != "" { // most POSTs have none: no map to parse
		if hasty, _ := strconv.ParseBool(r.URL.Query().Get("hasty")); hasty {
			route = "hasty"
		}
	}
	if ct := r.Header.Get("Content-Type"); !jsonOrText(ct) {
		writeError(rw, http.StatusUnsupportedMediaType, fmt.Sprintf("content type %q: send application/json or text/plain", ct))
		return
	}
	// The body and the records' values are in pooled buffers, returned
	// when the handler ends: by then every record is acknowledged, failed
	// or spooled (a copy), and the answer is written.
	bodyBuf := getBuf(bodyReadSize(r, s.cfg.MaxBodyBytes))
	defer putBuf(bodyBuf)
	ps := postScratches.Get().(*postScratch)
	defer ps.release()
	body, err := readBody(rw, r, s.cfg.MaxBodyBytes, bodyBuf.b)
	bodyBuf.b = body
	if err != nil {
		var tooBig *http.MaxBytesError
		m.receive(route, 1)
		if errors.As(err, &tooBig) {
			m.reject(route, reasonTooLarge, 1)
			writeError(rw, http.StatusRequestEntityTooLarge, fmt.Sprintf("body exceeds the %d-byte limit", s.cfg.MaxBodyBytes))
			return
		}
		m.reject(route, reasonMalformed, 1)
		writeError(rw, http.StatusBadRequest, "reading body: "+err.Error())
		return
	}
	events, status, msg := s.split(body, ps.events[:0])
	ps.events = events
	if status != 0 {
		m.receive(route, 1)
		reason := reasonMalformed
		if status == http.StatusRequestEntityTooLarge {
			reason = reasonTooLarge
		}
		m.reject(route, reason, 1)
		writeError(rw, status, msg)
		return
	}
	m.receive(route, len(events))
	if route == "hasty" {
		s.hasty(rw, r, events)
		return
	}
	// The events of a request share its client IP: hashed once (IPMemo).
	// Their records' values go in one arena (Meta.Arena), about the size
	// of the events and the fields the server adds; a pooled one at most
	// (it grows as values are appended, if need be).
	size := 0
	for _, ev := range events {
		size += len(ev) + 256
	}
	arena := getBuf(min(size, maxPooledBuf))
	defer putBuf(arena)
	meta := process.Meta{RecvFrom: s.cfg.RecvFrom, Received: time.Now(), ClientIP: s.ip(r), UserAgent: r.UserAgent(), IPMemo: &ps.memo, Arena: &arena.b}
	resp := PostResponse{Events: ps.resultsFor(len(events))}
	// Room for each event's topic and the mixed topic.
	outs := ps.outs[:0]
	if cap(outs) < 2*len(events) {
		outs = make([]process.Output, 0, 2*len(events))
	}
	defer func() { ps.outs = outs }()
	firstOut := ps.firstOuts(len(events)) // each event's first output
	errBudget := MaxAnswerErrorBytes
	for i, ev := range events {
		meta.SeqID = s.seq.Add(1)
		var res process.Result
		firstOut[i] = len(outs)
		outs, res = s.val.ProcessEvent(r.Context(), ev, meta, outs)
		er := EventResult{Index: i, UUID: res.UUID}
		if res.Valid() {
			resp.Accepted++
			er.Status, er.Topic = "accepted", res.Topic
		} else {
			resp.Invalid++
			er.Status, er.Code, er.Message, er.Errors = "invalid", res.Code, res.Message, res.Errors
			// Each event's violations are bounded (capsule.MaxViolations,
			// cut texts); the answer is too: past MaxAnswerErrorBytes of
			// violations, invalid events get their code and a short
			// message only.
			if n := answerSize(&er); n <= errBudget {
				errBudget -= n
			} else {
				er.Errors, er.Message = nil, capsule.Truncate(er.Message, shortMessageBytes)
			}
		}
		resp.Events[i] = er
	}
	// Valid events and the EventErrors of invalid ones are acknowledged
	// (acks=all) or spooled before the answer.
	refused, err := s.w.Deliver(r.Context(), outs)
	if err != nil {
		s.refuse(rw, r, route, len(events), err)
		return
	}
	if refused != nil {
		s.refused(r.Context(), &resp, outs, refused, firstOut)
	}
	m.reject(route, reasonInvalid, resp.Invalid)
	code := http.StatusCreated
	switch {
	case resp.Accepted == 0:
		code = http.StatusBadRequest
	case resp.Invalid > 0:
		code = http.StatusMultiStatus
	}
	// Every record is acknowledged or spooled: the arena is free again,
	// for the answer.
	writePost(rw, code, &resp, arena.b[:0])
}

// MaxAnswerErrorBytes bounds the violations and messages a synchronous
// POST's answer lists (about 1 MiB); events past it are answered with
// their status, code and a message of at most shortMessageBytes. With
// MaxBatchEvents, the whole answer stays below 1 MiB + 400 bytes an event.
const MaxAnswerErrorBytes = 1 << 20

// shortMessageBytes bounds an invalid event's message past the budget.
const shortMessageBytes = 160

// answerSize is about what er's message and violations add to an answer
// (JSON escapes of up to 6 bytes a byte counted as they are found).
func answerSize(er *EventResult) int {
	n := jsonLen(er.Message)
	for _, v := range er.Errors {
		n += jsonLen(v.Pointer) + jsonLen(v.Reason) + 24
	}
	return n
}

// jsonLen is the length of s as a JSON string in an answer.
func jsonLen(s string) int {
	n := len(s) + 2
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			n += 5
		}
	}
	return n
}

// jsonOrText reports whether a POST's Content-Type is accepted: none,
// application/json or text/plain, with any parameters. The common exact
// values are matched without mime.ParseMediaType's allocation.
func jsonOrText(ct string) bool {
	switch ct {
	case "", "application/json", "text/plain", "application/json; charset=utf-8", "text/plain;charset=UTF-8":
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || mt == "text/plain")
}

// readBody reads r's body, of at most limit bytes, into one buffer of the
// size the request declares (Content-Length, within the limit), where
// io.ReadAll would start at 512 bytes and grow, copying, five times for a
// 10-event POST of real-sized events. A body longer than its
// Content-Length is cut there by net/http; one without grows as needed.
// At most readAhead bytes are taken on the declaration's word: a client
// that declares megabytes and sends them slowly, or never, holds no more
// memory than it has sent.
//
// The body goes into b (its length is ignored; it grows if the body does
// not fit), or, when b is nil, into a new buffer of bodyReadSize.
func readBody(rw http.ResponseWriter, r *http.Request, limit int64, b []byte) ([]byte, error) {
	rd := http.MaxBytesReader(rw, r.Body, limit)
	if b == nil {
		b = make([]byte, 0, bodyReadSize(r, limit))
	}
	b = b[:0]
	for {
		n, err := rd.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// bodyReadSize is the buffer readBody starts with for r.
func bodyReadSize(r *http.Request, limit int64) int {
	if n := r.ContentLength; n > 0 {
		return int(min(n, limit, readAhead)) + 1 // + 1: room to read the end
	}
	return 512
}

// readAhead bounds the buffer readBody allocates before the bytes arrive.
const readAhead = 64 << 10

// refused marks the events whose records Kafka refused for good (their
// outputs in outs, refused[i] the error of outs[i]; firstOut[e] is event
// e's first output) as invalid in resp: an event is answered accepted only
// if it will be stored. Where the refused record is a valid event's, its
// EventError (saying why) is delivered in its place.
func (s *Server) refused(ctx context.Context, resp *PostResponse, outs []process.Output, refused kafka.Outcome, firstOut []int) {
	var errs []process.Output
	for e := range resp.Events {
		end := len(outs)
		if e+1 < len(firstOut) {
			end = firstOut[e+1]
		}
		er := &resp.Events[e]
		for i := firstOut[e]; i < end; i++ {
			// Only the event's own topic counts: the sinks read it
			// (not the mixed topic), and an invalid event's output
			// is its EventError.
			if refused[i] == nil || outs[i].Topic != er.Topic {
				continue
			}
			if er.Status == "accepted" {
				resp.Accepted--
				resp.Invalid++
				er.Status, er.Topic = "invalid", ""
				er.Code = capsule.CodeProcessor
				er.Message = capsule.Truncate("Kafka refused the event's record: "+refused[i].Error(), capsule.MaxReasonBytes)
				if ee, ok := s.refusedError(outs[i], refused[i]); ok {
					errs = append(errs, ee)
				}
			}
			break
		}
	}
	if len(errs) > 0 {
		if _, err := s.w.Deliver(ctx, errs); err != nil {
			s.log.Warn("the EventErrors of records Kafka refused were not written", "records", len(errs), "err", err)
		}
	}
}

// refusedError is the EventError of a record Kafka refused, when the
// validator makes them (the processor does).
func (s *Server) refusedError(m process.Output, err error) (process.Output, bool) {
	if rv, ok := s.val.(interface {
		Refused(process.Output, error) (process.Output, bool)
	}); ok {
		return rv.Refused(m, err)
	}
	return process.Output{}, false
}

// errRefusedRecords is async's error when Kafka refused records of a
// beacon or hasty POST for good (with AckAfterKafka).
var errRefusedRecords = errors.New("kafka refused the record")

// async writes the records of a beacon or hasty POST: into the producer
// buffer, or, with AckAfterKafka, until Kafka acknowledged them.
func (s *Server) async(ctx context.Context, msgs []kafka.Message) error {
	if s.cfg.AckAfterKafka {
		refused, err := s.w.Deliver(ctx, msgs)
		if err == nil && refused != nil {
			return fmt.Errorf("%w: %w", errRefusedRecords, refused.First())
		}
		return err
	}
	return s.w.Enqueue(msgs)
}

// hasty takes the raw path: each event becomes one raw record; 202.
func (s *Server) hasty(rw http.ResponseWriter, r *http.Request, events [][]byte) {
	now, ip, ua := time.Now(), s.ip(r), r.UserAgent()
	msgs := make([]kafka.Message, len(events))
	for i, ev := range events {
		q := lineformat.AppendQueryEscape(make([]byte, 0, len(ev)*2), ev)
		msgs[i] = kafka.Message{Topic: s.cfg.RawTopic, Value: lineformat.AppendRawLine(make([]byte, 0, len(q)+128), q, s.cfg.RecvFrom, s.seq.Add(1), now, ip, ua)}
		if n := len(msgs[i].Value); n > s.cfg.MaxEventBytes {
			// Refused before anything is produced or spooled: the
			// processor would refuse it, and Kafka might.
			s.cfg.Metrics.reject("hasty", reasonTooLarge, len(events))
			writeError(rw, http.StatusRequestEntityTooLarge, fmt.Sprintf("event %d: its raw record of %d bytes (the event URL-encoded, with the intake's fields) exceeds the %d-byte limit; send it without ?hasty=true for a per-event answer", i, n, s.cfg.MaxEventBytes))
			return
		}
	}
	if err := s.async(r.Context(), msgs); err != nil {
		s.refuse(rw, r, "hasty", len(events), err)
		return
	}
	writeJSON(rw, http.StatusAccepted, map[string]int{"queued": len(events)})
}

// split checks a POST body and returns its events as JSON texts, or an HTTP
// status and message for a body that is not one event or an array of them.
func (s *Server) split(body []byte, dst [][]byte) ([][]byte, int, string) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, http.StatusBadRequest, "empty body: send one JSON event or an array of events"
	}
	// Each event is decoded once, by the processor: here the body is only
	// checked and split into the events' own bytes, in one pass.
	top, events, count, ok := scanBody(body, capsule.MaxDecodeDepth, s.cfg.MaxBatchEvents, dst)
	if !ok {
		return nil, http.StatusBadRequest, whyRefused(body)
	}
	switch top {
	case '{':
		return append(dst[:0], body), 0, ""
	case '[':
		if count == 0 {
			return nil, http.StatusBadRequest, "empty array: send at least one event"
		}
		if count > s.cfg.MaxBatchEvents {
			return nil, http.StatusRequestEntityTooLarge, fmt.Sprintf("%d events in one request exceed the limit of %d", count, s.cfg.MaxBatchEvents)
		}
		return events, 0, ""
	default:
		return nil, http.StatusBadRequest, "body must be a JSON object (one event) or an array of events"
	}
}

// whyRefused says why scanBody did not take body, in the words of the
// checks it does in one pass, in their order: UTF-8, nesting deeper than
// the processor's decoder takes, JSON syntax.
func whyRefused(body []byte) string {
	if !utf8.Valid(body) {
		return "body is not valid UTF-8"
	}
	if nesting(body) > capsule.MaxDecodeDepth {
		return fmt.Sprintf("body is not valid JSON: exceeded maximum nesting depth of %d", capsule.MaxDecodeDepth)
	}
	return "body is not valid JSON: " + jsonError(body)
}

// jsonStrings follows a scan of JSON text through its strings.
type jsonStrings struct{ in, escaped bool }

// step takes the next byte c and reports whether it belongs to a string,
// its quotes included.
func (s *jsonStrings) step(c byte) bool {
	switch {
	case s.in:
		switch {
		case s.escaped:
			s.escaped = false
		case c == '\\':
			s.escaped = true
		case c == '"':
			s.in = false
		}
		return true
	case c == '"':
		s.in = true
		return true
	}
	return false
}

// nesting returns the deepest nesting of arrays and objects in b (JSON
// text), counting brackets outside strings; it stops counting past
// capsule.MaxDecodeDepth.
func nesting(b []byte) int {
	var str jsonStrings
	depth, deepest := 0, 0
	for _, c := range b {
		if str.step(c) {
			continue
		}
		switch c {
		case '[', '{':
			depth++
			if depth > deepest {
				deepest = depth
				if deepest > capsule.MaxDecodeDepth {
					return deepest
				}
			}
		case ']', '}':
			depth--
		}
	}
	return deepest
}

// jsonError says why b is not valid JSON.
func jsonError(b []byte) string {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err.Error()
	}
	return "invalid JSON"
}

func (s *Server) streamConfig(rw http.ResponseWriter, _ *http.Request) {
	var list []process.Stream
	if s.streams != nil {
		list = s.streams.List()
	}
	if list == nil {
		list = []process.Stream{}
	}
	writeJSON(rw, http.StatusOK, map[string]any{"streams": list})
}

func (s *Server) ready(rw http.ResponseWriter, r *http.Request) {
	if err := s.w.Ready(r.Context()); err != nil {
		writeError(rw, http.StatusServiceUnavailable, "kafka not reachable: "+err.Error())
		return
	}
	_, _ = io.WriteString(rw, "ready\n")
}

// refuse answers events that could not be written: 503 with Retry-After,
// unless the client went away while they were being written (its request
// context ended): that is no refusal and no sign of overload, only counted
// (reason client_gone) and logged at debug level.
func (s *Server) refuse(rw http.ResponseWriter, r *http.Request, route string, n int, err error) {
	if errors.Is(err, errRefusedRecords) {
		// Kafka is up and refuses these records for good: a retry would
		// be refused too, so no 503.
		s.cfg.Metrics.reject(route, reasonTooLarge, n)
		writeError(rw, http.StatusUnprocessableEntity, capsule.Truncate(err.Error(), capsule.MaxMessageBytes))
		return
	}
	if r.Context().Err() != nil && errors.Is(err, r.Context().Err()) {
		s.cfg.Metrics.reject(route, reasonClientGone, n)
		s.log.Debug("client disconnected before its events were acknowledged", "route", route, "events", n)
		return
	}
	s.cfg.Metrics.reject(route, reasonOverload, n)
	s.unavailable(rw, err)
}

func (s *Server) unavailable(rw http.ResponseWriter, err error) {
	if ok, held := s.refusal.allow(time.Now()); ok {
		s.log.Warn("refusing events (503); logged at most every 10s", "err", err, "refused_since_last_line", held)
	}
	rw.Header().Set("Retry-After", strconv.Itoa(int(s.cfg.RetryAfter/time.Second)))
	writeError(rw, http.StatusServiceUnavailable, "cannot accept events now; retry later")
}

func writeJSON(rw http.ResponseWriter, code int, v any) {
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(code)
	_ = json.NewEncoder(rw).Encode(v)
}

// writeError is the one place HTTP errors are written: {"error": "..."}.
func writeError(rw http.ResponseWriter, code int, msg string) {
	writeJSON(rw, code, map[string]any{"status": code, "error": msg})
}
