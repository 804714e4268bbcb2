package registry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/eventlogging/eventlogging/internal/kafka/schemalog"
)

// The log's records. Keys are UTF-8 strings, values JSON; a nil value is a
// tombstone, which log compaction eventually removes together with every
// earlier record of its key.
//
//	schema/<subject>/<version>  schemaRecord: one version of a subject;
//	                            rewritten with "deleted": true by a soft
//	                            delete; tombstone: permanent delete
//	config/<subject>            levelRecord: compatibility level; subject ""
//	                            is the global level; tombstone: unset
//	mode/<subject>              modeRecord: mode, likewise
//	maxid                       maxIDRecord: a floor for id allocation,
//	                            written before permanent deletes so ids stay
//	                            unique after compaction drops the records
//	                            that used them
//
// Subjects may contain '/'; the version is the key's last segment. Records
// with other keys are ignored, so later versions can add kinds.
const (
	keySchema = "schema/"
	keyConfig = "config/"
	keyMode   = "mode/"
	keyMaxID  = "maxid"
)

// schemaRecord is the value of a schema/<subject>/<version> record.
type schemaRecord struct {
	Subject    string          `json:"subject"`
	Version    int             `json:"version"`
	ID         int             `json:"id"`
	SchemaType string          `json:"schemaType"`
	Schema     string          `json:"schema"`
	References []reference     `json:"references,omitempty"`
	Metadata   *metadata       `json:"metadata,omitempty"`
	RuleSet    json.RawMessage `json:"ruleSet,omitempty"`
	Deleted    bool            `json:"deleted,omitempty"`
}

type levelRecord struct {
	CompatibilityLevel string `json:"compatibilityLevel"`
}

type modeRecord struct {
	Mode string `json:"mode"`
}

// settingRecord is the value of a config/ or mode/ record.
type settingRecord interface {
	levelRecord | modeRecord
	setting() string
}

func (r levelRecord) setting() string { return r.CompatibilityLevel }
func (r modeRecord) setting() string  { return r.Mode }

type maxIDRecord struct {
	MaxID int `json:"maxId"`
}

// reference is a schema reference, as in Confluent's API.
type reference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// metadata is a schema's metadata, as in Confluent's API.
type metadata struct {
	Tags       map[string][]string `json:"tags,omitempty"`
	Properties map[string]string   `json:"properties,omitempty"`
	Sensitive  []string            `json:"sensitive,omitempty"`
}

// normalizeMetadata returns nil for absent or empty metadata.
func normalizeMetadata(m *metadata) *metadata {
	if m == nil || len(m.Tags) == 0 && len(m.Properties) == 0 && len(m.Sensitive) == 0 {
		return nil
	}
	return m
}

func schemaKey(subject string, version int) string {
	return keySchema + subject + "/" + strconv.Itoa(version)
}

// entry is one global id's schema. Its content never changes once
// written (the leader refuses to reuse an id for other content).
type entry struct {
	id         int
	schemaType string
	schema     string
	refs       []reference
	meta       *metadata
	ruleSet    json.RawMessage
	// key identifies the content (type, canonical text, references,
	// metadata, rule set); keyNoMeta leaves out metadata and rule set.
	key, keyNoMeta [32]byte
	uses           int    // subject versions (live or soft-deleted) using it
	byID           []byte // body of GET /schemas/ids/{id}
}

// version is one version of a subject.
type version struct {
	num     int
	id      int
	deleted bool
}

type subject struct {
	versions map[int]*version
	order    []int // version numbers, ascending
}

// live returns the subject's versions that are not soft-deleted,
// ascending.
func (s *subject) live() []*version {
	var out []*version
	for _, n := range s.order {
		if v := s.versions[n]; !v.deleted {
			out = append(out, v)
		}
	}
	return out
}

// latest returns the highest version, live only unless deleted is set.
func (s *subject) latest(deleted bool) *version {
	for i := len(s.order) - 1; i >= 0; i-- {
		if v := s.versions[s.order[i]]; deleted || !v.deleted {
			return v
		}
	}
	return nil
}

func (s *subject) hasLive() bool { return s.latest(false) != nil }

// state is the registry's replayed state. apply holds mu for writing;
// readers hold it for reading.
type state struct {
	mu       sync.RWMutex
	subjects map[string]*subject
	ids      map[int]*entry
	byKey    map[[32]byte][]int // content key → ids, ascending
	maxID    int                // highest id ever seen
	floor    int                // highest maxid record applied
	config   map[string]string  // subject ("" global) → level
	mode     map[string]string  // subject ("" global) → mode
	changed  chan struct{}      // closed and replaced by every apply
}

