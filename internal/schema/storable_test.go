package schema

import (
	"errors"
	"strings"
	"testing"
)

// TestStorableNumbers: an integer field refuses what an int64 cannot
// hold, a number field what overflows a float64; the fast tree, the
// library, Validate and ValidJSON agree on each.
func TestStorableNumbers(t *testing.T) {
	const (
		intReason = "integer out of range: must be between -9223372036854775808 and 9223372036854775807"
		numReason = "number out of range of a 64-bit float"
	)
	for _, tc := range []struct {
		typ    string // the field's schema
		value  string
		reason string // "": valid
	}{
		{`{"type": "integer"}`, `9223372036854775807`, ""},
		{`{"type": "integer"}`, `-9223372036854775808`, ""},
		{`{"type": "integer"}`, `9223372036854775808`, intReason},
		{`{"type": "integer"}`, `-9223372036854775809`, intReason},
		{`{"type": "integer"}`, `123456789012345678901234567890`, intReason},
		{`{"type": "integer"}`, `9223372036854775807.0`, ""},
		{`{"type": "integer"}`, `9223372036854775808.000`, intReason},
		{`{"type": "integer"}`, `9.223372036854775807e18`, ""},
		{`{"type": "integer"}`, `9.223372036854775808e18`, intReason},
		{`{"type": "integer"}`, `-9.223372036854775808e18`, ""},
		{`{"type": "integer"}`, `1e18`, ""},
		{`{"type": "integer"}`, `1e19`, intReason},
		{`{"type": "integer"}`, `1e999999`, intReason},
		{`{"type": "integer"}`, `-1e999999`, intReason},
		{`{"type": ["integer", "null"]}`, `9223372036854775808`, intReason},
		{`{"type": ["integer", "null"]}`, `null`, ""},
		{`{"type": ["integer", "number"]}`, `9223372036854775808`, ""}, // a DOUBLE column
		{`{"type": "number"}`, `9223372036854775808`, ""},
		{`{"type": "number"}`, `1.5e308`, ""},
		{`{"type": "number"}`, `1.7976931348623157e308`, ""},
		{`{"type": "number"}`, `-1.7976931348623157e308`, ""},
		{`{"type": "number"}`, `1e-400`, ""}, // stored as 0, as a DOUBLE column does
		{`{"type": "number"}`, `1.8e308`, numReason},
		{`{"type": "number"}`, `1e999999`, numReason},
		{`{"type": "number"}`, `-1e999999`, numReason},
		{`{"type": "number"}`, `1` + strings.Repeat("0", 309), numReason},
		{`{"type": "number"}`, `1` + strings.Repeat("0", 308), ""},
		{`{"type": "number"}`, `18` + strings.Repeat("0", 307), numReason}, // 1.8e308 in 309 digits
		{`{"type": ["number", "string"]}`, `1e999999`, numReason},
		{`{}`, `1e999999`, ""}, // no numeric column: stored as JSON text
		{`{"type": "array", "items": {"type": "integer"}}`, `[1,9223372036854775808]`, intReason},
		{`{"$ref": "#/$defs/i"}`, `9223372036854775808`, intReason},
		{`{"anyOf": [{"type": "integer"}, {"type": "string"}]}`, `9223372036854775808`, intReason},
		{`{"allOf": [{"type": "number"}, {"minimum": 0}]}`, `1e999999`, numReason},
	} {
		doc := `{"type": "object", "$defs": {"i": {"type": "integer"}}, "properties": {"x": ` + tc.typ + `}}`
		text := `{"x":` + tc.value + `}`
		s := compileFast(t, 0, doc)
		if s.fast == nil {
			t.Fatalf("%s has no fast tree", doc)
		}
		v := decodeEvent(t, text)
		valid := tc.reason == ""
		if got := s.fast.valid(v); got != valid {
			t.Errorf("%s in %s: fast path says valid=%v", tc.value, tc.typ, got)
		}
		if got := s.compiled.Validate(v) == nil; got != valid {
			t.Errorf("%s in %s: library says valid=%v", tc.value, tc.typ, got)
		}
		if s.ValidJSON([]byte(text)) && !valid {
			t.Errorf("%s in %s: ValidJSON says valid", tc.value, tc.typ)
		}
		err := s.Validate(v)
		if valid {
			if err != nil {
				t.Errorf("%s in %s: %v", tc.value, tc.typ, err)
			}
			continue
		}
		var verr *ValidationError
		if !errors.As(err, &verr) {
			t.Fatalf("%s in %s: Validate = %v, want a *ValidationError", tc.value, tc.typ, err)
		}
		if !strings.Contains(verr.Error(), tc.reason) || !strings.HasPrefix(verr.Violations[0].Pointer, "/x") {
			t.Errorf("%s in %s: Validate = %v, want %q at /x", tc.value, tc.typ, err, tc.reason)
		}
	}
}

