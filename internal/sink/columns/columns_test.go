package columns

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestKindOf(t *testing.T) {
	for _, tc := range []struct {
		js   string
		want Kind
	}{
		{`{"type":"string","format":"date-time"}`, String},
		{`{"type":["integer","null"]}`, Integer},
		{`{"type":"number"}`, Number},
		{`{"type":["integer","number"]}`, Number},
		{`{"type":["number","integer","null"]}`, Number},
		{`{"type":"boolean"}`, Boolean},
		{`{"type":["string","integer"]}`, JSON},
		{`{"type":"object"}`, JSON},
		{`{"type":"object","properties":{}}`, JSON},
		{`{"type":"object","properties":{"a":{"type":"string"}}}`, Object},
		{`{"properties":{"a":{"type":"string"}}}`, Object},
		{`{"enum":["a","b"]}`, String},
		{`{"enum":["a",1]}`, JSON},
		{`{"const":"x"}`, String},
		{`{"type":"array","items":{"type":"string"}}`, JSON},
		{`{"type":"null"}`, JSON},
		{`{}`, JSON},
		{`{"type":"array"}`, JSON},
	} {
		var js map[string]any
		if err := json.Unmarshal([]byte(tc.js), &js); err != nil {
			t.Fatal(err)
		}
		if got := KindOf(js); got != tc.want {
			t.Errorf("KindOf(%s) = %s, want %s", tc.js, got, tc.want)
		}
	}
}

// describe renders a field tree as "name:kind{members}".
func describe(f *Field) string {
	s := f.Name + ":" + f.Kind.String()
	if len(f.Fields) > 0 {
		var parts []string
		for _, c := range f.Fields {
			parts = append(parts, describe(c))
		}
		s += "{" + strings.Join(parts, ",") + "}"
	}
	return s
}

func TestBuild(t *testing.T) {
	const doc = `{
	  "type": "object",
	  "$defs": {
	    "point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"$ref": "#/$defs/coord"}}},
	    "coord": {"type": "integer"},
	    "loop": {"$ref": "#/$defs/loop"}
	  },
	  "properties": {
	    "p": {"$ref": "#/$defs/point"},
	    "q": {"$ref": "#/$defs/missing"},
	    "r": {"$ref": "https://example.org/other.json"},
	    "s": {"$ref": "#/$defs/loop"},
	    "tags": {"type": "array"},
	    "b": {"type": "boolean"},
	    "": {"type": "string"},
	    "a~b": {"$ref": "#/$defs/a~1b"},
	    "free": {"type": "object", "additionalProperties": true}
	  }
	}`
	var m map[string]any
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	got := describe(Build(m, "", m, 0))
	want := ":object{a~b:JSON,b:boolean,free:JSON,p:object{x:number,y:integer},q:JSON,r:JSON,s:JSON,tags:JSON}"
	if got != want {
		t.Errorf("Build:\n got %s\nwant %s", got, want)
	}
}

// Objects nested MaxDepth deep become JSON text.
func TestBuildDepth(t *testing.T) {
	var node any = map[string]any{"type": "string"}
	for range MaxDepth + 5 {
		node = map[string]any{"type": "object", "properties": map[string]any{"n": node}}
	}
	f := Build(nil, "", node, 0)
	depth := 0
	for f.Kind == Object {
		f = f.Fields[0]
		depth++
	}
	if depth != MaxDepth || f.Kind != JSON {
		t.Errorf("objects down to depth %d, then %s; want %d, then JSON", depth, f.Kind, MaxDepth)
	}
}
