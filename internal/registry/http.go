package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/eventlogging/eventlogging/internal/kafka/schemalog"
)

// Media types of the API. Requests may use any of them (or none);
// answers use the first the client accepts, by default the first.
var mediaTypes = []string{
	"application/vnd.schemaregistry.v1+json",
	"application/vnd.schemaregistry+json",
	"application/json",
}

// forwardedHeader marks a request a follower forwarded, so a leader change
// in flight cannot bounce it around.
const forwardedHeader = "X-Schema-Registry-Forwarded"

// call is one request being answered.
type call struct {
	rw      http.ResponseWriter
	req     *http.Request
	ctype   string   // answer media type
	subject string   // {subject} path parameter
	version string   // {version} path parameter
	id      string   // {id} path parameter
	segs    []string // unescaped path segments
	body    []byte
}

// endpoint is one method of a route.
type endpoint struct {
	fn    func(r *Registry, c *call) error
	write bool // mutates: asks Config.Authorize, runs on the leader
	body  bool // reads a request body
}

// route maps methods to endpoints.
type route map[string]endpoint

var (
	routeRoot                 = route{http.MethodGet: {fn: (*Registry).getRoot}}
	routeSubjects             = route{http.MethodGet: {fn: (*Registry).getSubjects}}
	routeSubject              = route{http.MethodPost: {fn: (*Registry).postLookup, body: true}, http.MethodDelete: {fn: (*Registry).deleteSubjectHandler, write: true}}
	routeSubjectVersions      = route{http.MethodGet: {fn: (*Registry).getVersions}, http.MethodPost: {fn: (*Registry).postVersion, write: true, body: true}}
	routeSubjectVersion       = route{http.MethodGet: {fn: (*Registry).getVersion}, http.MethodDelete: {fn: (*Registry).deleteVersionHandler, write: true}}
	routeSubjectVersionSchema = route{http.MethodGet: {fn: (*Registry).getVersionSchema}}
	routeReferencedBy         = route{http.MethodGet: {fn: (*Registry).getReferencedBy}}
	routeSchemas              = route{http.MethodGet: {fn: (*Registry).getSchemas}}
	routeSchemaTypes          = route{http.MethodGet: {fn: (*Registry).getSchemaTypes}}
	routeSchemaByID           = route{http.MethodGet: {fn: (*Registry).getSchemaByID}}
	routeSchemaByIDSchema     = route{http.MethodGet: {fn: (*Registry).getSchemaByIDSchema}}
	routeSchemaByIDVersions   = route{http.MethodGet: {fn: (*Registry).getSchemaByIDVersions}}
	routeSchemaByIDSubjects   = route{http.MethodGet: {fn: (*Registry).getSchemaByIDSubjects}}
	routeCompatibility        = route{http.MethodPost: {fn: (*Registry).postCompatibility, body: true}}
	routeConfig               = route{http.MethodGet: {fn: (*Registry).getConfig}, http.MethodPut: {fn: (*Registry).putConfig, write: true, body: true}, http.MethodDelete: {fn: (*Registry).deleteConfig, write: true}}
	routeMode                 = route{http.MethodGet: {fn: (*Registry).getMode}, http.MethodPut: {fn: (*Registry).putMode, write: true, body: true}}
	routeSubjectMode          = route{http.MethodGet: {fn: (*Registry).getMode}, http.MethodPut: {fn: (*Registry).putMode, write: true, body: true}, http.MethodDelete: {fn: (*Registry).deleteModeHandler, write: true}}
	routeContexts             = route{http.MethodGet: {fn: (*Registry).getContexts}}
)

// apiRoots are the first path segments of the Confluent API: paths under
// them are never Event Platform $schema URIs.
var apiRoots = []string{"subjects", "schemas", "compatibility", "config", "mode", "contexts"}

