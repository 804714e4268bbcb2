package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/twmb/avro"

	"github.com/eventlogging/eventlogging/internal/schema"
)

// Schema types.
const (
	typeJSON = "JSON"
	typeAvro = "AVRO"
)

// schemaTypes are the supported types, as GET /schemas/types lists them.
var schemaTypes = []string{typeJSON, typeAvro}

// normalizeType returns the upper-case schema type; "" is AVRO, as in
// Confluent's API.
func normalizeType(t string) string {
	if t == "" {
		return typeAvro
	}
	return strings.ToUpper(t)
}

// responseType is the schemaType field of an answer: omitted for AVRO, as
// Confluent does.
func responseType(t string) string {
	if t == typeAvro {
		return ""
	}
	return t
}

// maxSubjectBytes is the longest subject name accepted.
const maxSubjectBytes = 255

// validSubject reports whether s can name a subject: 1 to 255 bytes of
// UTF-8 without control characters, and no "." or ".." segment between
// slashes (subjects double as Event Platform $schema paths).
func validSubject(s string) bool {
	if s == "" || len(s) > maxSubjectBytes || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	for seg := range strings.SplitSeq(s, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

func errInvalidSubject(s string) *apiError {
	return apiErrorf(codeInvalidSubject, "Invalid subject %q: a subject is 1 to %d bytes of UTF-8 without control characters or \".\" and \"..\" segments", s, maxSubjectBytes)
}

// schemaRequest is the body of POST /subjects/{s}/versions, POST
// /subjects/{s} and POST /compatibility/….
type schemaRequest struct {
	Schema     *string         `json:"schema"`
	SchemaType string          `json:"schemaType,omitempty"`
	References []reference     `json:"references,omitempty"`
	Metadata   *metadata       `json:"metadata,omitempty"`
	RuleSet    json.RawMessage `json:"ruleSet,omitempty"`
	// ID and Version, both optional (0 or -1: absent), are honoured in
	// IMPORT mode only.
	ID      int64 `json:"id,omitempty"`
	Version int64 `json:"version,omitempty"`
}

// decodeSchemaRequest decodes a request body: 400 for malformed JSON, 422
// for a field of the wrong type, 42201 without a schema.
func decodeSchemaRequest(body []byte) (*schemaRequest, error) {
	var req schemaRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, bodyError(err)
	}
	if req.Schema == nil || strings.TrimSpace(*req.Schema) == "" {
		return nil, apiErrorf(codeInvalidSchema, "Empty schema")
	}
	return &req, nil
}

// bodyError maps a JSON decoding error of a request body.
func bodyError(err error) *apiError {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return apiErrorf(codeUnprocessable, "Unrecognized value for field %q: %v", typeErr.Field, err)
	}
	return apiErrorf(codeBadRequest, "Request body is not valid JSON: %v", err)
}

// candidate is a validated schema, ready to compare and register.
type candidate struct {
	schemaType     string
	text           string
	refs           []reference
	meta           *metadata
	ruleSet        json.RawMessage
	key, keyNoMeta [32]byte
}

// matches reports whether e holds the candidate's schema. Without metadata
// or rule set in the request, metadata is not compared (as Confluent's
// lookup does).
func (c *candidate) matches(e *entry) bool {
	if c.meta == nil && len(c.ruleSet) == 0 {
		return e.keyNoMeta == c.keyNoMeta
	}
	return e.key == c.key
}

// maxRefDepth bounds reference chains (and breaks cycles).
const maxRefDepth = 32

// prepare validates a schema request: its type, that it parses (Avro,
// with its references) or parses and compiles as JSON Schema (after
// draft-3 normalisation), and that its references exist. The parse or
// compile runs in one of the compiler's slots and within its limits.
func (r *Registry) prepare(ctx context.Context, req *schemaRequest) (*candidate, error) {
	c := &candidate{
		schemaType: normalizeType(req.SchemaType),
		text:       *req.Schema,
		refs:       req.References,
		meta:       normalizeMetadata(req.Metadata),
		ruleSet:    req.RuleSet,
	}
	if c.schemaType != typeJSON && c.schemaType != typeAvro {
		return nil, errInvalidSchema("schema type %q is not supported (supported: JSON, AVRO)", req.SchemaType)
	}
	comp := r.cfg.Compiler
	if err := comp.CheckSize(len(c.text)); err != nil {
		return nil, compileError(err)
	}
	refTexts, err := r.referencedTexts(c.refs)
	if err != nil {
		return nil, err
	}
	switch c.schemaType {
	case typeJSON:
		if err := validateJSONSchema(ctx, comp, c.text); err != nil {
			return nil, err
		}
	case typeAvro:
		err := comp.Do(ctx, func() error { return validateAvro(c.text, refTexts) })
		if err != nil {
			return nil, compileError(err)
		}
	}
	canon, err := canonical(c.schemaType, c.text)
	if err != nil {
		return nil, errInvalidSchema("%v", err)
	}
	c.key, c.keyNoMeta = contentKeys(c.schemaType, canon, c.refs, c.meta, c.ruleSet)
	return c, nil
}

