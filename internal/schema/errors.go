package schema

import (
	"cmp"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// ValidationError is the error of [Schema.Validate]: every violation of one
// value, sorted by pointer.
type ValidationError struct {
	Violations []Violation
}

// Violation is one way a value breaks its schema.
type Violation struct {
	// Pointer locates the offending value (or, for a missing or extra
	// property, the property) as an RFC 6901 JSON pointer relative to the
	// validated value; "" is the value itself.
	Pointer string `json:"pointer"`
	// Reason says what is wrong, in plain English.
	Reason string `json:"reason"`
}

// Error lists all violations, e.g.
// "/articleId: got string, want integer; /action: required property missing".
// A violation of the value itself is written "(root): reason".
func (e *ValidationError) Error() string {
	var b strings.Builder
	for i, v := range e.Violations {
		if i > 0 {
			b.WriteString("; ")
		}
		if v.Pointer == "" {
			b.WriteString("(root)")
		} else {
			b.WriteString(v.Pointer)
		}
		b.WriteString(": ")
		b.WriteString(v.Reason)
	}
	return b.String()
}

var printer = message.NewPrinter(language.English)

// newValidationError flattens the library's error tree into leaf violations.
func newValidationError(root *jsonschema.ValidationError) *ValidationError {
	var out []Violation
	collectViolations(root, &out)
	slices.SortFunc(out, func(a, b Violation) int {
		return cmp.Or(strings.Compare(a.Pointer, b.Pointer), strings.Compare(a.Reason, b.Reason))
	})
	out = slices.Compact(out)
	if len(out) == 0 {
		out = append(out, Violation{Reason: "invalid"})
	}
	return &ValidationError{Violations: out}
}

func collectViolations(e *jsonschema.ValidationError, out *[]Violation) {
	if len(e.Causes) > 0 {
		for _, c := range e.Causes {
			collectViolations(c, out)
		}
		return
	}
	ptr := pointer(e.InstanceLocation)
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		for _, p := range k.Missing {
			*out = append(*out, Violation{Pointer: child(ptr, p), Reason: "required property missing"})
		}
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			*out = append(*out, Violation{Pointer: child(ptr, p), Reason: "additional property not allowed"})
		}
	case *kind.DependentRequired:
		for _, p := range k.Missing {
			*out = append(*out, Violation{Pointer: child(ptr, p), Reason: "required property missing (" + quote(k.Prop) + " is present)"})
		}
	case *kind.Dependency:
		for _, p := range k.Missing {
			*out = append(*out, Violation{Pointer: child(ptr, p), Reason: "required property missing (" + quote(k.Prop) + " is present)"})
		}
	case *kind.FalseSchema:
		*out = append(*out, Violation{Pointer: ptr, Reason: falseSchemaReason(e.SchemaURL)})
	case *kind.Not:
		*out = append(*out, Violation{Pointer: ptr, Reason: "value matches a disallowed schema"})
	default:
		*out = append(*out, Violation{Pointer: ptr, Reason: e.ErrorKind.LocalizedString(printer)})
	}
}

// falseSchemaReason explains a value rejected by a false schema, from the
// keyword that holds it.
func falseSchemaReason(schemaURL string) string {
	_, frag, _ := strings.Cut(schemaURL, "#")
	toks := strings.Split(frag, "/")
	switch last := toks[len(toks)-1]; {
	case last == "additionalProperties" || last == "unevaluatedProperties":
		return "additional property not allowed"
	case len(toks) >= 2 && toks[len(toks)-2] == "properties":
		return "property not allowed"
	case last == "items" || last == "unevaluatedItems" || len(toks) >= 2 && toks[len(toks)-2] == "prefixItems":
		return "item not allowed"
	default:
		return "value not allowed"
	}
}

func quote(s string) string { return `"` + s + `"` }

// pointer joins path tokens into an RFC 6901 JSON pointer.
func pointer(tokens []string) string {
	if len(tokens) == 0 {
		return ""
	}
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escapeToken(t))
	}
	return b.String()
}

func child(ptr, name string) string { return ptr + "/" + escapeToken(name) }

var tokenEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func escapeToken(t string) string {
	if !strings.ContainsAny(t, "~/") {
		return t
	}
	return tokenEscaper.Replace(t)
}
