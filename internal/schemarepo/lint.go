package schemarepo

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/eventlogging/eventlogging/internal/schema"
)

// Problem is one lint finding.
type Problem struct {
	Path    string // file
	Pointer string // JSON pointer into the schema ("" for the whole file)
	Message string
}

func (p Problem) String() string {
	if p.Pointer == "" {
		return p.Path + ": " + p.Message
	}
	return p.Path + ": " + p.Pointer + ": " + p.Message
}

var (
	snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	camelCase = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)
)

// Lint checks one schema version: it must parse and compile; property
// names use snake_case or camelCase consistently within the schema; no
// union types (a "type" list, except a single type with "null"); arrays say
// what their items are; every "examples" value validates against the schema.
func Lint(v Version) []Problem {
	var probs []Problem
	add := func(ptr, format string, args ...any) {
		probs = append(probs, Problem{Path: v.Path, Pointer: ptr, Message: fmt.Sprintf(format, args...)})
	}
	doc, err := schema.ParseDocument(v.Raw)
	if err != nil {
		add("", "does not parse: %v", err)
		return probs
	}
	compiled, err := schema.Compile(schema.ID{Name: v.Subject, Revision: max(v.Revision, 1)}, doc)
	if err != nil {
		add("", "not a valid schema: %v", err)
		return probs
	}
	walk(doc, "", func(node map[string]any, ptr string) {
		for _, k := range slices.Sorted(maps.Keys(node)) {
			switch {
			case node[k] != nil || k == "default" || k == "const":
			case k == "properties" || k == "items" || k == "additionalProperties":
				add(ptr+"/"+k, "%q has no value", k)
			default:
				add(ptr+"/"+k, "key %q has no value: in a YAML flow mapping ({a: b, c: d}) a comma ends a value, so text with a comma must be quoted", k)
			}
		}
	})
	norm := schema.Normalize(doc)
	var names []string
	var namePtrs []string
	walk(norm, "", func(node map[string]any, ptr string) {
		if t, ok := node["type"].([]any); ok {
			nonNull := 0
			for _, x := range t {
				if x != "null" {
					nonNull++
				}
			}
			if nonNull > 1 {
				add(ptr+"/type", "union type %v: give the property one type", t)
			}
		}
		if node["type"] == "array" {
			if _, ok := node["items"]; !ok {
				add(ptr, "array without \"items\": say what the array holds")
			}
		}
		if props, ok := node["properties"].(map[string]any); ok {
			for name := range props {
				if strings.HasPrefix(name, "$") {
					continue // $schema
				}
				names = append(names, name)
				namePtrs = append(namePtrs, ptr+"/properties/"+name)
			}
		}
	})
	snake, camel := 0, 0
	for _, n := range names {
		isSnake, isCamel := snakeCase.MatchString(n), camelCase.MatchString(n)
		switch {
		case isSnake && isCamel: // one lowercase word: both
		case isSnake:
			snake++
		case isCamel:
			camel++
		}
	}
	style := "snake_case"
	if camel > snake {
		style = "camelCase"
	}
	for i, n := range names {
		ok := snakeCase.MatchString(n)
		if style == "camelCase" {
			ok = camelCase.MatchString(n)
		}
		if !ok {
			add(namePtrs[i], "property name %q is not %s like the rest of the schema", n, style)
		}
	}
	if ex, ok := norm["examples"].([]any); ok {
		for i, e := range ex {
			if err := compiled.Validate(e); err != nil {
				var ve *schema.ValidationError
				msg := err.Error()
				if errors.As(err, &ve) {
					msg = ve.Error()
				}
				add(fmt.Sprintf("/examples/%d", i), "example does not validate: %s", msg)
			}
		}
	}
	slices.SortFunc(probs, func(a, b Problem) int { return strings.Compare(a.Pointer, b.Pointer) })
	return probs
}

// walk calls fn for every schema object in doc (properties, items,
// additionalProperties and combinators), with its JSON pointer.
func walk(node map[string]any, ptr string, fn func(map[string]any, string)) {
	fn(node, ptr)
	if props, ok := node["properties"].(map[string]any); ok {
		for k, v := range props {
			if m, ok := v.(map[string]any); ok {
				walk(m, ptr+"/properties/"+k, fn)
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties", "not"} {
		if m, ok := node[k].(map[string]any); ok {
			walk(m, ptr+"/"+k, fn)
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if list, ok := node[k].([]any); ok {
			for i, v := range list {
				if m, ok := v.(map[string]any); ok {
					walk(m, fmt.Sprintf("%s/%s/%d", ptr, k, i), fn)
				}
			}
		}
	}
}
