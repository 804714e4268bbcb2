package registry

import (
	"context"
	"fmt"
	"math"
	"strings"
)

// The write path. Each operation holds writeMu, decides from the state
// (under its read lock), then appends records; Append returns after the
// records are applied here, so the next operation sees them. Only the
// leader appends: elsewhere Append fails with schemalog.ErrNotLeader and the
// HTTP layer forwards the request.

// registerOpts modify a registration.
type registerOpts struct {
	// importing registers as ImportDir does: explicit id and version
	// without IMPORT mode, no compatibility check.
	importing bool
}

// compatTarget is one existing version a candidate is checked against.
type compatTarget struct {
	version    int
	schemaType string
	schema     string
}

// register registers req under subject and returns its id, and whether
// a version was created (false: the subject already has this schema).
func (r *Registry) register(ctx context.Context, subject string, req *schemaRequest, opts registerOpts) (id int, created bool, err error) {
	if !validSubject(subject) {
		return 0, false, errInvalidSubject(subject)
	}
	if req.ID > math.MaxInt32 || req.ID < -1 {
		return 0, false, apiErrorf(codeNotPermitted, "Schema id %d is out of range [1, 2^31-1]", req.ID)
	}
	if req.Version > math.MaxInt32 || req.Version < -1 {
		return 0, false, errInvalidVersion(fmt.Sprint(req.Version))
	}
	c, err := r.prepare(ctx, req)
	if err != nil {
		return 0, false, err
	}
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	rec, existing, level, targets, err := r.planRegister(subject, c, int(req.ID), int(req.Version), opts)
	if err != nil || rec == nil {
		return existing, false, err
	}
	if msgs, err := r.checkCompat(level, c, targets); err != nil {
		return 0, false, err
	} else if len(msgs) > 0 {
		return 0, false, apiErrorf(codeIncompatible, "Schema being registered is incompatible with an earlier schema for subject %q, details: [%s]", subject, strings.Join(msgs, ", "))
	}
	if err := r.append(ctx, schemaKey(subject, rec.Version), encodeJSON(rec)); err != nil {
		return 0, false, err
	}
	r.log.Info("schema registered", "subject", subject, "version", rec.Version, "id", rec.ID, "type", rec.SchemaType)
	return rec.ID, true, nil
}