// match finds the route of a path and fills the call's path parameters.
func match(c *call) route {
	s := c.segs
	if len(s) == 0 {
		return routeRoot
	}
	n := len(s)
	switch s[0] {
	case "subjects":
		if n >= 2 {
			c.subject = s[1]
		}
		switch {
		case n == 1:
			return routeSubjects
		case n == 2:
			return routeSubject
		case n == 3 && s[2] == "versions":
			return routeSubjectVersions
		case n >= 4 && s[2] == "versions":
			c.version = s[3]
			switch {
			case n == 4:
				return routeSubjectVersion
			case n == 5 && s[4] == "schema":
				return routeSubjectVersionSchema
			case n == 5 && s[4] == "referencedby":
				return routeReferencedBy
			}
		}
	case "schemas":
		switch {
		case n == 1:
			return routeSchemas
		case n == 2 && s[1] == "types":
			return routeSchemaTypes
		case n >= 3 && s[1] == "ids":
			c.id = s[2]
			switch {
			case n == 3:
				return routeSchemaByID
			case n == 4 && s[3] == "schema":
				return routeSchemaByIDSchema
			case n == 4 && s[3] == "versions":
				return routeSchemaByIDVersions
			case n == 4 && s[3] == "subjects":
				return routeSchemaByIDSubjects
			}
		}
	case "compatibility":
		if n >= 4 && s[1] == "subjects" && s[3] == "versions" {
			c.subject = s[2]
			switch n {
			case 4:
				return routeCompatibility
			case 5:
				c.version = s[4]
				return routeCompatibility
			}
		}
	case "config":
		switch n {
		case 1:
			return routeConfig
		case 2:
			c.subject = s[1]
			return routeConfig
		}
	case "mode":
		switch n {
		case 1:
			return routeMode
		case 2:
			c.subject = s[1]
			return routeSubjectMode
		}
	case "contexts":
		if n == 1 {
			return routeContexts
		}
	}
	return nil
}

// Handler returns the HTTP API. It handles paths relative to where it is
// mounted: serve it under a prefix with http.StripPrefix (the leader URL
// the Log reports must then include that prefix).
func (r *Registry) Handler() http.Handler { return http.HandlerFunc(r.serve) }

// serve answers every request; errors are written by writeError only, and
// a panic in a handler becomes a 500 and a log line.
func (r *Registry) serve(rw http.ResponseWriter, req *http.Request) {
	c := &call{rw: rw, req: req, ctype: negotiate(req.Header.Get("Accept"))}
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler { //nolint:errorlint // sentinel compared as net/http does
				panic(p)
			}
			r.log.Error("handler panic", "path", req.URL.Path, "panic", fmt.Sprint(p))
			r.writeError(c, apiErrorf(codeStore, "Internal error"))
		}
	}()
	if err := r.dispatch(c); err != nil {
		r.writeError(c, err)
	}
}

func (r *Registry) dispatch(c *call) error {
	segs, ok := splitPath(c.req.URL.EscapedPath())
	if !ok {
		return apiErrorf(codeNotFound, "HTTP 404 Not Found")
	}
	c.segs = segs
	rt := match(c)
	if rt == nil {
		if (c.req.Method == http.MethodGet || c.req.Method == http.MethodHead) && len(segs) >= 2 && !slices.Contains(apiRoots, segs[0]) {
			if err := r.waitReady(c.req.Context()); err != nil {
				return err
			}
			return r.getURI(c)
		}
		return apiErrorf(codeNotFound, "HTTP 404 Not Found")
	}
	method := c.req.Method
	if method == http.MethodHead {
		method = http.MethodGet // net/http drops the body
	}
	ep, ok := rt[method]
	if !ok {
		allow := make([]string, 0, len(rt))
		for m := range rt {
			allow = append(allow, m)
		}
		slices.Sort(allow)
		c.rw.Header().Set("Allow", strings.Join(allow, ", "))
		return apiErrorf(codeMethodNotAllowed, "HTTP 405 Method Not Allowed")
	}
	if ep.write && r.cfg.Authorize != nil {
		if err := r.cfg.Authorize(c.req); err != nil {
			var st interface{ HTTPStatus() int }
			if errors.As(err, &st) && st.HTTPStatus() == http.StatusMisdirectedRequest {
				return apiErrorf(codeMisdirected, "%s", err.Error())
			}
			return apiErrorf(codeForbidden, "%s", err.Error())
		}
	}
	if ep.body {
		if err := r.readBody(c, ep.write); err != nil {
			return err
		}
	}
	if err := r.waitReady(c.req.Context()); err != nil {
		return err
	}
	if ep.write {
		if self, leader := r.cfg.Log.Leader(); !self {
			return r.forward(c, leader)
		}
	}
	err := ep.fn(r, c)
	if ep.write && errors.Is(err, schemalog.ErrNotLeader) {
		// Leadership moved between the check and the append.
		_, leader := r.cfg.Log.Leader()
		return r.forward(c, leader)
	}
	return err
}