// TestStorableStrings: no string of an event, value or property name,
// may be longer than MaxStringBytes, whatever the schema says or does not
// say about it; the fast path, Validate and ValidJSON agree.
func TestStorableStrings(t *testing.T) {
	fits := strings.Repeat("é", MaxStringBytes/2) + "a" // 65,535 bytes
	long := fits + "a"
	const reason = "string too long to store: 65536 bytes, the limit is 65535"
	s := compileFast(t, 0, `{"type": "object", "properties": {"s": {"type": "string"}, "free": {"type": "object"}, "arr": {"type": "array"}}, "additionalProperties": true}`)
	for _, tc := range []struct {
		text    string
		pointer string // "": valid
		reason  string
	}{
		{`{"s":"` + fits + `"}`, "", ""},
		{`{"s":"` + long + `"}`, "/s", reason},
		{`{"free":{"k":"` + long + `"}}`, "/free/k", reason},
		{`{"arr":[1,"` + long + `"]}`, "/arr/1", reason},
		{`{"free":{"` + long + `":1}}`, "/free/" + long, "property name too long to store: 65536 bytes, the limit is 65535"},
		{`{"undeclared":"` + long + `"}`, "/undeclared", reason},
	} {
		v := decodeEvent(t, tc.text)
		err := s.Validate(v)
		if s.ValidJSON([]byte(tc.text)) && tc.pointer != "" {
			t.Errorf("%.40s: ValidJSON says valid", tc.pointer)
		}
		if got := s.fast.valid(v); got != (tc.pointer == "") {
			t.Errorf("%.40s: fast path says valid=%v", tc.pointer, got)
		}
		if tc.pointer == "" {
			if err != nil {
				t.Errorf("Validate(%d bytes) = %v", len(tc.text), err)
			}
			continue
		}
		var verr *ValidationError
		if !errors.As(err, &verr) || len(verr.Violations) != 1 || verr.Violations[0].Pointer != tc.pointer || verr.Violations[0].Reason != tc.reason {
			t.Errorf("%.40s: Validate = %.200v, want %q at %.40s", tc.pointer, err, tc.reason, tc.pointer)
		}
	}
	// Another violation of the same value is still reported.
	v := decodeEvent(t, `{"s":1,"arr":["`+long+`"]}`)
	if err := s.Validate(v); err == nil || !strings.Contains(err.Error(), "/s: got number, want string") || !strings.Contains(err.Error(), "/arr/0: "+reason) {
		t.Errorf("Validate = %.300v", err)
	}
}

// TestMetaschemaUnchanged: the vocabulary that attaches the range checks
// leaves the metaschema as the library has it (see restoredVocabularies).
func TestMetaschemaUnchanged(t *testing.T) {
	for _, doc := range []string{
		`{"title": 5}`,
		`{"description": []}`,
		`{"format": 5}`,
		`{"contentMediaType": 5}`,
		`{"deprecated": "yes"}`,
		`{"$schema": "https://json-schema.org/draft/2019-09/schema", "format": 5}`,
		`{"$schema": "https://json-schema.org/draft/2019-09/schema", "title": 5}`,
		`{"$schema": "http://json-schema.org/draft-07/schema#", "title": 5}`,
		`{"properties": {"a": {"type": "integre"}}}`,
	} {
		if _, err := Compile(ID{Name: "Meta", Revision: 1}, mustJSON(t, doc)); err == nil {
			t.Errorf("Compile(%s) succeeds, want a metaschema error", doc)
		}
	}
}