// referencedTexts returns the texts of the schemas refs name, transitively,
// dependencies first; 42201 when one does not exist.
func (r *Registry) referencedTexts(refs []reference) ([]string, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	r.st.mu.RLock()
	defer r.st.mu.RUnlock()
	var (
		out  []string
		seen = map[reference]bool{}
		walk func(refs []reference, depth int) error
	)
	walk = func(refs []reference, depth int) error {
		if depth > maxRefDepth {
			return errInvalidSchema("references nest deeper than %d", maxRefDepth)
		}
		for _, ref := range refs {
			key := reference{Subject: ref.Subject, Version: ref.Version}
			if seen[key] {
				continue
			}
			seen[key] = true
			var v *version
			if subj := r.st.subjects[ref.Subject]; subj != nil {
				if ref.Version == -1 {
					v = subj.latest(false)
				} else if v = subj.versions[ref.Version]; v != nil && v.deleted {
					v = nil
				}
			}
			if v == nil {
				return errInvalidSchema("reference %q: subject %q version %d not found", ref.Name, ref.Subject, ref.Version)
			}
			e := r.st.ids[v.id]
			if err := walk(e.refs, depth+1); err != nil {
				return err
			}
			out = append(out, e.schema)
		}
		return nil
	}
	if err := walk(refs, 0); err != nil {
		return nil, err
	}
	return out, nil
}

// Bounds on JSON Schema documents. The compiler's time grows with the
// square of a document's nesting depth and of its number of subschemas
// (seconds past 10,000 objects or 1,000 levels, minutes past 100,000 or
// 9,000): a request must not hold a core for that long. Event schemas stay
// far below both.
const (
	maxSchemaDepth   = 64    // nested objects and arrays
	maxSchemaObjects = 5_000 // objects, each possibly a subschema
)

// validateJSONSchema checks a JSON Schema document: JSON text (not YAML),
// an object, within maxSchemaDepth and maxSchemaObjects, that compiles once
// normalised (draft 3 → 2020-12) with comp. The text itself is what gets
// stored.
func validateJSONSchema(ctx context.Context, comp *schema.Compiler, text string) error {
	raw := bytes.TrimSpace([]byte(text))
	if !json.Valid(raw) {
		return errInvalidSchema("a JSON schema must be valid JSON text")
	}
	if depth, objects := jsonShape(raw); depth > maxSchemaDepth || objects > maxSchemaObjects {
		return errInvalidSchema("a JSON schema may nest %d levels deep and hold %d objects at most (this one: %d levels, %d objects)",
			maxSchemaDepth, maxSchemaObjects, depth, objects)
	}
	doc, err := schema.ParseDocument(raw)
	if err != nil {
		return errInvalidSchema("%v", err)
	}
	if _, err := comp.Compile(ctx, schema.ID{Name: "registry", Revision: 1}, doc); err != nil {
		return compileError(err)
	}
	return nil
}

// compileError maps an error of the compiler: a limit is an invalid
// schema whose message is the limit's ("Invalid schema: schema has 4000
// patterns, the limit is 1000 (registry.max_schema_patterns)"), no free
// slot is 503, the request's end a timeout.
func compileError(err error) error {
	var le *schema.LimitError
	switch {
	case errors.As(err, &le):
		return errInvalidSchema("%s", le.Error())
	case errors.Is(err, schema.ErrBusy):
		return apiErrorf(codeBusy, "Too many schemas are being compiled, retry later: %v", err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return apiErrorf(codeTimeout, "Operation timed out: %v", err)
	}
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	return errInvalidSchema("%v", err)
}

// jsonShape returns the nesting depth of valid JSON text and its number
// of objects.
func jsonShape(raw []byte) (maxDepth, objects int) {
	depth, inString, escaped := 0, false, false
	for _, c := range raw {
		switch {
		case escaped:
			escaped = false
		case inString:
			escaped = c == '\\'
			inString = c != '"'
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if c == '{' {
				objects++
			}
			depth++
			maxDepth = max(maxDepth, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return maxDepth, objects
}

// validateAvro parses an Avro schema, after the schemas it references.
func validateAvro(text string, refTexts []string) error {
	if len(refTexts) == 0 {
		if _, err := avro.Parse(text); err != nil {
			return errInvalidSchema("%v", err)
		}
		return nil
	}
	var cache avro.SchemaCache
	for _, t := range refTexts {
		if _, err := cache.Parse(t); err != nil {
			return errInvalidSchema("referenced schema: %v", err)
		}
	}
	if _, err := cache.Parse(text); err != nil {
		return errInvalidSchema("%v", err)
	}
	return nil
}
