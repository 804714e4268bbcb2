package schema

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ErrInvalidSchema is wrapped by errors for schema documents that cannot be
// decoded or compiled.
var ErrInvalidSchema = errors.New("invalid schema")

// Schema is one compiled schema version. It is immutable and safe for
// concurrent use.
type Schema struct {
	id       ID
	title    string
	doc      map[string]any
	compiled *jsonschema.Schema
	fast     *fastNode // nil: the schema needs the library for every value
}

// ID returns the schema version this schema was compiled for.
func (s *Schema) ID() ID { return s.id }

// Title returns the document's "title", or "" when it has none.
func (s *Schema) Title() string { return s.title }

// Document returns a copy of the normalised schema document (see
// [Normalize]); the caller may modify it.
func (s *Schema) Document() map[string]any {
	m, _ := deepCopy(s.doc).(map[string]any)
	return m
}

// Validate checks v, a decoded JSON value as produced by encoding/json with
// UseNumber (map[string]any, []any, json.Number, string, bool, nil; float64
// and Go integers are accepted too). It returns nil or a *ValidationError
// listing every violation. Valid also means storable (storable.go): an
// integer field holds an int64, a number field a finite float64, and no
// string is longer than MaxStringBytes.
//
// A valid value is usually checked without allocating (see fast.go); an
// invalid one is checked again by the library, which explains it.
func (s *Schema) Validate(v any) error {
	if s.fast != nil && s.fast.valid(v) {
		return nil // which implies no string is too long
	}
	err := s.compiled.Validate(v)
	long := hasLongString(v)
	var verr *jsonschema.ValidationError
	if err != nil && !errors.As(err, &verr) {
		// The library reports everything as *ValidationError; keep any
		// other error visible rather than passing the value.
		return &ValidationError{Violations: []Violation{{Reason: err.Error()}}}
	}
	if !long {
		if verr == nil {
			return nil
		}
		return newValidationError(verr)
	}
	var out []Violation
	if verr != nil {
		out = newValidationError(verr).Violations
	}
	longStrings(v, "", &out)
	slices.SortStableFunc(out, func(a, b Violation) int { return strings.Compare(a.Pointer, b.Pointer) })
	return &ValidationError{Violations: out}
}

// refusingLoader is the compiler's URL loader: it loads nothing, so a $ref
// outside the document (other than the standard metaschemas, which the
// library embeds) fails to compile instead of reaching the network or disk.
type refusingLoader struct{}

// errExternalRef is returned for every external $ref.
var errExternalRef = errors.New("external $ref is not allowed: only references inside the document and to standard metaschemas resolve")

func (refusingLoader) Load(string) (any, error) { return nil, errExternalRef }

// Compile normalises doc (see [Normalize]) and compiles it as schema id,
// within the default [Limits] (a [Compiler] applies others, and bounds
// how many compiles run at once). Formats are asserted; references
// outside the document are refused. doc is not modified. Errors wrap
// [ErrInvalidSchema]; when the document breaks its metaschema they also
// wrap a [*ValidationError] whose pointers locate the faults in the
// normalised document, and when it exceeds a limit a [*LimitError].
func Compile(id ID, doc map[string]any) (*Schema, error) {
	return compile(id, doc, Limits{}.withDefaults())
}

func compile(id ID, doc map[string]any, lim Limits) (s *Schema, err error) {
	defer func() {
		// The compiler runs on documents from outside the process; a bug
		// it trips on must fail this schema, not the processor.
		if p := recover(); p != nil {
			s, err = nil, fmt.Errorf("%w: compiler panic: %v", ErrInvalidSchema, p)
		}
	}()
	b := newBudget(lim)
	defer b.sealed.Store(true)
	norm := Normalize(doc)
	if err := checkPatterns(norm, lim); err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	c.UseLoader(refusingLoader{})
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseRegexpEngine(b.regexp)
	useStorableVocabulary(c, b)
	loc := "urn:eventlogging:schema:" + url.PathEscape(id.Name) + ":" + strconv.FormatInt(id.Revision, 10)
	// The compiler keeps norm; it is never modified afterwards, and
	// Document hands out copies.
	if err := c.AddResource(loc, norm); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSchema, err)
	}
	compiled, err := c.Compile(loc)
	if b.err != nil {
		// A limit stopped the compile (the library's error says less).
		return nil, fmt.Errorf("%w: %w", ErrInvalidSchema, b.err)
	}
	if err != nil {
		var meta *jsonschema.SchemaValidationError
		var verr *jsonschema.ValidationError
		if errors.As(err, &meta) && errors.As(meta.Err, &verr) {
			// One line, with pointers into the document.
			return nil, fmt.Errorf("%w: not valid against its metaschema: %w", ErrInvalidSchema, newValidationError(verr))
		}
		return nil, fmt.Errorf("%w: %w", ErrInvalidSchema, err)
	}
	title, _ := norm["title"].(string)
	return &Schema{id: id, title: title, doc: norm, compiled: compiled, fast: buildFast(compiled)}, nil
}

// HasProperty reports whether the schema's root declares property name
// (the intake fills optional fields such as "http" only when declared).
func (s *Schema) HasProperty(name string) bool {
	props, _ := s.doc["properties"].(map[string]any)
	_, ok := props[name]
	return ok
}
