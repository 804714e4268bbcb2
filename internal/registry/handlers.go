package registry

import (
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Answer bodies, as in Confluent's API.
type (
	subjectVersionResponse struct {
		Subject    string          `json:"subject"`
		Version    int             `json:"version"`
		ID         int             `json:"id"`
		SchemaType string          `json:"schemaType,omitempty"`
		References []reference     `json:"references,omitempty"`
		Metadata   *metadata       `json:"metadata,omitempty"`
		RuleSet    json.RawMessage `json:"ruleSet,omitempty"`
		Schema     string          `json:"schema"`
		Deleted    bool            `json:"deleted,omitempty"`
	}
	schemaByIDResponse struct {
		SchemaType string          `json:"schemaType,omitempty"`
		Schema     string          `json:"schema"`
		References []reference     `json:"references,omitempty"`
		Metadata   *metadata       `json:"metadata,omitempty"`
		RuleSet    json.RawMessage `json:"ruleSet,omitempty"`
		MaxID      int             `json:"maxId,omitempty"`
	}
	subjectVersion struct {
		Subject string `json:"subject"`
		Version int    `json:"version"`
	}
	idResponse struct {
		ID int `json:"id"`
	}
	compatibilityResponse struct {
		IsCompatible bool     `json:"is_compatible"`
		Messages     []string `json:"messages,omitempty"`
	}
	levelResponse struct {
		CompatibilityLevel string `json:"compatibilityLevel"`
	}
	levelRequest struct {
		Compatibility      string `json:"compatibility"`
		CompatibilityLevel string `json:"compatibilityLevel"`
	}
	levelUpdateResponse struct {
		Compatibility string `json:"compatibility"`
	}
	modeBody struct {
		Mode string `json:"mode"`
	}
)

// parseVersion parses a {version}: 1 to 2^31-1, or "latest" / -1.
func parseVersion(s string) (num int, latest bool, err *apiError) {
	if s == "latest" {
		return 0, true, nil
	}
	n, perr := strconv.ParseInt(s, 10, 32)
	switch {
	case perr != nil || n < -1 || n == 0:
		return 0, false, errInvalidVersion(s)
	case n == -1:
		return 0, true, nil
	}
	return int(n), false, nil
}

// parseID parses a {id}; anything else names no schema.
func parseID(s string) (int, bool) {
	n, err := strconv.ParseInt(s, 10, 32)
	return int(n), err == nil && n > 0 && n <= math.MaxInt32
}

func (r *Registry) getRoot(c *call) error { return c.json(struct{}{}) }

func (r *Registry) getContexts(c *call) error { return c.json([]string{"."}) }

func (r *Registry) getSchemaTypes(c *call) error { return c.json(schemaTypes) }

// GET /subjects?subjectPrefix=&deleted=&deletedOnly=
func (r *Registry) getSubjects(c *call) error {
	prefix, deleted, deletedOnly := c.query("subjectPrefix"), c.flag("deleted"), c.flag("deletedOnly")
	st := r.st
	st.mu.RLock()
	out := []string{}
	for name, subj := range st.subjects {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		live := subj.hasLive()
		if deletedOnly && !live || !deletedOnly && (live || deleted) {
			out = append(out, name)
		}
	}
	st.mu.RUnlock()
	slices.Sort(out)
	return c.json(out)
}

// GET /subjects/{s}/versions?deleted=&deletedOnly=
func (r *Registry) getVersions(c *call) error {
	deleted, deletedOnly := c.flag("deleted"), c.flag("deletedOnly")
	st := r.st
	st.mu.RLock()
	var out []int
	if subj := st.subjects[c.subject]; subj != nil {
		for _, n := range subj.order {
			v := subj.versions[n]
			if deletedOnly && v.deleted || !deletedOnly && (!v.deleted || deleted) {
				out = append(out, n)
			}
		}
	}
	st.mu.RUnlock()
	if len(out) == 0 {
		return errSubjectNotFound(c.subject)
	}
	return c.json(out)
}

// findVersion resolves {subject}/{version}: 42202, 40401 (no such subject,
// or no live version) or 40402. Call with st.mu held for reading.
func (s *state) findVersion(name, spec string, deleted bool) (*version, error) {
	num, latest, aerr := parseVersion(spec)
	if aerr != nil {
		return nil, aerr
	}
	subj := s.subjects[name]
	if subj == nil || !deleted && !subj.hasLive() {
		return nil, errSubjectNotFound(name)
	}
	if latest {
		return subj.latest(deleted), nil
	}
	v := subj.versions[num]
	if v == nil || v.deleted && !deleted {
		return nil, errVersionNotFound(num)
	}
	return v, nil
}

func (s *state) subjectVersion(name string, v *version) subjectVersionResponse {
	e := s.ids[v.id]
	return subjectVersionResponse{
		Subject: name, Version: v.num, ID: v.id, SchemaType: responseType(e.schemaType),
		References: e.refs, Metadata: e.meta, RuleSet: e.ruleSet, Schema: e.schema, Deleted: v.deleted,
	}
}

// GET /subjects/{s}/versions/{v}?deleted=
func (r *Registry) getVersion(c *call) error {
	r.st.mu.RLock()
	v, err := r.st.findVersion(c.subject, c.version, c.flag("deleted"))
	var resp subjectVersionResponse
	if err == nil {
		resp = r.st.subjectVersion(c.subject, v)
	}
	r.st.mu.RUnlock()
	if err != nil {
		return err
	}
	return c.json(resp)
}

// GET /subjects/{s}/versions/{v}/schema: the schema text itself.
func (r *Registry) getVersionSchema(c *call) error {
	r.st.mu.RLock()
	v, err := r.st.findVersion(c.subject, c.version, c.flag("deleted"))
	var text string
	if err == nil {
		text = r.st.ids[v.id].schema
	}
	r.st.mu.RUnlock()
	if err != nil {
		return err
	}
	c.write(http.StatusOK, []byte(text))
	return nil
}

// GET /subjects/{s}/versions/{v}/referencedby: ids referencing it.
func (r *Registry) getReferencedBy(c *call) error {
	r.st.mu.RLock()
	v, err := r.st.findVersion(c.subject, c.version, c.flag("deleted"))
	ids := []int{}
	if err == nil {
		ids = append(ids, r.st.referrers(c.subject, v.num)...)
	}
	r.st.mu.RUnlock()
	if err != nil {
		return err
	}
	return c.json(ids)
}

// GET /schemas?subjectPrefix=&deleted=&latestOnly=
func (r *Registry) getSchemas(c *call) error {
	prefix, deleted, latestOnly := c.query("subjectPrefix"), c.flag("deleted"), c.flag("latestOnly")
	st := r.st
	st.mu.RLock()
	out := []subjectVersionResponse{}
	for name, subj := range st.subjects {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		if latestOnly {
			if v := subj.latest(deleted); v != nil {
				out = append(out, st.subjectVersion(name, v))
			}
			continue
		}
		for _, n := range subj.order {
			if v := subj.versions[n]; deleted || !v.deleted {
				out = append(out, st.subjectVersion(name, v))
			}
		}
	}
	st.mu.RUnlock()
	slices.SortFunc(out, func(a, b subjectVersionResponse) int {
		if a.Subject != b.Subject {
			return strings.Compare(a.Subject, b.Subject)
		}
		return a.Version - b.Version
	})
	return c.json(out)
}

// usages returns the subject versions using id (soft-deleted ones too
// when deleted is set), sorted. Call with st.mu held for reading.
func (s *state) usages(id int, deleted bool) []subjectVersion {
	out := []subjectVersion{}
	for name, subj := range s.subjects {
		for _, n := range subj.order {
			if v := subj.versions[n]; v.id == id && (deleted || !v.deleted) {
				out = append(out, subjectVersion{Subject: name, Version: n})
			}
		}
	}
	slices.SortFunc(out, func(a, b subjectVersion) int {
		if a.Subject != b.Subject {
			return strings.Compare(a.Subject, b.Subject)
		}
		return a.Version - b.Version
	})
	return out
}

// schemaByID finds {id}, and with ?subject= checks that the subject uses
// it. Call with st.mu held for reading.
func (s *state) schemaByID(c *call) (*entry, error) {
	id, ok := parseID(c.id)
	if !ok {
		return nil, errSchemaIDNotFound(c.id)
	}
	e := s.ids[id]
	if e == nil {
		return nil, errSchemaIDNotFound(c.id)
	}
	if c.req.URL.RawQuery == "" {
		return e, nil
	}
	if subj := c.query("subject"); subj != "" {
		found := false
		for _, u := range s.usages(id, true) {
			found = found || u.Subject == subj
		}
		if !found {
			return nil, errSchemaIDNotFound(c.id)
		}
	}
	return e, nil
}

// GET /schemas/ids/{id}?subject=&fetchMaxId=
func (r *Registry) getSchemaByID(c *call) error {
	r.st.mu.RLock()
	e, err := r.st.schemaByID(c)
	var body []byte
	if err == nil {
		body = e.byID
		if c.flag("fetchMaxId") || body == nil {
			body = encodeJSON(schemaByIDResponse{SchemaType: responseType(e.schemaType), Schema: e.schema, References: e.refs, Metadata: e.meta, RuleSet: e.ruleSet, MaxID: r.st.maxID})
		}
	}
	r.st.mu.RUnlock()
	if err != nil {
		return err
	}
	c.write(http.StatusOK, body)
	return nil
}

// GET /schemas/ids/{id}/schema: the schema text itself.
func (r *Registry) getSchemaByIDSchema(c *call) error {
	r.st.mu.RLock()
	e, err := r.st.schemaByID(c)
	var text string
	if err == nil {
		text = e.schema
	}
	r.st.mu.RUnlock()
	if err != nil {
		return err
	}
	c.write(http.StatusOK, []byte(text))
	return nil
}

// GET /schemas/ids/{id}/versions?deleted=
func (r *Registry) getSchemaByIDVersions(c *call) error {
	r.st.mu.RLock()
	e, err := r.st.schemaByID(c)
	var out []subjectVersion
	if err == nil {
		out = r.st.usages(e.id, c.flag("deleted"))
	}
	r.st.mu.RUnlock()
	if err != nil {
		return err
	}
	return c.json(out)
}

// GET /schemas/ids/{id}/subjects?deleted=
func (r *Registry) getSchemaByIDSubjects(c *call) error {
	r.st.mu.RLock()
	e, err := r.st.schemaByID(c)
	out := []string{}
	if err == nil {
		for _, u := range r.st.usages(e.id, c.flag("deleted")) {
			if len(out) == 0 || out[len(out)-1] != u.Subject {
				out = append(out, u.Subject)
			}
		}
	}
	r.st.mu.RUnlock()
	if err != nil {
		return err
	}
	return c.json(out)
}

// POST /subjects/{s}/versions: register.
func (r *Registry) postVersion(c *call) error {
	req, err := decodeSchemaRequest(c.body)
	if err != nil {
		return err
	}
	id, _, err := r.register(c.req.Context(), c.subject, req, registerOpts{})
	if err != nil {
		return err
	}
	return c.json(idResponse{ID: id})
}

// POST /subjects/{s}?deleted=: is this schema registered under s?
func (r *Registry) postLookup(c *call) error {
	if !validSubject(c.subject) {
		return errSubjectNotFound(c.subject)
	}
	req, err := decodeSchemaRequest(c.body)
	if err != nil {
		return err
	}
	cand, err := r.prepare(c.req.Context(), req)
	if err != nil {
		return err
	}
	deleted := c.flag("deleted")
	st := r.st
	st.mu.RLock()
	defer st.mu.RUnlock()
	subj := st.subjects[c.subject]
	if subj == nil || !deleted && !subj.hasLive() {
		return errSubjectNotFound(c.subject)
	}
	for i := len(subj.order) - 1; i >= 0; i-- {
		v := subj.versions[subj.order[i]]
		if (deleted || !v.deleted) && cand.matches(st.ids[v.id]) {
			return c.json(st.subjectVersion(c.subject, v))
		}
	}
	return apiErrorf(codeSchemaNotFound, "Schema not found")
}

// DELETE /subjects/{s}?permanent=
func (r *Registry) deleteSubjectHandler(c *call) error {
	nums, err := r.deleteSubject(c.req.Context(), c.subject, c.flag("permanent"))
	if err != nil {
		return err
	}
	return c.json(nums)
}

// DELETE /subjects/{s}/versions/{v}?permanent=
func (r *Registry) deleteVersionHandler(c *call) error {
	n, err := r.deleteVersion(c.req.Context(), c.subject, c.version, c.flag("permanent"))
	if err != nil {
		return err
	}
	return c.json(n)
}

// POST /compatibility/subjects/{s}/versions[/{v}]?verbose=: is the schema
// compatible with version v (with the versions the level checks when v
// is absent)? A subject without versions is compatible with anything.
func (r *Registry) postCompatibility(c *call) error {
	req, err := decodeSchemaRequest(c.body)
	if err != nil {
		return err
	}
	cand, err := r.prepare(c.req.Context(), req)
	if err != nil {
		return err
	}
	st := r.st
	st.mu.RLock()
	level := st.levelOf(c.subject, r.cfg.DefaultLevel)
	var targets []compatTarget
	subj := st.subjects[c.subject]
	_, latest, verr := parseVersion(c.version)
	switch {
	case c.version != "" && verr != nil:
		err = verr
	case c.version == "" || latest:
		if subj != nil {
			live := subj.live()
			if c.version != "" || !transitive(level) && len(live) > 1 {
				live = live[max(0, len(live)-1):]
			}
			for _, v := range live {
				e := st.ids[v.id]
				targets = append(targets, compatTarget{version: v.num, schemaType: e.schemaType, schema: e.schema})
			}
		}
	default:
		var v *version
		if v, err = st.findVersion(c.subject, c.version, false); err == nil {
			e := st.ids[v.id]
			targets = []compatTarget{{version: v.num, schemaType: e.schemaType, schema: e.schema}}
		}
	}
	st.mu.RUnlock()
	if err != nil {
		return err
	}
	msgs, err := r.checkCompat(level, cand, targets)
	if err != nil {
		return err
	}
	resp := compatibilityResponse{IsCompatible: len(msgs) == 0}
	if c.flag("verbose") {
		resp.Messages = append([]string{}, msgs...)
		return c.json(struct {
			IsCompatible bool     `json:"is_compatible"`
			Messages     []string `json:"messages"`
		}{resp.IsCompatible, resp.Messages})
	}
	return c.json(resp)
}

// GET /config[/{s}]?defaultToGlobal=
func (r *Registry) getConfig(c *call) error {
	level, ok := r.subjectSetting(c, r.st.config, func(st *state) string { return st.levelOf("", r.cfg.DefaultLevel) })
	if !ok {
		return errLevelNotSet(c.subject)
	}
	return c.json(levelResponse{CompatibilityLevel: level})
}

// PUT /config[/{s}] {"compatibility": level}
func (r *Registry) putConfig(c *call) error {
	var req levelRequest
	if err := decodeSettingBody(c, &req); err != nil {
		return err
	}
	given := req.Compatibility
	if given == "" {
		given = req.CompatibilityLevel
	}
	level, ok := parseLevel(given)
	if !ok {
		return errInvalidLevel(given)
	}
	if err := r.setLevel(c.req.Context(), c.subject, level); err != nil {
		return err
	}
	return c.json(levelUpdateResponse{Compatibility: level})
}

// DELETE /config[/{s}]: back to the global level (the default).
func (r *Registry) deleteConfig(c *call) error {
	prev, err := r.deleteLevel(c.req.Context(), c.subject)
	if err != nil {
		return err
	}
	return c.json(levelResponse{CompatibilityLevel: prev})
}

// GET /mode[/{s}]?defaultToGlobal=
func (r *Registry) getMode(c *call) error {
	mode, ok := r.subjectSetting(c, r.st.mode, func(st *state) string { return st.modeOf("") })
	if !ok {
		return errModeNotSet(c.subject)
	}
	return c.json(modeBody{Mode: mode})
}

// PUT /mode[/{s}]?force= {"mode": mode}
func (r *Registry) putMode(c *call) error {
	var req modeBody
	if err := decodeSettingBody(c, &req); err != nil {
		return err
	}
	mode, ok := parseMode(req.Mode)
	if !ok {
		return errInvalidMode(req.Mode)
	}
	if err := r.setMode(c.req.Context(), c.subject, mode, c.flag("force")); err != nil {
		return err
	}
	return c.json(modeBody{Mode: mode})
}

// DELETE /mode/{s}: back to the global mode.
func (r *Registry) deleteModeHandler(c *call) error {
	prev, err := r.deleteMode(c.req.Context(), c.subject)
	if err != nil {
		return err
	}
	return c.json(modeBody{Mode: prev})
}

// subjectSetting returns the call's subject's own value in values, the
// state's levels or modes; for the global setting ("") or with
// ?defaultToGlobal, the value global reads from the state (read-locked)
// when the subject has none of its own.
func (r *Registry) subjectSetting(c *call, values map[string]string, global func(*state) string) (string, bool) {
	st := r.st
	st.mu.RLock()
	defer st.mu.RUnlock()
	v, ok := values[c.subject]
	if !ok && (c.subject == "" || c.flag("defaultToGlobal")) {
		return global(st), true
	}
	return v, ok
}

// decodeSettingBody checks the subject of a PUT /config or PUT /mode and
// reads the JSON body into req.
func decodeSettingBody(c *call, req any) error {
	if c.subject != "" && !validSubject(c.subject) {
		return errInvalidSubject(c.subject)
	}
	if err := json.Unmarshal(c.body, req); err != nil {
		return bodyError(err)
	}
	return nil
}

// GET /{title...}/{version}: the Event Platform schema registered under
// subject title with metadata property "version" (a live version first,
// else a soft-deleted one, which old events still name). The answer is
// the schema text.
func (r *Registry) getURI(c *call) error {
	segs := c.segs
	ver := segs[len(segs)-1]
	for _, ext := range []string{".json", ".yaml", ".yml"} {
		ver = strings.TrimSuffix(ver, ext)
	}
	title := strings.Join(segs[:len(segs)-1], "/")
	st := r.st
	st.mu.RLock()
	var text string
	if subj := st.subjects[title]; subj != nil {
		var deletedMatch string
		for i := len(subj.order) - 1; i >= 0; i-- {
			v := subj.versions[subj.order[i]]
			e := st.ids[v.id]
			if e.meta == nil || e.meta.Properties["version"] != ver {
				continue
			}
			if !v.deleted {
				text = e.schema
				break
			}
			if deletedMatch == "" {
				deletedMatch = e.schema
			}
		}
		if text == "" {
			text = deletedMatch
		}
	}
	st.mu.RUnlock()
	if text == "" {
		return apiErrorf(codeSchemaNotFound, "Schema /%s/%s not found", title, ver)
	}
	c.ctype = "application/json"
	c.write(http.StatusOK, []byte(text))
	return nil
}
