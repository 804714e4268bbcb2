package schema

import (
	"slices"
	"strings"
)

// Draft2020 is the $schema URI of JSON Schema draft 2020-12: the draft
// draft-3 documents are converted to, and the default for documents that
// name none.
const Draft2020 = "https://json-schema.org/draft/2020-12/schema"

// Normalize turns a schema document into the modern draft the validator
// compiles. It never modifies doc; the result shares nothing with it.
//
// Draft-3 documents (a $schema naming draft-03, a boolean "required" inside
// "properties", or, without $schema, another draft-3-only keyword: type
// "any", divisibleBy, extends, disallow) are rewritten to draft 2020-12:
// per-property "required": true becomes the parent's sorted "required" list,
// type "any" is dropped, divisibleBy becomes multipleOf, extends allOf,
// disallow not, boolean exclusiveMinimum/exclusiveMaximum become numbers,
// tuple items become prefixItems, dependencies become dependentRequired and
// dependentSchemas, and the formats host-name and ip-address become hostname
// and ipv4. Annotations (title, description, …) are kept.
//
// Other documents are kept as written, with $schema set to draft 2020-12
// when absent. Then, for every document, a root that has "properties" and
// no "type" gets "type": "object", and an object root that says nothing
// about additional properties is closed: "additionalProperties": false, or,
// when the root combines subschemas (allOf, anyOf, oneOf, $ref, if,
// dependentSchemas, …), "unevaluatedProperties": false on drafts 2019-09
// and later; a combining root of an older draft is left open. Nested
// objects are left as written.
func Normalize(doc map[string]any) map[string]any {
	out, _ := deepCopy(doc).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	if isDraft3(out) {
		convertDraft3(out)
		out["$schema"] = Draft2020
	} else if _, ok := out["$schema"]; !ok {
		out["$schema"] = Draft2020
	}
	closeRoot(out)
	return out
}

func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if v == nil {
			return map[string]any(nil)
		}
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		if v == nil {
			return []any(nil)
		}
		s := make([]any, len(v))
		for i, e := range v {
			s[i] = deepCopy(e)
		}
		return s
	default:
		return v
	}
}

// Keywords whose values are subschemas, by shape.
var (
	schemaKeywords = []string{
		"additionalProperties", "additionalItems", "items", "not", "contains",
		"propertyNames", "if", "then", "else", "unevaluatedProperties",
		"unevaluatedItems", "extends", "contentSchema",
	}
	schemaListKeywords = []string{
		"items", "prefixItems", "allOf", "anyOf", "oneOf", "extends", "type", "disallow",
	}
	schemaMapKeywords = []string{
		"properties", "patternProperties", "definitions", "$defs",
		"dependentSchemas", "dependencies",
	}
)

// forEachSubschema calls fn for every object-valued subschema of s, one
// level deep.
func forEachSubschema(s map[string]any, fn func(map[string]any)) {
	for _, k := range schemaKeywords {
		if m, ok := s[k].(map[string]any); ok {
			fn(m)
		}
	}
	for _, k := range schemaListKeywords {
		if l, ok := s[k].([]any); ok {
			for _, e := range l {
				if m, ok := e.(map[string]any); ok {
					fn(m)
				}
			}
		}
	}
	for _, k := range schemaMapKeywords {
		if mm, ok := s[k].(map[string]any); ok {
			for _, e := range mm {
				if m, ok := e.(map[string]any); ok {
					fn(m)
				}
			}
		}
	}
}

// anySchema reports whether pred holds for s or any of its subschemas.
func anySchema(s map[string]any, pred func(map[string]any) bool) bool {
	if pred(s) {
		return true
	}
	found := false
	forEachSubschema(s, func(c map[string]any) {
		if !found && anySchema(c, pred) {
			found = true
		}
	})
	return found
}

func isDraft3(doc map[string]any) bool {
	if s, ok := doc["$schema"].(string); ok {
		if strings.Contains(s, "draft-03") {
			return true
		}
		return anySchema(doc, hasBoolRequired)
	}
	return anySchema(doc, func(s map[string]any) bool {
		return hasBoolRequired(s) || hasDraft3Keyword(s)
	})
}

func hasBoolRequired(s map[string]any) bool {
	props, _ := s["properties"].(map[string]any)
	for _, p := range props {
		if m, ok := p.(map[string]any); ok {
			if _, ok := m["required"].(bool); ok {
				return true
			}
		}
	}
	return false
}

func hasDraft3Keyword(s map[string]any) bool {
	for _, k := range []string{"divisibleBy", "extends", "disallow"} {
		if _, ok := s[k]; ok {
			return true
		}
	}
	switch t := s["type"].(type) {
	case string:
		return t == "any"
	case []any:
		for _, e := range t {
			if e == "any" {
				return true
			}
			if _, ok := e.(map[string]any); ok {
				return true
			}
		}
	}
	return false
}

