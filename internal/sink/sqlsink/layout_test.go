package sqlsink

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/schema"
)

// compile compiles a schema document written as JSON.
func compile(t *testing.T, name string, doc string) *schema.Schema {
	t.Helper()
	m, err := schema.ParseDocument([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.Compile(schema.ID{Name: name, Revision: 1}, m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// eventColumns lists a layout's event columns as "name type".
func eventColumns(l *layout) []string {
	var out []string
	for _, c := range l.columns[l.capsuleCols:] {
		out = append(out, fmt.Sprintf("%s %s", c.name, typeNames[c.typ]))
	}
	return out
}

var typeNames = map[colType]string{
	typeInt: "int", typeNumber: "number", typeBool: "bool", typeString: "string", typeJSON: "json",
}

func TestLayoutColumns(t *testing.T) {
	tests := []struct {
		name, doc string
		want      []string
	}{{
		name: "draft 3: required, any, nested open object",
		doc: `{"properties": {"n": {"type": "integer", "required": true}, "x": {"type": "any"},
			"o": {"type": "object", "properties": {"f": {"type": "number"}}}}}`,
		want: []string{"event_n int", "event_o json", "event_o_f number", "event_x json"},
	}, {
		name: "types, nullable unions, const and enum",
		doc: `{"type": "object", "additionalProperties": false, "properties": {
			"a": {"type": ["integer", "null"]}, "b": {"type": ["integer", "number"]}, "c": {"type": ["string", "integer"]},
			"d": {"const": 3}, "e": {"enum": ["x", "y", null]}, "f": {"enum": [1, 2.5]}, "g": {"type": "array"},
			"h": {"type": "object"}, "i": {"type": "null"}, "j": false, "k": true}}`,
		want: []string{"event_a int", "event_b number", "event_c json", "event_d int", "event_e string",
			"event_f number", "event_g json", "event_h json", "event_i json", "event_j json", "event_k json"},
	}, {
		name: "$ref, allOf, anyOf, oneOf, then, dependentSchemas",
		doc: `{"type": "object", "$defs": {"pos": {"type": "object", "additionalProperties": false,
				"properties": {"x": {"type": "integer"}}}},
			"properties": {"p": {"$ref": "#/$defs/pos"}, "q": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
				"r": {"oneOf": [{"type": "integer"}, {"type": "string"}]}, "s": {"allOf": [{"type": ["integer", "string"]}, {"type": "integer"}]}},
			"allOf": [{"properties": {"fromAllOf": {"type": "boolean"}}}],
			"if": {"required": ["q"]}, "then": {"properties": {"fromThen": {"type": "string"}}},
			"dependentSchemas": {"q": {"properties": {"fromDep": {"type": "number"}}}}}`,
		want: []string{"event_fromAllOf bool", "event_fromDep number", "event_fromThen string", "event_p_x int",
			"event_q int", "event_r json", "event_s int"},
	}, {
		name: "recursive $ref is JSON",
		doc: `{"type": "object", "additionalProperties": false, "$defs": {"node": {"type": "object", "additionalProperties": false,
				"properties": {"next": {"$ref": "#/$defs/node"}, "v": {"type": "integer"}}}},
			"properties": {"head": {"$ref": "#/$defs/node"}}}`,
		want: []string{"event_head_next json", "event_head_v int"},
	}, {
		name: "a_b against a.b: the shorter path keeps the name",
		doc: `{"type": "object", "additionalProperties": false, "properties": {
			"a": {"type": "object", "additionalProperties": false, "properties": {"b": {"type": "integer"}}},
			"a_b": {"type": "string"}}}`,
		want: []string{"event_a_b string", "event_a_b_4c235501 int"},
	}, {
		name: "overflow column against a property",
		doc: `{"type": "object", "additionalProperties": false, "properties": {
			"p": {"type": "object", "properties": {"q": {"type": "object", "properties": {"r": {"type": "integer"}}}}},
			"p_q": {"type": "string"}}}`,
		want: []string{"event_p json", "event_p_q string", "event_p_q_r int", "event_p_q_dc60e450 json"},
	}, {
		name: "ignoring case, and equal after sanitising",
		doc: `{"type": "object", "additionalProperties": false, "properties": {
			"Name": {"type": "string"}, "name": {"type": "string"}, "é": {"type": "string"}, "è": {"type": "string"},
			"tab\tname": {"type": "string"}, "": {"type": "string"}}}`,
		want: []string{"event_ string", "event_Name string", "event___6133f2d2 string", "event___b466f343 string",
			"event_name_39d41fa7 string", "event_tab_name_2b2d5592 string"},
	}, {
		name: "open root: everything undeclared in the event column",
		doc:  `{"type": "object", "additionalProperties": true, "properties": {"n": {"type": "integer"}}}`,
		want: []string{"event json", "event_n int"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := compile(t, "T", tt.doc)
			got := eventColumns(buildLayout(s, false))
			slices.Sort(got)
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("columns\n got %q\nwant %q", got, want)
			}
			// Deterministic whatever the map order.
			for range 20 {
				if again := eventColumns(buildLayout(s, false)); !slices.Equal(again, eventColumns(buildLayout(s, false))) {
					t.Fatalf("layout differs between builds: %q", again)
				}
			}
		})
	}
}

func TestLayoutDeepNesting(t *testing.T) {
	doc := `{"type": "integer"}`
	for range maxDepth + 2 {
		doc = `{"type": "object", "additionalProperties": false, "properties": {"d": ` + doc + `}}`
	}
	cols := eventColumns(buildLayout(compile(t, "Deep", doc), false))
	want := "event" + strings.Repeat("_d", maxDepth) + " json"
	if len(cols) != 1 || cols[0] != want {
		t.Errorf("columns %q, want [%q]", cols, want)
	}
}

func TestIdentifierLimits(t *testing.T) {
	long := strings.Repeat("x", 100)
	s := compile(t, "T", `{"type": "object", "additionalProperties": false, "properties": {
		"`+long+`": {"type": "integer"}, "`+long+`y": {"type": "integer"}, "`+strings.Repeat("☆", 40)+`": {"type": "integer"}}}`)
	l := buildLayout(s, false)
	seen := map[string]bool{}
	for _, c := range l.columns {
		if len(c.name) > maxIdent || c.name == "" || strings.HasSuffix(c.name, " ") {
			t.Errorf("column %q breaks the identifier rules", c.name)
		}
		if seen[strings.ToLower(c.name)] {
			t.Errorf("column %q twice", c.name)
		}
		seen[strings.ToLower(c.name)] = true
	}
	for _, id := range []schema.ID{{Name: strings.Repeat("S", 63), Revision: 1 << 62}, {Name: "Edit", Revision: 1}} {
		for _, per := range []bool{false, true} {
			name := tableName(id, per)
			if len(name) > maxIdent {
				t.Errorf("table %q longer than %d", name, maxIdent)
			}
			d, _ := newDialect(Postgres)
			for _, idx := range []string{indexName(name, "timestamp"), shorten(name + "_uuid_key")} {
				if len(idx) > maxIdent {
					t.Errorf("index %q longer than %d (%s)", idx, maxIdent, d.quote(idx))
				}
			}
		}
	}
	if got := tableName(schema.ID{Name: "Edit", Revision: 7}, false); got != "Edit_7" {
		t.Errorf("table %q", got)
	}
}

func TestQuote(t *testing.T) {
	for d, want := range map[Dialect]string{
		SQLite: `"a""b` + "`" + `c"`, Postgres: `"a""b` + "`" + `c"`, MySQL: "`a\"b``c`",
	} {
		dl, _ := newDialect(d)
		if got := dl.quote("a\"b`c"); got != want {
			t.Errorf("%s: quote = %s, want %s", d, got, want)
		}
	}
}

// TestReferenceFlatten checks the column names against the original's
// utils.flatten of a capsule (testdata/reference/eventlogging/misc.json): the
// event's nested fields and the capsule fields get the same names.
func TestReferenceFlatten(t *testing.T) {
	raw, err := os.ReadFile("../../../testdata/reference/eventlogging/misc.json")
	if err != nil {
		t.Fatalf("reference vectors missing: %v (expected testdata/reference/eventlogging/misc.json at the repository root)", err)
	}
	var ref struct {
		Flatten []struct {
			In  any            `json:"in"`
			Out map[string]any `json:"out"`
		} `json:"flatten"`
		TopicFormat struct {
			Event map[string]any `json:"event"`
		} `json:"topic_format"`
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&ref); err != nil {
		t.Fatal(err)
	}
	want := ref.Flatten[1].Out
	s := compile(t, "TestSchema", `{"type": "object", "additionalProperties": false, "properties": {
		"value": {"type": "string"},
		"nested": {"type": "object", "additionalProperties": false, "properties": {
			"deeplyNested": {"type": "object", "additionalProperties": false, "properties": {"pi": {"type": "number"}}}}}}}`)
	l := buildLayout(s, false)
	d, _ := newDialect(SQLite)
	c := ref.TopicFormat.Event
	c["timestamp"] = json.Number("1358791834") // the vector's is in milliseconds
	vals, err := l.row(c, d)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for i, col := range l.columns {
		if vals[i] != nil {
			got[col.name] = vals[i]
		}
	}
	for k, v := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("no column %s (have %v)", k, got)
			continue
		}
		switch k {
		case "timestamp":
			if g != "20130121181034" {
				t.Errorf("timestamp = %v", g)
			}
		default:
			if fmt.Sprint(g) != fmt.Sprint(v) {
				t.Errorf("%s = %#v, want %v", k, g, v)
			}
		}
	}
	// capsule.Flatten, the original's helper, agrees on the event columns.
	for k := range capsule.Flatten(map[string]any{"event": c["event"]}) {
		if _, ok := got[k]; !ok {
			t.Errorf("capsule.Flatten gives %s, the layout has no such column", k)
		}
	}
}
