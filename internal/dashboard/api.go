package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/eventlogging/eventlogging/internal/inspect"
)

// apiError is the body of every JSON API error.
type apiError struct {
	Error string `json:"error"`
}

// writeJSON answers v as JSON with status.
func writeJSON(rw http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body, _ = json.Marshal(apiError{Error: "encode answer: " + err.Error()})
	}
	rw.Header().Set("Content-Type", "application/json")
	rw.Header().Set("Cache-Control", "no-store")
	rw.WriteHeader(status)
	_, _ = rw.Write(append(body, '\n'))
}

// writeAPIError answers a failed operation with its mapped status.
func (h *Handler) writeAPIError(rw http.ResponseWriter, r *http.Request, op string, err error) {
	h.logFailure(r, op, err)
	writeJSON(rw, statusOf(err), apiError{Error: op + ": " + describe(err)})
}

// writeAnswer answers v, read by the operation op, or op's error.
func (h *Handler) writeAnswer(rw http.ResponseWriter, r *http.Request, op string, v any, err error) {
	if err != nil {
		h.writeAPIError(rw, r, op, err)
		return
	}
	writeJSON(rw, http.StatusOK, v)
}

// nonNil keeps empty lists as [] rather than null in answers.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (h *Handler) apiOverview(rw http.ResponseWriter, r *http.Request) {
	ctx, cancel := backendCtx(r)
	defer cancel()
	o, err := h.b.Overview(ctx)
	o.Streams, o.Groups, o.Roles = nonNil(o.Streams), nonNil(o.Groups), nonNil(o.Roles)
	h.writeAnswer(rw, r, "overview", o, err)
}

func (h *Handler) apiSchemas(rw http.ResponseWriter, r *http.Request) {
	ctx, cancel := backendCtx(r)
	defer cancel()
	list, err := h.b.Schemas(ctx)
	h.writeAnswer(rw, r, "schemas", nonNil(list), err)
}

func (h *Handler) apiSchema(rw http.ResponseWriter, r *http.Request) {
	ctx, cancel := backendCtx(r)
	defer cancel()
	d, err := h.b.Schema(ctx, r.PathValue("name"))
	d.Versions = nonNil(d.Versions)
	h.writeAnswer(rw, r, "schema", d, err)
}

// apiErrors answers EventErrors, newest first: ?schema= (default every
// schema), ?limit= (default 100, at most 1000), ?since= and ?until=
// (RFC 3339).
func (h *Handler) apiErrors(rw http.ResponseWriter, r *http.Request) {
	f, err := errorFilter(r)
	if err != nil {
		h.writeAPIError(rw, r, "errors", err)
		return
	}
	ctx, cancel := backendCtx(r)
	defer cancel()
	recs, err := h.b.Errors(ctx, f)
	h.writeAnswer(rw, r, "errors", nonNil(recs), err)
}

// errorFilter reads /api/errors' query.
func errorFilter(r *http.Request) (inspect.ErrorFilter, error) {
	q := r.URL.Query()
	f := inspect.ErrorFilter{Schema: q.Get("schema"), Limit: errorsLimit}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxErrorsLimit {
			return f, badRequestf("?limit=%q is not a number from 1 to %d", s, maxErrorsLimit)
		}
		f.Limit = n
	}
	for _, p := range []struct {
		name string
		t    *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if s := q.Get(p.name); s != "" {
			t, err := time.Parse(time.RFC3339, s)
			if err != nil {
				return f, badRequestf("?%s=%q is not an RFC 3339 time", p.name, s)
			}
			*p.t = t
		}
	}
	return f, nil
}

func (h *Handler) apiTopics(rw http.ResponseWriter, r *http.Request) {
	ctx, cancel := backendCtx(r)
	defer cancel()
	topics, err := h.b.Topics(ctx)
	h.writeAnswer(rw, r, "topics", nonNil(topics), err)
}

func (h *Handler) apiNotFound(rw http.ResponseWriter, r *http.Request) {
	if h.getOnly(rw, r) {
		writeJSON(rw, http.StatusMethodNotAllowed, apiError{Error: h.prefix + r.URL.Path + " answers GET only"})
		return
	}
	writeJSON(rw, http.StatusNotFound, apiError{Error: "no API endpoint at " + h.prefix + r.URL.Path})
}

// replayRequest is the JSON body of a replay.
type replayRequest struct {
	UUIDs []string `json:"uuids"`
}

// apiReplay re-submits EventErrors: a JSON body {"uuids": [...]} or a
// form with repeated "uuid" (or "uuids") fields. Who may replay is decided
// in front of the handler (the admin networks or the dashboard's token, see
// internal/httpauth); cross-site browser requests are refused here.
func (h *Handler) apiReplay(rw http.ResponseWriter, r *http.Request) {
	if err := h.csrf.Check(r); err != nil {
		writeJSON(rw, http.StatusForbidden, apiError{Error: "replay: cross-origin request refused"})
		return
	}
	uuids, err := readReplayRequest(rw, r)
	if err != nil {
		h.writeAPIError(rw, r, "replay", err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), replayTimeout)
	defer cancel()
	res, err := h.b.Replay(ctx, uuids, inspect.ReplayOptions{Wait: replayWait})
	if err != nil {
		h.writeAPIError(rw, r, "replay", err)
		return
	}
	h.log.Info("dashboard replay", "requested", len(uuids), "replayed", res.Replayed, "skipped", res.Skipped,
		"valid", res.Valid, "failed_again", len(res.Failed), "pending", len(res.Pending))
	writeJSON(rw, http.StatusOK, res)
}

// readReplayRequest reads the uuids to replay (deduplicated, in order).
func readReplayRequest(rw http.ResponseWriter, r *http.Request) (uuids []string, err error) {
	r.Body = http.MaxBytesReader(rw, r.Body, maxReplayBody)
	ctype, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var raw []string
	switch ctype {
	case "application/json":
		var req replayRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			return nil, badRequestf("replay body is not {\"uuids\": [...]}: %v", err)
		}
		raw = req.UUIDs
	case "application/x-www-form-urlencoded", "multipart/form-data":
		if err := r.ParseMultipartForm(maxReplayBody); err != nil && !errors.Is(err, http.ErrNotMultipart) {
			return nil, badRequestf("replay form: %v", err)
		}
		raw = slices.Concat(r.PostForm["uuid"], r.PostForm["uuids"])
	default:
		return nil, badRequestf("replay body must be JSON {\"uuids\": [...]} or a form, not %q", ctype)
	}
	seen := make(map[string]bool, len(raw))
	for _, u := range raw {
		u = strings.TrimSpace(u)
		if u == "" || seen[u] {
			continue
		}
		seen[u] = true
		uuids = append(uuids, u)
	}
	switch {
	case len(uuids) == 0:
		return nil, badRequestf("no uuids to replay")
	case len(uuids) > maxReplayUUIDs:
		return nil, badRequestf("%d uuids to replay, at most %d at a time", len(uuids), maxReplayUUIDs)
	}
	return uuids, nil
}
