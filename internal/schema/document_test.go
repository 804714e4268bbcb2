package schema

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseDocument(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]any // nil: error
	}{
		{"json keeps numbers exact", `{"a": 1.50, "b": 12345678901234567890, "c": [true, null, "s"]}`,
			map[string]any{"a": json.Number("1.50"), "b": json.Number("12345678901234567890"), "c": []any{true, nil, "s"}}},
		{"json with BOM and space", "\ufeff  {\"a\": 1}\n", map[string]any{"a": json.Number("1")}},
		{"yaml scalars", "a: 1\nb: 1.5\nc: 0x10\nd: yes\ne: true\nf: ~\ng: 2024-05-01\nh: '12'\ni: 1e3\n",
			map[string]any{"a": json.Number("1"), "b": json.Number("1.5"), "c": json.Number("16"), "d": "yes", "e": true, "f": nil, "g": "2024-05-01", "h": "12", "i": json.Number("1000")}},
		{"yaml flow mapping", `{a: 1, b: [x, y]}`, map[string]any{"a": json.Number("1"), "b": []any{"x", "y"}}},
		{"yaml anchors", "d: &x {type: string}\np: {a: *x}\n",
			map[string]any{"d": map[string]any{"type": "string"}, "p": map[string]any{"a": map[string]any{"type": "string"}}}},
		{"yaml large unsigned", "a: 18446744073709551615\n", map[string]any{"a": json.Number("18446744073709551615")}},
		{"json trailing data", `{"a": 1} {"b": 2}`, nil},
		{"json not an object", `[1]`, nil},
		{"yaml not an object", "- 1\n", nil},
		{"yaml not a number", "a: .nan\n", nil},
		{"yaml merge key", "b: &b {x: 1}\nc:\n  <<: *b\n", nil},
		{"yaml non-scalar key", "? [1]\n: x\n", nil},
		{"empty", "  \n", nil},
		{"yaml syntax", "a: [\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseDocument([]byte(tt.in))
			if tt.want == nil {
				if !errors.Is(err, ErrInvalidSchema) {
					t.Errorf("ParseDocument = %v, %v; want ErrInvalidSchema", got, err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseDocument = %#v, %v; want %#v", got, err, tt.want)
			}
		})
	}
}

// FuzzCompile runs documents through decoding, normalisation and
// compilation: none may panic, every error must be ErrInvalidSchema, and
// the normalised form must be stable.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		`{"properties": {"a": {"type": "string", "required": true}}}`,
		`{"$schema": "http://json-schema.org/draft-03/schema#", "type": ["string", {"type": "integer"}], "disallow": "any", "extends": {"items": [{}]}}`,
		"properties:\n  a: {type: any, divisibleBy: 2}\n",
		`{"$schema": "http://json-schema.org/draft-04/schema#", "properties": {"a": {"$ref": "#"}}}`,
		`{"$ref": "https://example.org/x.json"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		doc, err := ParseDocument(raw)
		if err != nil {
			if !errors.Is(err, ErrInvalidSchema) {
				t.Fatalf("ParseDocument error %v is not ErrInvalidSchema", err)
			}
			return
		}
		norm := Normalize(doc)
		if again := Normalize(norm); !reflect.DeepEqual(again, norm) {
			t.Fatalf("Normalize is not idempotent on %s", raw)
		}
		if _, err := Compile(ID{Name: "Fuzz", Revision: 1}, doc); err != nil && !errors.Is(err, ErrInvalidSchema) {
			t.Fatalf("Compile error %v is not ErrInvalidSchema", err)
		}
	})
}

func TestParseDocumentYAMLAliasBomb(t *testing.T) {
	bomb := "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
	if _, err := ParseDocument([]byte(bomb)); err == nil || !strings.Contains(err.Error(), "expands to more than") {
		t.Fatalf("alias bomb: %v", err)
	}
}