// planRegister decides a registration: the record to write, or (nil
// record) the id of the subject's identical version. With a record, level
// and targets say what to check compatibility against.
func (r *Registry) planRegister(subject string, c *candidate, reqID, reqVersion int, opts registerOpts) (rec *schemaRecord, existing int, level string, targets []compatTarget, err error) {
	st := r.st
	st.mu.RLock()
	defer st.mu.RUnlock()
	mode := st.modeOf(subject)
	if mode == modeReadOnly {
		return nil, 0, "", nil, errReadOnly(subject)
	}
	explicit := reqID > 0 || reqVersion > 0
	if !opts.importing {
		if explicit && mode != modeImport {
			return nil, 0, "", nil, apiErrorf(codeNotPermitted, "Subject %s is not in import mode: an explicit id or version needs mode IMPORT", subject)
		}
		if !explicit && mode != modeReadWrite {
			return nil, 0, "", nil, apiErrorf(codeNotPermitted, "Subject %s is not in read-write mode: mode IMPORT needs an explicit id", subject)
		}
	}
	subj := st.subjects[subject]
	if subj != nil {
		// The subject's identical version, newest first; when importing,
		// a soft-deleted one counts too (an import must not resurrect
		// what an operator deleted).
		for i := len(subj.order) - 1; i >= 0; i-- {
			v := subj.versions[subj.order[i]]
			if (!v.deleted || opts.importing) && c.matches(st.ids[v.id]) && (reqID <= 0 || reqID == v.id) {
				return nil, v.id, "", nil, nil
			}
		}
	}
	var id int
	switch {
	case reqID > 0:
		if e := st.ids[reqID]; e != nil && e.key != c.key {
			owner := ""
			if u := st.usages(reqID, true); len(u) > 0 {
				// A legacy revision is its schema's global id: name the
				// schema that has it, so the author can pick another.
				owner = fmt.Sprintf(" (%s version %d has it; a legacy revision is the schema's global id, so every schema needs revisions of its own)", u[0].Subject, u[0].Version)
			}
			return nil, 0, "", nil, apiErrorf(codeNotPermitted, "Overwrite new schema with id %d is not permitted: id %d is another schema%s", reqID, reqID, owner)
		}
		id = reqID
	case len(st.byKey[c.key]) > 0:
		id = st.byKey[c.key][0]
	default:
		if st.maxID >= math.MaxInt32 {
			return nil, 0, "", nil, apiErrorf(codeStore, "Schema ids are exhausted")
		}
		id = st.maxID + 1
	}
	num := 1
	if subj != nil {
		num = subj.order[len(subj.order)-1] + 1
	}
	if reqVersion > 0 {
		if subj != nil && subj.versions[reqVersion] != nil {
			return nil, 0, "", nil, apiErrorf(codeNotPermitted, "Overwrite new schema with version %d is not permitted: subject %s has another schema at version %d", reqVersion, subject, reqVersion)
		}
		num = reqVersion
	}
	if !opts.importing && mode != modeImport && subj != nil {
		level = st.levelOf(subject, r.cfg.DefaultLevel)
		live := subj.live()
		if !transitive(level) && len(live) > 1 {
			live = live[len(live)-1:]
		}
		for _, v := range live {
			e := st.ids[v.id]
			targets = append(targets, compatTarget{version: v.num, schemaType: e.schemaType, schema: e.schema})
		}
	}
	rec = &schemaRecord{
		Subject: subject, Version: num, ID: id,
		SchemaType: c.schemaType, Schema: c.text, References: c.refs, Metadata: c.meta, RuleSet: c.ruleSet,
	}
	if e := st.ids[id]; e != nil {
		// The same content under its existing id: keep its text, so the id
		// has one text however it was spelled.
		rec.Schema = e.schema
	}
	return rec, 0, level, targets, nil
}

