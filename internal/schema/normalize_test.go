package schema

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

const schemaDir = "testdata/schemas"

// readDoc parses one schema file of testdata/schemas.
func readDoc(t *testing.T, rel string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(schemaDir, rel))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := ParseDocument(raw)
	if err != nil {
		t.Fatalf("ParseDocument(%s): %v", rel, err)
	}
	return doc
}

func marshalDoc(t *testing.T, doc map[string]any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestNormalizeGolden compares the normalised form of every valid testdata
// schema with testdata/golden/<Name>-<revision>.json (go test -update
// rewrites them).
func TestNormalizeGolden(t *testing.T) {
	files := []string{"Edit/1.json", "NavigationTiming/2.yaml", "ButtonClick/7.json", "PageView/3.json"}
	for _, rel := range files {
		t.Run(rel, func(t *testing.T) {
			id, ok := ParseIDFromPath(rel)
			if !ok {
				t.Fatalf("ParseIDFromPath(%q) failed", rel)
			}
			doc := readDoc(t, rel)
			before := marshalDoc(t, doc)
			got := marshalDoc(t, Normalize(doc))
			if !bytes.Equal(before, marshalDoc(t, doc)) {
				t.Error("Normalize modified its argument")
			}
			golden := filepath.Join("testdata", "golden", fmt.Sprintf("%s-%d.json", id.Name, id.Revision))
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Normalize(%s) differs from %s (go test -update rewrites it):\n%s", rel, golden, got)
			}
			// Normalising twice changes nothing.
			if again := marshalDoc(t, Normalize(Normalize(doc))); !bytes.Equal(again, got) {
				t.Errorf("Normalize is not idempotent:\n%s", again)
			}
		})
	}
}

func TestNormalizeRules(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{
			name: "draft3 required collected and sorted, false dropped",
			in:   `{"properties": {"b": {"type": "string", "required": true}, "a": {"type": "integer", "required": true}, "c": {"required": false}}}`,
			want: `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "additionalProperties": false, "required": ["a", "b"], "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {}}}`,
		},
		{
			name: "draft3 detected by $schema alone",
			in:   `{"$schema": "http://json-schema.org/draft-03/schema#", "type": "object", "properties": {"n": {"type": "number", "divisibleBy": 2}}}`,
			want: `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "additionalProperties": false, "properties": {"n": {"type": "number", "multipleOf": 2}}}`,
		},
		{
			name: "draft3 detected by type any without $schema; nested required, nested left open",
			in:   `{"properties": {"o": {"type": "object", "properties": {"x": {"type": "any", "required": true}}}}}`,
			want: `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "additionalProperties": false, "properties": {"o": {"type": "object", "required": ["x"], "properties": {"x": {}}}}}`,
		},
		{
			name: "draft3 disallow single type",
			in:   `{"$schema": "http://json-schema.org/draft-03/schema#", "properties": {"x": {"disallow": "string"}}}`,
			want: `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "additionalProperties": false, "properties": {"x": {"not": {"type": "string"}}}}`,
		},
		{
			name: "draft3 extends array and items schema",
			in:   `{"$schema": "http://json-schema.org/draft-03/schema#", "type": "array", "extends": [{"minItems": 1}], "items": {"type": "string", "required": true}, "additionalItems": false}`,
			want: `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "array", "allOf": [{"minItems": 1}], "items": {"type": "string"}}`,
		},
		{
			name: "draft 7 kept, root closed",
			in:   `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}`,
			want: `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "additionalProperties": false, "properties": {"a": {"type": "integer"}}, "required": ["a"]}`,
		},
		{
			name: "modern without $schema gets 2020-12 and type object",
			in:   `{"properties": {"a": {"type": "integer"}}, "required": ["a"]}`,
			want: `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "additionalProperties": false, "properties": {"a": {"type": "integer"}}, "required": ["a"]}`,
		},
		{
			name: "root that says otherwise is kept open",
			in:   `{"type": "object", "properties": {"a": {}}, "additionalProperties": {"type": "string"}}`,
			want: `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {"a": {}}, "additionalProperties": {"type": "string"}}`,
		},
		{
			name: "2020-12 root combining subschemas is closed with unevaluatedProperties",
			in:   `{"type": "object", "allOf": [{"properties": {"a": {}}}], "properties": {"b": {}}}`,
			want: `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "allOf": [{"properties": {"a": {}}}], "properties": {"b": {}}, "unevaluatedProperties": false}`,
		},
		{
			name: "draft 7 root combining subschemas is left open",
			in:   `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "allOf": [{"properties": {"a": {}}}]}`,
			want: `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "allOf": [{"properties": {"a": {}}}]}`,
		},
		{
			name: "non-object root untouched",
			in:   `{"type": "string"}`,
			want: `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "string"}`,
		},
		{
			name: "property named like a keyword is not a keyword",
			in:   `{"properties": {"required": {"type": "boolean", "required": true}, "extends": {"type": "string"}}}`,
			want: `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "additionalProperties": false, "required": ["required"], "properties": {"required": {"type": "boolean"}, "extends": {"type": "string"}}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Normalize(mustJSON(t, tt.in))
			if want := mustJSON(t, tt.want); !reflect.DeepEqual(got, want) {
				t.Errorf("Normalize(%s)\n got %s\nwant %s", tt.in, marshalDoc(t, got), marshalDoc(t, want))
			}
		})
	}
}

func mustJSON(t testing.TB, s string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return m
}
