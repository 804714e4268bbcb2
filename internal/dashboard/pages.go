package dashboard

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/eventlogging/eventlogging/internal/inspect"
)

// base is what every page template reads: the layout's fields.
type base struct {
	Title  string
	Active string // the navigation entry of the page
	Prefix string
	Now    time.Time
	// Failure and Reason fill the error box: what could not be shown and
	// why. Empty when everything loaded.
	Failure string
	Reason  string
	Scripts []string // files under /static/
}

// newBase starts a page's data.
func (h *Handler) newBase(title, active string, scripts ...string) base {
	return base{Title: title, Active: active, Prefix: h.prefix, Now: h.now(), Scripts: scripts}
}

// fail fills the error box with a failed operation, logs it and returns the
// page's status.
func (h *Handler) fail(r *http.Request, b *base, what string, err error) int {
	h.logFailure(r, what, err)
	b.Failure = "Could not " + what
	b.Reason = describe(err)
	return statusOf(err)
}

// statusAfter returns the page's status after the operation what: 200
// when it succeeded (err is nil), else as fail.
func (h *Handler) statusAfter(r *http.Request, b *base, what string, err error) int {
	if err == nil {
		return http.StatusOK
	}
	return h.fail(r, b, what, err)
}

// render executes a page template into a buffer and writes it, so that a
// template failure is a clean 500 rather than half a page.
func (h *Handler) render(rw http.ResponseWriter, r *http.Request, status int, name string, data any) {
	var buf bytes.Buffer
	if err := h.tmpl.ExecuteTemplate(&buf, name, data); err != nil {
		h.log.Error("dashboard template failed", "template", name, "path", r.URL.Path, "err", err)
		http.Error(rw, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	rw.Header().Set("Content-Type", "text/html; charset=utf-8")
	rw.Header().Set("Cache-Control", "no-store")
	rw.WriteHeader(status)
	_, _ = rw.Write(buf.Bytes())
}

// overviewView is the data of the overview page.
type overviewView struct {
	base
	inspect.Overview
}

func (h *Handler) overviewPage(rw http.ResponseWriter, r *http.Request) {
	ctx, cancel := backendCtx(r)
	defer cancel()
	v := overviewView{base: h.newBase("Overview", "overview", "overview.js")}
	o, err := h.b.Overview(ctx)
	status := h.statusAfter(r, &v.base, "read the pipeline overview", err)
	v.Overview = o
	h.render(rw, r, status, "overview", v)
}

// schemasView is the data of the schema list.
type schemasView struct {
	base
	Schemas []inspect.SchemaSummary
}

func (h *Handler) schemasPage(rw http.ResponseWriter, r *http.Request) {
	ctx, cancel := backendCtx(r)
	defer cancel()
	v := schemasView{base: h.newBase("Schemas", "schemas")}
	list, err := h.b.Schemas(ctx)
	status := h.statusAfter(r, &v.base, "list the schemas", err)
	v.Schemas = slices.SortedFunc(slices.Values(list), func(a, b inspect.SchemaSummary) int {
		return cmp.Compare(a.Name, b.Name)
	})
	h.render(rw, r, status, "schemas", v)
}

// schemaView is the data of one schema's page.
type schemaView struct {
	base
	Name     string
	Subject  *inspect.SchemaDetail // nil when it could not be read
	Versions []inspect.SchemaVersion
	A, B     *inspect.SchemaVersion // compared versions: old (left), new (right)
	Rows     []diffRow
	Added    int
	Removed  int
	Example  string // B's example event, indented; "" when none
}

func (h *Handler) schemaPage(rw http.ResponseWriter, r *http.Request) {
	ctx, cancel := backendCtx(r)
	defer cancel()
	name := r.PathValue("name")
	v := schemaView{base: h.newBase(name, "schemas"), Name: name}
	d, err := h.b.Schema(ctx, name)
	if err != nil {
		status := h.fail(r, &v.base, "read schema "+name, err)
		h.render(rw, r, status, "schema", v)
		return
	}
	v.Subject = &d
	v.Versions = slices.SortedFunc(slices.Values(d.Versions), func(a, b inspect.SchemaVersion) int {
		return cmp.Compare(a.Version, b.Version)
	})
	a, b, err := pickVersions(v.Versions, r.URL.Query().Get("a"), r.URL.Query().Get("b"))
	if err != nil {
		status := h.fail(r, &v.base, "compare the versions", err)
		h.render(rw, r, status, "schema", v)
		return
	}
	if b != nil {
		v.A, v.B = a, b
		v.Rows, v.Added, v.Removed = sideBySide(prettySchema(a.Schema), prettySchema(b.Schema))
		if len(b.Example) > 0 {
			v.Example = prettyJSON(b.Example)
		}
	}
	h.render(rw, r, http.StatusOK, "schema", v)
}

// pickVersions finds the versions ?a= and ?b= name in versions (sorted by
// number). By default b is the latest and a the one before it (a = b when
// there is only one). Both are nil when there are no versions.
func pickVersions(versions []inspect.SchemaVersion, qa, qb string) (a, b *inspect.SchemaVersion, err error) {
	if len(versions) == 0 {
		return nil, nil, nil
	}
	find := func(param, q string) (int, error) {
		n, err := strconv.Atoi(q)
		if err != nil {
			return 0, badRequestf("?%s=%q is not a version number", param, q)
		}
		i := slices.IndexFunc(versions, func(v inspect.SchemaVersion) bool { return v.Version == n })
		if i < 0 {
			return 0, fmt.Errorf("version %d: %w", n, inspect.ErrNotFound)
		}
		return i, nil
	}
	ib := len(versions) - 1
	if qb != "" {
		if ib, err = find("b", qb); err != nil {
			return nil, nil, err
		}
	}
	ia := max(ib-1, 0)
	if qa != "" {
		if ia, err = find("a", qa); err != nil {
			return nil, nil, err
		}
	}
	return &versions[ia], &versions[ib], nil
}

// errorsView is the data of the EventError list.
type errorsView struct {
	base
	Schema      string // the ?schema= filter
	Limit       int
	Records     []inspect.ErrorRecord
	ReplayLimit int
}

func (h *Handler) errorsPage(rw http.ResponseWriter, r *http.Request) {
	ctx, cancel := backendCtx(r)
	defer cancel()
	schema := r.URL.Query().Get("schema")
	v := errorsView{
		base:        h.newBase("EventErrors", "errors", "errors.js"),
		Schema:      schema,
		Limit:       errorsLimit,
		ReplayLimit: maxReplayUUIDs,
	}
	recs, err := h.b.Errors(ctx, inspect.ErrorFilter{Schema: schema, Limit: errorsLimit})
	status := h.statusAfter(r, &v.base, "read the EventErrors", err)
	v.Records = recs
	h.render(rw, r, status, "errors", v)
}

// errorView is the data of one EventError's page.
type errorView struct {
	base
	UUID      string
	Rec       *inspect.ErrorRecord
	Schema    schemaRef     // where Rec's schema links
	Event     template.HTML // the highlighted event; "" when it cannot be shown
	EventNote string        // why the event is not highlighted
}

// schemaRef is where an EventError's schema links: the page of its
// subject (the registry's name of it, inspect.ErrorRecord.Subject), at the
// version the event named when the registry has it.
type schemaRef struct {
	// Linked: the registry has the subject (or could not be asked), so
	// its page is linked.
	Linked bool
	// Version is the registry's number of the version the event named (its
	// page's ?b=); 0 when unknown: the subject's page as it opens.
	Version int
	// Note says why there is no link, or why it is not to the version.
	Note string
}

// schemaRefOf asks the registry where rec's schema links: an event may
// name a schema, or a version, that the registry does not have (the
// EventError may be why), and a link must lead somewhere.
func (h *Handler) schemaRefOf(ctx context.Context, r *http.Request, rec *inspect.ErrorRecord) schemaRef {
	if rec.Subject == "" {
		return schemaRef{}
	}
	d, err := h.b.Schema(ctx, rec.Subject)
	switch {
	case errors.Is(err, inspect.ErrNotFound):
		return schemaRef{Note: "not in the schema registry"}
	case err != nil:
		// The schema's page may answer later.
		h.logFailure(r, "read schema "+rec.Subject, err)
		return schemaRef{Linked: true}
	case rec.Label == "":
		return schemaRef{Linked: true}
	}
	i := slices.IndexFunc(d.Versions, func(v inspect.SchemaVersion) bool { return v.Label == rec.Label })
	if i < 0 {
		return schemaRef{Linked: true, Note: revisionText(rec.Label) + " is not in the schema registry"}
	}
	return schemaRef{Linked: true, Version: d.Versions[i].Version}
}

func (h *Handler) errorPage(rw http.ResponseWriter, r *http.Request) {
	ctx, cancel := backendCtx(r)
	defer cancel()
	id := r.PathValue("uuid")
	v := errorView{base: h.newBase("EventError "+id, "errors", "errors.js"), UUID: id}
	// The backend reads EventErrors newest first; a record is found among
	// the latest maxErrorsLimit (of its schema, with ?schema=).
	recs, err := h.b.Errors(ctx, inspect.ErrorFilter{Schema: r.URL.Query().Get("schema"), Limit: maxErrorsLimit})
	if err == nil {
		i := slices.IndexFunc(recs, func(e inspect.ErrorRecord) bool { return e.UUID == id })
		if i < 0 {
			err = fmt.Errorf("EventError %s is not among the latest %d: %w", id, maxErrorsLimit, inspect.ErrNotFound)
		} else {
			v.Rec = &recs[i]
		}
	}
	if err != nil {
		status := h.fail(r, &v.base, "find EventError "+id, err)
		h.render(rw, r, status, "error", v)
		return
	}
	v.Schema = h.schemaRefOf(ctx, r, v.Rec)
	switch {
	case len(v.Rec.Event) == 0:
		v.EventNote = "The event could not be extracted from the raw record."
	default:
		ev, err := highlightJSON(v.Rec.Event, v.Rec.Errors)
		if err != nil {
			v.EventNote = "The event cannot be highlighted: " + err.Error()
		}
		v.Event = ev
	}
	h.render(rw, r, http.StatusOK, "error", v)
}

// tailView is the data of the live-tail page.
type tailView struct {
	base
	Topics []string
	Topic  string
	Rows   int // rows kept on the page
}

// tailRows is how many rows the live-tail page keeps.
const tailRows = 200

func (h *Handler) tailPage(rw http.ResponseWriter, r *http.Request) {
	ctx, cancel := backendCtx(r)
	defer cancel()
	v := tailView{base: h.newBase("Live tail", "tail", "tail.js"), Topic: r.URL.Query().Get("topic"), Rows: tailRows}
	topics, err := h.b.Topics(ctx)
	status := h.statusAfter(r, &v.base, "list the topics", err)
	v.Topics = slices.Sorted(slices.Values(topics))
	h.render(rw, r, status, "tail", v)
}

func (h *Handler) notFoundPage(rw http.ResponseWriter, r *http.Request) {
	if h.getOnly(rw, r) {
		v := h.newBase("Method not allowed", "")
		v.Failure = "Method not allowed"
		v.Reason = "The dashboard page at " + h.prefix + r.URL.Path + " answers GET only."
		h.render(rw, r, http.StatusMethodNotAllowed, "notfound", v)
		return
	}
	v := h.newBase("Not found", "")
	v.Failure = "No such page"
	v.Reason = "There is no dashboard page at " + h.prefix + r.URL.Path + "."
	h.render(rw, r, http.StatusNotFound, "notfound", v)
}