// splitPath splits an escaped path into unescaped segments, so an escaped
// '/' (%2F) stays inside its segment ("analytics%2Fedit_funnel"). A
// trailing slash is ignored.
func splitPath(escaped string) ([]string, bool) {
	p := strings.TrimPrefix(escaped, "/")
	if p == "" {
		return nil, true
	}
	segs := strings.Split(strings.TrimSuffix(p, "/"), "/")
	for i, s := range segs {
		if !strings.Contains(s, "%") {
			continue
		}
		u, err := url.PathUnescape(s)
		if err != nil {
			return nil, false
		}
		segs[i] = u
	}
	return segs, true
}

// negotiate picks the answer's media type from an Accept header.
func negotiate(accept string) string {
	if accept == "" {
		return mediaTypes[0]
	}
	for part := range strings.SplitSeq(accept, ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		for _, t := range mediaTypes {
			if mt == t {
				return t
			}
		}
	}
	return mediaTypes[0]
}

// readBody reads a request body of an accepted media type, up to
// MaxBodyBytes. A write must name its media type: a browser sends a body
// to another site without asking first (no CORS preflight) only with no
// Content-Type or a form or text/plain one, which are all refused.
func (r *Registry) readBody(c *call, write bool) error {
	ct := c.req.Header.Get("Content-Type")
	if ct != "" || write {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/octet-stream" && !slices.Contains(mediaTypes, mt)) {
			got := "no Content-Type"
			if ct != "" {
				got = fmt.Sprintf("Content-Type %q", ct)
			}
			return apiErrorf(codeUnsupportedMediaType, "HTTP 415 Unsupported Media Type: the request has %s; send the JSON body with Content-Type %s, %s or %s (application/octet-stream is read as JSON too)",
				got, mediaTypes[0], mediaTypes[1], mediaTypes[2])
		}
	}
	tooLarge := apiErrorf(codeBodyTooLarge, "Request body exceeds the limit of %d bytes", r.cfg.MaxBodyBytes)
	if c.req.ContentLength > r.cfg.MaxBodyBytes {
		return tooLarge
	}
	b, err := io.ReadAll(http.MaxBytesReader(c.rw, c.req.Body, r.cfg.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return tooLarge
		}
		return apiErrorf(codeBadRequest, "Reading the request body: %v", err)
	}
	c.body = b
	return nil
}

