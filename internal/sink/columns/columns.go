// Package columns classifies the nodes of a registry's JSON Schema into
// the column shapes the sinks that write typed columns share — the file
// sink's Parquet files (filesink) and the Iceberg tables (icebergsink) —
// so one schema gives the same columns in both:
//
//   - "string" (or an all-string enum, or a string const) → String;
//   - "integer" → Integer (a 64-bit integer);
//   - "number", or the union integer|number → Number (a double);
//   - "boolean" → Boolean;
//   - an object with properties → Object, its members by name;
//   - anything else — arrays, objects without properties, other type
//     unions, nodes without a type — → JSON (its JSON text in a string
//     column).
//
// "null" in a type list is ignored (every column is optional). Local
// $refs ("#/$defs/x") are followed; a $ref elsewhere, or one that does not
// resolve, is JSON. Objects nested deeper than MaxDepth are JSON.
package columns

import (
	"slices"
	"strings"
)

// Kind is the column shape of a JSON Schema node.
type Kind uint8

// The kinds, in this order (the sinks index tables by them).
const (
	Object  Kind = iota // an object with properties: a group or struct of its members
	String              // a string
	Integer             // a 64-bit integer
	Number              // a double
	Boolean             // a boolean
	JSON                // anything else: its JSON text in a string column
)

// KindNames are the names of the kinds, indexed by Kind.
var KindNames = [...]string{"object", "string", "integer", "number", "boolean", "JSON"}

func (k Kind) String() string {
	if int(k) < len(KindNames) {
		return KindNames[k]
	}
	return "unknown"
}

// MaxDepth bounds nesting: an object at this depth or deeper is JSON.
const MaxDepth = 32

// maxRefHops bounds the chain of local $refs followed for one node.
const maxRefHops = 16

// Field is a classified JSON Schema node: its name (the property name; ""
// for a document's root), its kind, and for an Object its members, sorted
// by name (at least one: an object whose members are all unnamed is JSON).
type Field struct {
	Name   string
	Kind   Kind
	Fields []*Field
}

// CapsuleFields are the columns of the EventLogging capsule's own fields
// (besides "event"), in the order of the capsule, as the sinks store them
// next to the event's columns. A sink may give dt (the receive time) a
// type of its own.
var CapsuleFields = []*Field{
	{Name: "schema", Kind: String}, {Name: "revision", Kind: Integer}, {Name: "wiki", Kind: String},
	{Name: "webHost", Kind: String}, {Name: "recvFrom", Kind: String}, {Name: "seqId", Kind: Integer},
	{Name: "timestamp", Kind: Integer}, {Name: "dt", Kind: String}, {Name: "uuid", Kind: String},
	{Name: "userAgent", Kind: String}, {Name: "clientIp", Kind: String}, {Name: "topic", Kind: String},
}

// Build classifies node, a node of the JSON Schema document doc (for
// local $refs) at nesting depth depth (0 for the document itself), and
// its members recursively.
func Build(doc map[string]any, name string, node any, depth int) *Field {
	js := deref(doc, node)
	f := &Field{Name: name, Kind: KindOf(js)}
	if f.Kind != Object {
		return f
	}
	if depth >= MaxDepth {
		f.Kind = JSON
		return f
	}
	props, _ := js["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for n := range props {
		if n != "" {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		f.Fields = append(f.Fields, Build(doc, n, props[n], depth+1))
	}
	if len(f.Fields) == 0 {
		f.Kind = JSON
	}
	return f
}

// deref follows local $refs ("#/$defs/x"); anything else is returned as
// is. A $ref it cannot follow gives nil (JSON).
func deref(doc map[string]any, node any) map[string]any {
	js, _ := node.(map[string]any)
	for range maxRefHops {
		ref, ok := js["$ref"].(string)
		if !ok || !strings.HasPrefix(ref, "#") {
			return js
		}
		target, ok := pointer(doc, ref[1:])
		if !ok {
			return nil
		}
		js = target
	}
	return nil
}

// pointer resolves a JSON pointer ("/a/b") in doc to an object.
func pointer(doc map[string]any, ptr string) (map[string]any, bool) {
	if ptr == "" {
		return doc, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	var cur any = doc
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur = m[tok]
	}
	m, ok := cur.(map[string]any)
	return m, ok
}

// KindOf classifies one JSON Schema node (its $ref, if any, already
// followed): the node's single type ("null" aside), an object with
// properties as Object, and for a node without a type, properties or an
// all-string enum or a string const.
func KindOf(js map[string]any) Kind {
	switch t := js["type"].(type) {
	case string:
		return kindOfType(t, js)
	case []any:
		var types []string
		for _, e := range t {
			if s, ok := e.(string); ok && s != "null" {
				types = append(types, s)
			}
		}
		slices.Sort(types)
		switch {
		case len(types) == 1:
			return kindOfType(types[0], js)
		case slices.Equal(types, []string{"integer", "number"}):
			return Number
		}
		return JSON
	case nil:
		if props, ok := js["properties"].(map[string]any); ok && len(props) > 0 {
			return Object
		}
		if enum, ok := js["enum"].([]any); ok && len(enum) > 0 {
			for _, e := range enum {
				if _, ok := e.(string); !ok {
					return JSON
				}
			}
			return String
		}
		if _, ok := js["const"].(string); ok {
			return String
		}
	}
	return JSON
}

func kindOfType(t string, js map[string]any) Kind {
	switch t {
	case "string":
		return String
	case "integer":
		return Integer
	case "number":
		return Number
	case "boolean":
		return Boolean
	case "object":
		if props, ok := js["properties"].(map[string]any); ok && len(props) > 0 {
			return Object
		}
	}
	return JSON
}