func newState() *state {
	return &state{
		subjects: map[string]*subject{},
		ids:      map[int]*entry{},
		byKey:    map[[32]byte][]int{},
		config:   map[string]string{},
		mode:     map[string]string{},
		changed:  make(chan struct{}),
	}
}

// waitFor returns once cond, called with mu held for reading, holds, or
// with ctx's error.
func (s *state) waitFor(ctx context.Context, cond func() bool) error {
	for {
		s.mu.RLock()
		ok, changed := cond(), s.changed
		s.mu.RUnlock()
		if ok {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// apply applies one record. A record it cannot read changes nothing and
// is reported.
func (s *state) apply(rec schemalog.Record) error {
	key := string(rec.Key)
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.changed)
	s.changed = make(chan struct{})
	switch {
	case strings.HasPrefix(key, keySchema):
		return s.applySchema(key[len(keySchema):], rec.Value)
	case strings.HasPrefix(key, keyConfig):
		return applySetting[levelRecord](s.config, key[len(keyConfig):], rec.Value, parseLevel, "compatibility level")
	case strings.HasPrefix(key, keyMode):
		return applySetting[modeRecord](s.mode, key[len(keyMode):], rec.Value, parseMode, "mode")
	case key == keyMaxID:
		if rec.Value == nil {
			return nil
		}
		var v maxIDRecord
		if err := json.Unmarshal(rec.Value, &v); err != nil {
			return err
		}
		s.floor = max(s.floor, v.MaxID)
		s.maxID = max(s.maxID, v.MaxID)
		return nil
	default:
		return nil
	}
}

// applySetting applies a config/ or mode/ record of subject to m: a
// tombstone (nil value) unsets it, else the record R's value, checked by
// parse, sets it. what names the setting in errors.
func applySetting[R settingRecord](m map[string]string, subject string, value []byte, parse func(string) (string, bool), what string) error {
	if value == nil {
		delete(m, subject)
		return nil
	}
	var rec R
	if err := json.Unmarshal(value, &rec); err != nil {
		return err
	}
	v, ok := parse(rec.setting())
	if !ok {
		return fmt.Errorf("unknown %s %q", what, rec.setting())
	}
	m[subject] = v
	return nil
}

func (s *state) applySchema(rest string, value []byte) error {
	i := strings.LastIndexByte(rest, '/')
	if i <= 0 {
		return errors.New("schema key without subject and version")
	}
	name := rest[:i]
	num, err := strconv.Atoi(rest[i+1:])
	if err != nil || num < 1 {
		return fmt.Errorf("schema key: bad version %q", rest[i+1:])
	}
	subj := s.subjects[name]
	var old *version
	if subj != nil {
		old = subj.versions[num]
	}
	if value == nil {
		if old != nil {
			s.release(old.id)
			delete(subj.versions, num)
			subj.order = slices.DeleteFunc(subj.order, func(n int) bool { return n == num })
			if len(subj.order) == 0 {
				delete(s.subjects, name)
			}
		}
		return nil
	}
	var rec schemaRecord
	if err := json.Unmarshal(value, &rec); err != nil {
		return err
	}
	if rec.ID < 1 {
		return fmt.Errorf("schema record with id %d", rec.ID)
	}
	if rec.Subject != name || rec.Version != num {
		return fmt.Errorf("schema record for %s/%d under key of %s/%d", rec.Subject, rec.Version, name, num)
	}
	// Hold the new id before releasing the old one, so rewriting a version
	// with the same id (a soft delete) keeps its entry.
	s.hold(&rec)
	if old != nil {
		s.release(old.id)
	}
	if subj == nil {
		subj = &subject{versions: map[int]*version{}}
		s.subjects[name] = subj
	}
	if old == nil {
		i, _ := slices.BinarySearch(subj.order, num)
		subj.order = slices.Insert(subj.order, i, num)
	}
	subj.versions[num] = &version{num: num, id: rec.ID, deleted: rec.Deleted}
	s.maxID = max(s.maxID, rec.ID)
	return nil
}

// hold counts one more use of rec's id, creating (or, should a record
// disagree with an earlier one, replacing) its entry.
func (s *state) hold(rec *schemaRecord) {
	e := newEntry(rec.ID, rec.SchemaType, rec.Schema, rec.References, rec.Metadata, rec.RuleSet)
	if cur := s.ids[rec.ID]; cur != nil {
		if cur.key == e.key {
			cur.uses++
			return
		}
		s.unindex(cur)
		e.uses = cur.uses
	}
	e.uses++
	s.ids[rec.ID] = e
	ids := s.byKey[e.key]
	i, _ := slices.BinarySearch(ids, e.id)
	s.byKey[e.key] = slices.Insert(ids, i, e.id)
}

func (s *state) release(id int) {
	e := s.ids[id]
	if e == nil {
		return
	}
	if e.uses--; e.uses > 0 {
		return
	}
	s.unindex(e)
	delete(s.ids, id)
}

func (s *state) unindex(e *entry) {
	ids := slices.DeleteFunc(s.byKey[e.key], func(id int) bool { return id == e.id })
	if len(ids) == 0 {
		delete(s.byKey, e.key)
	} else {
		s.byKey[e.key] = ids
	}
}

// newEntry builds an entry and its content keys. A text that does not
// canonicalise (never written by this registry) keys on itself.
func newEntry(id int, schemaType, text string, refs []reference, meta *metadata, ruleSet json.RawMessage) *entry {
	schemaType = normalizeType(schemaType)
	meta = normalizeMetadata(meta)
	canon, err := canonical(schemaType, text)
	if err != nil {
		canon = text
	}
	e := &entry{id: id, schemaType: schemaType, schema: text, refs: refs, meta: meta, ruleSet: ruleSet}
	e.key, e.keyNoMeta = contentKeys(schemaType, canon, refs, meta, ruleSet)
	e.byID = encodeJSON(schemaByIDResponse{SchemaType: responseType(schemaType), Schema: text, References: refs, Metadata: meta, RuleSet: ruleSet})
	return e
}

// contentKeys hashes what makes two registrations the same schema.
func contentKeys(schemaType, canon string, refs []reference, meta *metadata, ruleSet json.RawMessage) (key, keyNoMeta [32]byte) {
	h := sha256.New()
	h.Write([]byte(schemaType))
	h.Write([]byte{0})
	h.Write([]byte(canon))
	h.Write([]byte{0})
	for _, r := range refs {
		fmt.Fprintf(h, "%q %q %d;", r.Name, r.Subject, r.Version)
	}
	h.Sum(keyNoMeta[:0])
	h.Write([]byte{0})
	if meta != nil {
		h.Write(encodeJSON(meta)) // map keys sorted: deterministic
	}
	h.Write([]byte{0})
	if len(ruleSet) > 0 {
		var b bytes.Buffer
		if json.Compact(&b, ruleSet) == nil {
			h.Write(b.Bytes())
		} else {
			h.Write(ruleSet)
		}
	}
	h.Sum(key[:0])
	return key, keyNoMeta
}

// canonical is the form registrations are compared in: JSON Schema text
// without insignificant whitespace (key order kept, as Confluent does);
// Avro re-marshalled with sorted keys, so formatting and key order do not
// matter but doc, defaults and aliases do (Avro's Parsing Canonical Form
// drops those, and schemas differing in defaults must not share an id).
func canonical(schemaType, text string) (string, error) {
	var b bytes.Buffer
	if schemaType == typeJSON {
		if err := json.Compact(&b, []byte(text)); err != nil {
			return "", err
		}
		return b.String(), nil
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	if dec.More() {
		return "", errors.New("trailing data after the schema")
	}
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// encodeJSON encodes v without HTML escaping (schema texts stay as
// written), or returns nil when v cannot be encoded — which our own types,
// decoded from JSON, never are.
func encodeJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil
	}
	return b.Bytes()
}

// record rebuilds the record of a subject version from the state.
func (s *state) record(name string, v *version) schemaRecord {
	e := s.ids[v.id]
	return schemaRecord{
		Subject: name, Version: v.num, ID: v.id, Deleted: v.deleted,
		SchemaType: e.schemaType, Schema: e.schema, References: e.refs, Metadata: e.meta, RuleSet: e.ruleSet,
	}
}

// levelOf returns the subject's compatibility level, else the global one,
// else def.
func (s *state) levelOf(subject, def string) string {
	if l, ok := s.config[subject]; ok {
		return l
	}
	if l, ok := s.config[""]; ok {
		return l
	}
	return def
}

// modeOf returns the subject's mode, else the global one, else READWRITE.
func (s *state) modeOf(subject string) string {
	if m, ok := s.mode[subject]; ok {
		return m
	}
	if m, ok := s.mode[""]; ok {
		return m
	}
	return modeReadWrite
}

// referrers returns the ids of schemas (used by any version) that
// reference subject version num.
func (s *state) referrers(name string, num int) []int {
	var out []int
	for id, e := range s.ids {
		for _, r := range e.refs {
			if r.Subject == name && r.Version == num {
				out = append(out, id)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}
