package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// fastSchemas exercise every keyword the fast path implements, and some it
// does not (those must fall back to the library).
var fastSchemas = []struct {
	doc   string
	fast  bool     // whether a fast tree is expected
	valid []string // valid values, seeds for random mutation
}{
	{`{"properties": {"a": {"type": "integer"}, "n": {"type": "number"}, "s": {"type": ["string", "null"]}, "b": {"type": "boolean"}}, "required": ["a"]}`, true, []string{`{"a": 1, "n": 1.5, "s": null, "b": true}`}},
	{`{"type": "object", "properties": {"a": {"enum": [1, "1", null, true, 2.5]}, "n": {"const": 1}, "s": {"const": "abc"}, "x": {"enum": ["a", "b"]}}, "additionalProperties": true}`, true, []string{`{"a": "1", "n": 1.0, "s": "abc", "x": "b", "other": [1]}`}},
	{`{"type": "object", "properties": {"dt": {"type": "string", "format": "date-time"}, "u": {"format": "uri"}, "s": {"format": "email"}, "x": {"format": "ipv4"}, "a": {"format": "date"}}}`, true, []string{`{"dt": "2024-05-01T12:00:00Z", "u": "https://x.org/a", "s": "x@y.z", "x": "127.0.0.1", "a": "2024-05-01"}`}},
	{`{"type": "object", "properties": {"a": {"minimum": 0, "maximum": 10}, "n": {"exclusiveMinimum": -1, "exclusiveMaximum": 1.5}, "x": {"minimum": 0.1}, "b": {"maximum": 1e3}}, "additionalProperties": {"type": "number"}}`, true, []string{`{"a": 10, "n": 1, "x": 0.10, "b": 1000, "other": 3}`}},
	{`{"type": "object", "properties": {"s": {"minLength": 2, "maxLength": 3}, "x": {"pattern": "^[a-z]+$"}, "arr": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "integer"}}}, "minProperties": 1, "maxProperties": 3}`, true, []string{`{"s": "日本語", "x": "abc", "arr": [1, 2]}`}},
	{`{"type": "object", "properties": {"obj": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"], "additionalProperties": false}, "a": {"$ref": "#/$defs/small"}}, "$defs": {"small": {"type": "integer", "maximum": 2}}}`, true, []string{`{"obj": {"a": 1}, "a": 2}`}},
	{`{"allOf": [{"properties": {"a": {"type": "integer"}}}, {"properties": {"a": {"minimum": 1}}}], "anyOf": [{"required": ["a"]}, {"required": ["b"]}], "oneOf": [{"required": ["s"]}, {"required": ["n"]}, {"type": "array"}], "not": {"required": ["x"]}}`, true, []string{`{"a": 1, "s": "x"}`, `{"b": 1, "n": 2}`}},
	{`{"if": {"properties": {"a": {"const": 1}}, "required": ["a"]}, "then": {"required": ["b"]}, "else": {"properties": {"b": false}}}`, true, []string{`{"a": 1, "b": 1}`, `{"a": 2}`}},
	{`{"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"i": {"type": "integer"}}, "properties": {"a": {"$ref": "#/definitions/i", "type": "string"}, "arr": {"items": {"$ref": "#/definitions/i"}}}}`, true, []string{`{"a": 1, "arr": [1, 2]}`}},
	{`{"$schema": "http://json-schema.org/draft-04/schema#", "properties": {"a": {"type": "integer"}, "obj": {"$ref": "#"}}, "required": ["a"]}`, true, []string{`{"a": 1, "obj": {"a": 2, "obj": {"a": 3}}}`}},
	{`{"$defs": {"tree": {"type": "object", "properties": {"a": {"type": "integer"}, "obj": {"$ref": "#/$defs/tree"}}}}, "$ref": "#/$defs/tree"}`, true, []string{`{"a": 1, "obj": {"a": 2, "obj": {"x": 3}}}`}},
	{`{"type": ["array", "object", "string", "number", "boolean", "null"], "items": false, "properties": {"a": true, "b": false}}`, true, []string{`{"a": 1}`, `[]`, `"s"`}},
	// Not implemented by the fast path.
	{`{"properties": {"a": {"type": "integer"}}, "patternProperties": {"^x": {"type": "string"}}}`, false, nil},
	{`{"type": "object", "properties": {"arr": {"type": "array", "uniqueItems": true}}}`, false, nil},
	{`{"type": "object", "properties": {"n": {"multipleOf": 0.5}}}`, false, nil},
	{`{"allOf": [{"properties": {"a": {}}}], "unevaluatedProperties": false}`, false, nil},
	{`{"properties": {"obj": {"enum": [{"a": 1}]}}}`, false, nil},
	{`{"$defs": {"loop": {"$ref": "#/$defs/loop"}}, "properties": {"a": {"$ref": "#/$defs/loop"}}}`, false, nil},
}

func compileFast(t testing.TB, i int, doc string) *Schema {
	t.Helper()
	s, err := Compile(ID{Name: "Fast", Revision: int64(i + 1)}, mustJSON(t, doc))
	if err != nil {
		t.Fatalf("Compile(%s): %v", doc, err)
	}
	return s
}