// checkCompat checks a candidate against targets at level, returning the
// incompatibility messages (none: compatible) in Confluent's style.
func (r *Registry) checkCompat(level string, c *candidate, targets []compatTarget) ([]string, error) {
	if level == levelNone || level == "" || len(targets) == 0 {
		return nil, nil
	}
	last := targets[len(targets)-1]
	texts := make([]string, 0, len(targets))
	var msgs []string
	for _, t := range targets {
		if t.schemaType != c.schemaType {
			msgs = []string{fmt.Sprintf("{errorType:'TYPE_MISMATCH', description:'Incompatible because of different schema type: %s is not %s'}", c.schemaType, t.schemaType)}
			last = t
			break
		}
		texts = append(texts, t.schema)
	}
	if msgs == nil {
		var err error
		msgs, err = r.cfg.Check(c.schemaType, level, c.text, texts)
		if err != nil {
			return nil, errInvalidSchema("compatibility check: %v", err)
		}
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	return append(msgs,
		fmt.Sprintf("{oldSchemaVersion: %d}", last.version),
		fmt.Sprintf("{oldSchema: '%s'}", last.schema),
		fmt.Sprintf("{compatibility: '%s'}", level)), nil
}

// deleteSubject soft-deletes every live version of a subject, or
// permanently deletes a subject whose versions are all soft-deleted, and
// returns the versions deleted.
func (r *Registry) deleteSubject(ctx context.Context, name string, permanent bool) ([]int, error) {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	st := r.st
	st.mu.RLock()
	var (
		nums    []int
		records []schemaRecord
	)
	subj, err := st.deletableSubject(name)
	switch {
	case err != nil:
	case permanent && subj.hasLive():
		err = apiErrorf(codeSubjectNotSoftDeleted, "Subject '%s' was not deleted first before being permanently deleted", name)
	case !permanent && !subj.hasLive():
		err = apiErrorf(codeSubjectSoftDeleted, "Subject '%s' was soft deleted.Set permanent=true to delete permanently", name)
	case permanent:
		nums = append(nums, subj.order...)
	default:
		for _, v := range subj.live() {
			nums = append(nums, v.num)
			rec := st.record(name, v)
			rec.Deleted = true
			records = append(records, rec)
		}
	}
	if err == nil {
		err = st.checkNoReferrers(name, nums)
	}
	st.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	if err := r.appendDeletes(ctx, name, permanent, nums, records); err != nil {
		return nil, err
	}
	if err := r.dropSubjectSettings(ctx, name); err != nil {
		return nil, err
	}
	r.log.Info("subject deleted", "subject", name, "versions", nums, "permanent", permanent)
	return nums, nil
}

// deleteVersion soft-deletes a live version, or permanently deletes a
// soft-deleted one, and returns its number.
func (r *Registry) deleteVersion(ctx context.Context, name, spec string, permanent bool) (int, error) {
	num, latest, aerr := parseVersion(spec)
	if aerr != nil {
		return 0, aerr
	}
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	st := r.st
	st.mu.RLock()
	var (
		v       *version
		rec     schemaRecord
		lastOne bool
	)
	subj, err := st.deletableSubject(name)
	switch {
	case err != nil:
	case latest:
		if v = subj.latest(permanent); v == nil {
			err = errSubjectNotFound(name)
		}
	default:
		if v = subj.versions[num]; v == nil {
			err = errVersionNotFound(num)
		}
	}
	switch {
	case err != nil:
	case permanent && !v.deleted:
		err = apiErrorf(codeVersionNotSoftDeleted, "Subject '%s' Version %d was not deleted first before being permanently deleted", name, v.num)
	case !permanent && v.deleted:
		err = apiErrorf(codeVersionSoftDeleted, "Subject '%s' Version %d was soft deleted.Set permanent=true to delete permanently", name, v.num)
	default:
		err = st.checkNoReferrers(name, []int{v.num})
		rec = st.record(name, v)
		rec.Deleted = true
		lastOne = !permanent && len(subj.live()) == 1
	}
	st.mu.RUnlock()
	if err != nil {
		return 0, err
	}
	if err := r.appendDeletes(ctx, name, permanent, []int{rec.Version}, []schemaRecord{rec}); err != nil {
		return 0, err
	}
	if lastOne {
		if err := r.dropSubjectSettings(ctx, name); err != nil {
			return 0, err
		}
	}
	r.log.Info("schema version deleted", "subject", name, "version", rec.Version, "permanent", permanent)
	return rec.Version, nil
}

// deletableSubject returns the subject whose versions are to be deleted,
// or why none may be: the subject is read-only or unknown. The caller
// holds s.mu.
func (s *state) deletableSubject(name string) (*subject, error) {
	if s.modeOf(name) == modeReadOnly {
		return nil, errReadOnly(name)
	}
	subj := s.subjects[name]
	if subj == nil {
		return nil, errSubjectNotFound(name)
	}
	return subj, nil
}

// appendDeletes writes the deletion of versions of subject name: with
// permanent, the id floor (see writeFloor), then a tombstone for each of
// nums; else the records soft, marked deleted.
func (r *Registry) appendDeletes(ctx context.Context, name string, permanent bool, nums []int, soft []schemaRecord) error {
	if !permanent {
		for i := range soft {
			if err := r.append(ctx, schemaKey(name, soft[i].Version), encodeJSON(&soft[i])); err != nil {
				return err
			}
		}
		return nil
	}
	if err := r.writeFloor(ctx); err != nil {
		return err
	}
	for _, n := range nums {
		if err := r.append(ctx, schemaKey(name, n), nil); err != nil {
			return err
		}
	}
	return nil
}

// checkNoReferrers refuses to delete versions other schemas reference.
func (s *state) checkNoReferrers(name string, nums []int) error {
	for _, n := range nums {
		if ids := s.referrers(name, n); len(ids) > 0 {
			return apiErrorf(codeReferenceExists, "One or more references exist to the schema {subject=%s,version=%d}: schema ids %v", name, n, ids)
		}
	}
	return nil
}

// writeFloor records the highest id seen before records are removed, so
// ids stay unique after compaction (see state.go).
func (r *Registry) writeFloor(ctx context.Context) error {
	r.st.mu.RLock()
	floor, maxID := r.st.floor, r.st.maxID
	r.st.mu.RUnlock()
	if floor >= maxID {
		return nil
	}
	return r.append(ctx, keyMaxID, encodeJSON(maxIDRecord{MaxID: maxID}))
}

// dropSubjectSettings removes the compatibility level and mode of a
// subject without live versions, as Confluent does when a subject is
// deleted.
func (r *Registry) dropSubjectSettings(ctx context.Context, name string) error {
	r.st.mu.RLock()
	subj := r.st.subjects[name]
	_, hasLevel := r.st.config[name]
	_, hasMode := r.st.mode[name]
	r.st.mu.RUnlock()
	if subj != nil && subj.hasLive() {
		return nil
	}
	if hasLevel {
		if err := r.append(ctx, keyConfig+name, nil); err != nil {
			return err
		}
	}
	if hasMode {
		if err := r.append(ctx, keyMode+name, nil); err != nil {
			return err
		}
	}
	return nil
}

// setLevel sets the compatibility level of a subject ("" global).
func (r *Registry) setLevel(ctx context.Context, subject, level string) error {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	return r.append(ctx, keyConfig+subject, encodeJSON(levelRecord{CompatibilityLevel: level}))
}

// deleteLevel unsets the compatibility level of a subject ("" global,
// which falls back to the configured default) and returns the previous
// level.
func (r *Registry) deleteLevel(ctx context.Context, subject string) (string, error) {
	prev, ok, err := r.unsetSetting(ctx, keyConfig, r.st.config, subject)
	switch {
	case ok || err != nil:
		return prev, err
	case subject == "":
		return r.cfg.DefaultLevel, nil
	default:
		return "", errLevelNotSet(subject)
	}
}

// setMode sets the mode of a subject ("" global). IMPORT needs an empty
// registry (subject) unless force is set, as in Confluent.
func (r *Registry) setMode(ctx context.Context, subject, mode string, force bool) error {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	if mode == modeImport && !force {
		r.st.mu.RLock()
		nonEmpty := false
		for name, subj := range r.st.subjects {
			if (subject == "" || name == subject) && subj.hasLive() {
				nonEmpty = true
				break
			}
		}
		r.st.mu.RUnlock()
		if nonEmpty {
			return apiErrorf(codeNotPermitted, "Cannot import since found existing subjects: set ?force=true to import anyway")
		}
	}
	return r.append(ctx, keyMode+subject, encodeJSON(modeRecord{Mode: mode}))
}

// deleteMode unsets the mode of a subject and returns the previous one.
func (r *Registry) deleteMode(ctx context.Context, subject string) (string, error) {
	prev, ok, err := r.unsetSetting(ctx, keyMode, r.st.mode, subject)
	if !ok && err == nil {
		return "", errModeNotSet(subject)
	}
	return prev, err
}

// unsetSetting writes the tombstone of subject's record under prefix
// (keyConfig or keyMode) if values, the state's map of that setting,
// holds one, and returns the value it held; ok is false, and nothing is
// written, when it holds none.
func (r *Registry) unsetSetting(ctx context.Context, prefix string, values map[string]string, subject string) (prev string, ok bool, err error) {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	r.st.mu.RLock()
	prev, ok = values[subject]
	r.st.mu.RUnlock()
	if !ok {
		return "", false, nil
	}
	return prev, true, r.append(ctx, prefix+subject, nil)
}

func errLevelNotSet(subject string) *apiError {
	return apiErrorf(codeSubjectLevelNotSet, "Subject '%s' does not have subject-level compatibility configured", subject)
}

func errModeNotSet(subject string) *apiError {
	return apiErrorf(codeSubjectModeNotSet, "Subject '%s' does not have subject-level mode configured", subject)
}