// forward sends a write to the leader and relays its answer.
func (r *Registry) forward(c *call, leaderURL string) error {
	if c.req.Header.Get(forwardedHeader) != "" {
		return apiErrorf(codeForwarding, "Error forwarding the request: it was forwarded to an instance that is not the leader")
	}
	if leaderURL == "" {
		return apiErrorf(codeUnknownLeader, "Leader is unknown: retry later")
	}
	target := strings.TrimSuffix(leaderURL, "/") + "/" + strings.TrimPrefix(c.req.URL.EscapedPath(), "/")
	if q := c.req.URL.RawQuery; q != "" {
		target += "?" + q
	}
	ctx, cancel := context.WithTimeout(c.req.Context(), r.cfg.Timeout)
	defer cancel()
	freq, err := http.NewRequestWithContext(ctx, c.req.Method, target, bytes.NewReader(c.body))
	if err != nil {
		return apiErrorf(codeForwarding, "Error forwarding the request to the leader at %s: %v", leaderURL, err)
	}
	for _, h := range []string{"Content-Type", "Accept", "Authorization"} {
		if v := c.req.Header.Get(h); v != "" {
			freq.Header.Set(h, v)
		}
	}
	// This instance admitted the write; the leader checks again, against
	// this instance's address or the token.
	if r.cfg.WriteToken != "" {
		freq.Header.Set("Authorization", "Bearer "+r.cfg.WriteToken)
	}
	freq.Header.Set(forwardedHeader, "1")
	resp, err := r.cfg.HTTPClient.Do(freq)
	if err != nil {
		r.log.Warn("forwarding to the leader failed", "leader", leaderURL, "err", err)
		return apiErrorf(codeForwarding, "Error forwarding the request to the leader at %s: %v", leaderURL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, r.cfg.MaxBodyBytes+1<<20))
	if err != nil {
		return apiErrorf(codeForwarding, "Error reading the leader's answer: %v", err)
	}
	if resp.StatusCode == http.StatusOK && c.req.Method == http.MethodPost && len(c.segs) == 3 && c.segs[0] == "subjects" {
		r.awaitRegistration(ctx, c.subject, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		c.rw.Header().Set("Content-Type", ct)
	}
	c.rw.WriteHeader(resp.StatusCode)
	_, _ = c.rw.Write(body)
	return nil
}

// awaitRegistration waits (within ctx) until this follower has applied a
// registration the leader answered, so a client reads its write back from
// the instance it wrote through. On timeout the answer goes out anyway.
func (r *Registry) awaitRegistration(ctx context.Context, subject string, answer []byte) {
	var resp idResponse
	if json.Unmarshal(answer, &resp) != nil || resp.ID < 1 {
		return
	}
	err := r.st.waitFor(ctx, func() bool {
		if subj := r.st.subjects[subject]; subj != nil {
			for _, v := range subj.versions {
				if v.id == resp.ID && !v.deleted {
					return true
				}
			}
		}
		return false
	})
	if err != nil {
		r.log.Warn("forwarded registration not applied here yet", "subject", subject, "id", resp.ID, "err", err)
	}
}

// writeError is the one place errors are answered: {"error_code",
// "message"} with the status of the code.
func (r *Registry) writeError(c *call, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		r.log.Error("request failed", "method", c.req.Method, "path", c.req.URL.Path, "err", err)
		ae = apiErrorf(codeStore, "Internal error: %v", err)
	} else if ae.status() >= 500 {
		r.log.Warn("request failed", "method", c.req.Method, "path", c.req.URL.Path, "code", ae.Code, "err", ae.Message)
	}
	if ae.Code == codeBusy {
		c.rw.Header().Set("Retry-After", "1")
	}
	c.write(ae.status(), encodeJSON(ae))
}

// json answers v.
func (c *call) json(v any) error {
	b := encodeJSON(v)
	if b == nil {
		return apiErrorf(codeStore, "Internal error: encoding the answer")
	}
	c.write(http.StatusOK, b)
	return nil
}

func (c *call) write(status int, body []byte) {
	h := c.rw.Header()
	h.Set("Content-Type", c.ctype)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	c.rw.WriteHeader(status)
	_, _ = c.rw.Write(body)
}

// query returns a query parameter.
func (c *call) query(name string) string { return c.req.URL.Query().Get(name) }

// flag reports whether a boolean query parameter is true.
func (c *call) flag(name string) bool {
	if c.req.URL.RawQuery == "" {
		return false
	}
	b, _ := strconv.ParseBool(c.query(name))
	return b
}