// checkAgree fails when the fast path and the library disagree on v.
func checkAgree(t *testing.T, s *Schema, v any) {
	t.Helper()
	if s.fast == nil {
		return
	}
	fast := s.fast.valid(v)
	libErr := s.compiled.Validate(v)
	if libErr == nil && hasLongString(v) {
		libErr = errors.New("a string too long to store (Validate's check)")
	}
	if fast != (libErr == nil) {
		b, _ := json.Marshal(v)
		t.Fatalf("schema %s: fast path says valid=%v, library says %v, for %s (%#v)", s.ID(), fast, libErr, b, v)
	}
}

func TestFastPathCoverage(t *testing.T) {
	for i, tt := range fastSchemas {
		s := compileFast(t, i, tt.doc)
		if got := s.fast != nil; got != tt.fast {
			t.Errorf("schema %s: has fast tree = %v, want %v", tt.doc, got, tt.fast)
		}
	}
	for _, rel := range []string{"Edit/1.json", "ButtonClick/7.json", "PageView/3.json"} {
		if compileFile(t, rel).fast == nil {
			t.Errorf("%s has no fast tree", rel)
		}
	}
}

// TestFastPathAgrees checks the fast path against the library on the table
// events and on random values.
func TestFastPathAgrees(t *testing.T) {
	schemas := make([]*Schema, 0, len(fastSchemas)+4)
	for i, tt := range fastSchemas {
		schemas = append(schemas, compileFast(t, i, tt.doc))
	}
	for _, rel := range []string{"Edit/1.json", "ButtonClick/7.json", "PageView/3.json", "NavigationTiming/2.yaml"} {
		schemas = append(schemas, compileFile(t, rel))
	}
	seeds := make([][]string, 0, len(schemas))
	for _, tt := range fastSchemas {
		seeds = append(seeds, tt.valid)
	}
	seeds = append(seeds, []string{edit}, []string{buttonClick}, []string{pageView}, []string{navigationTiming})
	rng := rand.New(rand.NewPCG(1, 2))
	for i, s := range schemas {
		if len(seeds[i]) == 0 {
			continue
		}
		keys := propertyNames(s.Document(), []string{"x"})
		valid := 0
		const rounds = 3000
		for range rounds {
			v := decodeEvent(t, seeds[i][rng.IntN(len(seeds[i]))])
			for range rng.IntN(4) {
				v = mutate(rng, v, keys, 0)
			}
			checkAgree(t, s, v)
			if s.compiled.Validate(v) == nil {
				valid++
			}
		}
		// Both outcomes must be common, or the comparison proves little.
		if valid < rounds/20 || valid > rounds-rounds/20 {
			t.Errorf("schema %s: %d of %d random values valid; adjust the seeds", s.ID(), valid, rounds)
		}
	}
	// Go-typed numbers, as from a decoder without UseNumber.
	for _, v := range []any{
		map[string]any{"a": 1.0, "n": 0.1, "x": float32(0.5), "b": int64(1000), "s": 3},
		map[string]any{"a": 2, "n": 1.5, "x": 0.1, "b": uint8(7)},
		map[string]any{"a": 1.5, "arr": []any{1.0, 2}},
	} {
		for _, s := range schemas {
			checkAgree(t, s, v)
		}
	}
}

var (
	randomNumbers = []string{"0", "1", "-1", "1.0", "1e3", "1E3", "1.5", "2", "2.5", "3", "10", "11", "1000", "1e400", "-2", "-3", "0.1", "0.10", "1.5e0", "100", "101", "-0", "9223372036854775808"}
	randomStrings = []string{"", "a", "ab", "abc", "abcd", "Ab", "1", "12", "é日本", "日本語", "2024-05-01T12:00:00Z", "2024-05-01", "https://x.org/a", "/rel", "x@y.z", "127.0.0.1", "view", "init", "wikitext", "phone", "save-1"}
)

// propertyNames collects the property names a schema document mentions in
// "properties" and "required".
func propertyNames(doc any, names []string) []string {
	add := func(k string) {
		if !slices.Contains(names, k) {
			names = append(names, k)
		}
	}
	switch d := doc.(type) {
	case map[string]any:
		if props, ok := d["properties"].(map[string]any); ok {
			for k := range props {
				add(k)
			}
		}
		if req, ok := d["required"].([]any); ok {
			for _, k := range req {
				if k, ok := k.(string); ok {
					add(k)
				}
			}
		}
		for _, v := range d {
			names = propertyNames(v, names)
		}
	case []any:
		for _, v := range d {
			names = propertyNames(v, names)
		}
	}
	slices.Sort(names)
	return names
}