// convertDraft3 rewrites the draft-3 schema s in place to draft 2020-12,
// then its subschemas.
func convertDraft3(s map[string]any) {
	// Per-property "required": true lists the property in the parent.
	var required []string
	if props, ok := s["properties"].(map[string]any); ok {
		for name, p := range props {
			if m, ok := p.(map[string]any); ok && m["required"] == true {
				required = append(required, name)
			}
		}
	}
	switch r := s["required"].(type) {
	case bool:
		delete(s, "required")
	case []any:
		for _, e := range r {
			if name, ok := e.(string); ok {
				required = append(required, name)
			}
		}
	}
	if len(required) > 0 {
		slices.Sort(required)
		required = slices.Compact(required)
		list := make([]any, len(required))
		for i, name := range required {
			list[i] = name
		}
		s["required"] = list
	}

	convertType(s)
	convertDisallow(s)
	if v, ok := s["divisibleBy"]; ok {
		if _, has := s["multipleOf"]; !has {
			s["multipleOf"] = v
		}
		delete(s, "divisibleBy")
	}
	if v, ok := s["extends"]; ok {
		delete(s, "extends")
		switch v := v.(type) {
		case map[string]any:
			appendAllOf(s, v)
		case []any:
			for _, e := range v {
				appendAllOf(s, e)
			}
		}
	}
	convertExclusive(s, "exclusiveMinimum", "minimum")
	convertExclusive(s, "exclusiveMaximum", "maximum")
	convertItems(s)
	convertDependencies(s)
	if f, ok := s["format"].(string); ok {
		switch f {
		case "host-name":
			s["format"] = "hostname"
		case "ip-address":
			s["format"] = "ipv4"
		}
	}
	forEachSubschema(s, convertDraft3)
}

func appendAllOf(s map[string]any, sub any) {
	all, _ := s["allOf"].([]any)
	s["allOf"] = append(all, sub)
}

// typeSchema turns one draft-3 type or disallow entry into a schema.
func typeSchema(e any) any {
	switch e := e.(type) {
	case string:
		if e == "any" {
			return map[string]any{}
		}
		return map[string]any{"type": e}
	default:
		return e
	}
}

func convertType(s map[string]any) {
	switch t := s["type"].(type) {
	case string:
		if t == "any" {
			delete(s, "type")
		}
	case []any:
		var names, union []any
		for _, e := range t {
			switch e := e.(type) {
			case string:
				if e == "any" {
					delete(s, "type")
					return
				}
				names = append(names, e)
			case map[string]any:
				union = append(union, e)
			}
		}
		if len(union) == 0 {
			if len(names) == 0 {
				delete(s, "type")
			} else {
				s["type"] = names
			}
			return
		}
		// A union with schemas: anyOf of the named types and the schemas.
		delete(s, "type")
		alts := make([]any, 0, len(names)+len(union))
		for _, n := range names {
			alts = append(alts, typeSchema(n))
		}
		alts = append(alts, union...)
		if _, has := s["anyOf"]; has {
			appendAllOf(s, map[string]any{"anyOf": alts})
		} else {
			s["anyOf"] = alts
		}
	}
}

func convertDisallow(s map[string]any) {
	d, ok := s["disallow"]
	if !ok {
		return
	}
	delete(s, "disallow")
	entries, isList := d.([]any)
	if !isList {
		entries = []any{d}
	}
	var not map[string]any
	allNames := true
	for _, e := range entries {
		if n, ok := e.(string); !ok || n == "any" {
			allNames = false
		}
	}
	switch {
	case allNames && !isList:
		not = map[string]any{"type": d}
	case allNames:
		not = map[string]any{"type": entries}
	default:
		alts := make([]any, len(entries))
		for i, e := range entries {
			alts[i] = typeSchema(e)
		}
		not = map[string]any{"anyOf": alts}
	}
	if _, has := s["not"]; has {
		appendAllOf(s, map[string]any{"not": not})
	} else {
		s["not"] = not
	}
}

// convertExclusive turns draft-3/4 boolean exclusiveMinimum (with minimum)
// into the numeric form.
func convertExclusive(s map[string]any, exclusive, bound string) {
	b, ok := s[exclusive].(bool)
	if !ok {
		return
	}
	delete(s, exclusive)
	if v, has := s[bound]; b && has {
		s[exclusive] = v
		delete(s, bound)
	}
}

func convertItems(s map[string]any) {
	switch items := s["items"].(type) {
	case []any:
		s["prefixItems"] = items
		delete(s, "items")
		if add, ok := s["additionalItems"]; ok {
			delete(s, "additionalItems")
			if add != true {
				s["items"] = add
			}
		}
	default:
		delete(s, "additionalItems")
	}
}

func convertDependencies(s map[string]any) {
	deps, ok := s["dependencies"].(map[string]any)
	if !ok {
		return
	}
	delete(s, "dependencies")
	for prop, d := range deps {
		switch d := d.(type) {
		case string:
			setIn(s, "dependentRequired", prop, []any{d})
		case []any:
			setIn(s, "dependentRequired", prop, d)
		case map[string]any:
			setIn(s, "dependentSchemas", prop, d)
		}
	}
}

func setIn(s map[string]any, keyword, key string, v any) {
	m, ok := s[keyword].(map[string]any)
	if !ok {
		m = map[string]any{}
		s[keyword] = m
	}
	m[key] = v
}

// closeRoot applies the root defaults: "properties" without "type" means an
// object, and an object root rejects properties it does not declare unless
// it says otherwise.
func closeRoot(doc map[string]any) {
	t, hasType := doc["type"]
	if _, hasProps := doc["properties"]; !hasType && hasProps {
		doc["type"] = "object"
		t = "object"
	}
	if !allowsObject(t) {
		return
	}
	for _, k := range []string{"additionalProperties", "unevaluatedProperties"} {
		if _, ok := doc[k]; ok {
			return
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf", "$ref", "$dynamicRef", "$recursiveRef", "if", "dependentSchemas", "dependencies"} {
		if _, ok := doc[k]; ok {
			if s, _ := doc["$schema"].(string); strings.Contains(s, "2019-09") || strings.Contains(s, "2020-12") {
				doc["unevaluatedProperties"] = false
			}
			return
		}
	}
	doc["additionalProperties"] = false
}

func allowsObject(t any) bool {
	switch t := t.(type) {
	case string:
		return t == "object"
	case []any:
		return slices.Contains(t, any("object"))
	}
	return false
}