// mutate changes one random place of v: replaces a value, or adds or
// removes an object property or array item. It modifies v's containers.
func mutate(rng *rand.Rand, v any, keys []string, depth int) any {
	switch c := v.(type) {
	case map[string]any:
		if len(c) > 0 && rng.IntN(3) > 0 {
			names := make([]string, 0, len(c))
			for k := range c {
				names = append(names, k)
			}
			slices.Sort(names)
			k := names[rng.IntN(len(names))]
			switch rng.IntN(4) {
			case 0:
				delete(c, k)
			default:
				c[k] = mutate(rng, c[k], keys, depth+1)
			}
			return c
		}
		if rng.IntN(2) == 0 {
			c[keys[rng.IntN(len(keys))]] = randomValue(rng, keys, depth+1)
			return c
		}
	case []any:
		if len(c) > 0 && rng.IntN(3) > 0 {
			i := rng.IntN(len(c))
			if rng.IntN(4) == 0 {
				return slices.Delete(c, i, i+1)
			}
			c[i] = mutate(rng, c[i], keys, depth+1)
			return c
		}
		if rng.IntN(2) == 0 {
			return append(c, randomValue(rng, keys, depth+1))
		}
	}
	return randomValue(rng, keys, depth)
}

// randomValue returns a random JSON value whose objects use the given keys.
func randomValue(rng *rand.Rand, keys []string, depth int) any {
	k := rng.IntN(10)
	if depth >= 3 && k >= 8 {
		k = rng.IntN(8)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2, 3, 4:
		return json.Number(randomNumbers[rng.IntN(len(randomNumbers))])
	case 5, 6, 7:
		return randomStrings[rng.IntN(len(randomStrings))]
	case 8:
		arr := make([]any, rng.IntN(4))
		for i := range arr {
			arr[i] = randomValue(rng, keys, depth+1)
		}
		return arr
	default:
		obj := map[string]any{}
		for range rng.IntN(len(keys) + 1) {
			obj[keys[rng.IntN(len(keys))]] = randomValue(rng, keys, depth+1)
		}
		return obj
	}
}

// FuzzFastPathAgrees feeds decoded JSON to every fast schema and the
// library.
func FuzzFastPathAgrees(f *testing.F) {
	for _, seed := range []string{pageView, benchEvent, `{"a": 1.0, "n": 1e3}`, `{"a": "1", "s": "é日本", "arr": [1, 2.5]}`, `{"obj": {"a": 1, "obj": {"a": 1.5}}}`, `[1, "a", null]`, `"abc"`} {
		f.Add([]byte(seed))
	}
	schemas := make([]*Schema, 0, len(fastSchemas)+3)
	for i, tt := range fastSchemas {
		schemas = append(schemas, compileFast(f, i, tt.doc))
	}
	for _, rel := range []string{"Edit/1.json", "ButtonClick/7.json", "PageView/3.json"} {
		schemas = append(schemas, compileFile(f, rel))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := json.NewDecoder(strings.NewReader(string(data)))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			return
		}
		for _, s := range schemas {
			checkAgree(t, s, v)
		}
	})
}

// TestFastPathKnowsEveryKeyword fails when the library's Schema gains a
// field: decide whether the fast path implements it (fast.go) or must fall
// back (supported), then list it here.
func TestFastPathKnowsEveryKeyword(t *testing.T) {
	known := []string{
		// Implemented by the fast path.
		"Bool", "Ref", "Types", "Enum", "Const", "Not", "AllOf", "AnyOf", "OneOf", "If", "Then", "Else", "Format",
		"MaxProperties", "MinProperties", "Required", "Properties", "AdditionalProperties",
		"MinItems", "MaxItems", "Items", "Items2020", "MinLength", "MaxLength", "Pattern",
		"Maximum", "Minimum", "ExclusiveMaximum", "ExclusiveMinimum",
		// Make supported() refuse the schema.
		"RecursiveRef", "DynamicRef", "PropertyNames", "PatternProperties", "Dependencies",
		"DependentRequired", "DependentSchemas", "UnevaluatedProperties", "UniqueItems", "Contains",
		"MinContains", "MaxContains", "AdditionalItems", "PrefixItems", "UnevaluatedItems",
		"ContentEncoding", "ContentMediaType", "ContentSchema", "MultipleOf", "Extensions",
		// Identification and annotations: no effect on validity.
		"DraftVersion", "Location", "ID", "Anchor", "RecursiveAnchor", "DynamicAnchor",
		"Title", "Description", "Default", "Comment", "ReadOnly", "WriteOnly", "Examples", "Deprecated",
	}
	typ := reflect.TypeFor[jsonschema.Schema]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.IsExported() && !slices.Contains(known, f.Name) {
			t.Errorf("jsonschema.Schema has a new field %s: teach fast.go about it", f.Name)
		}
	}
}

func ExampleSchema_Validate() {
	doc, _ := ParseDocument([]byte(`{"properties": {"action": {"type": "string", "required": true, "enum": ["click"]}}}`))
	s, _ := Compile(ID{Name: "Click", Revision: 1}, doc)
	dec := json.NewDecoder(strings.NewReader(`{"action": "hover", "extra": 1}`))
	dec.UseNumber()
	var event any
	_ = dec.Decode(&event)
	fmt.Println(s.Validate(event))
	// Output: /action: value must be 'click'; /extra: additional property not allowed
}
