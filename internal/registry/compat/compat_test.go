package compat

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/avro"
	"go.yaml.in/yaml/v3"

	"github.com/eventlogging/eventlogging/internal/schema"
)

// testCase is one entry of testdata/cases.yaml; the file's header
// describes the fields.
type testCase struct {
	Name     string             `yaml:"name"`
	Type     string             `yaml:"type"`
	Old      string             `yaml:"old"`
	New      string             `yaml:"new"`
	Backward bool               `yaml:"backward"`
	Forward  bool               `yaml:"forward"`
	Full     bool               `yaml:"full"`
	Paths    map[Level][]string `yaml:"paths"`
	Messages map[Level][]string `yaml:"messages"`
	Data     []any              `yaml:"data"`
	Unproven []Level            `yaml:"unproven"`
	Extra    map[string]any     `yaml:",inline"`
}

func loadCases(t testing.TB) []testCase {
	t.Helper()
	raw, err := os.ReadFile("testdata/cases.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cases []testCase
	if err := yaml.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range cases {
		if len(c.Extra) > 0 {
			t.Fatalf("case %q: unknown keys %v", c.Name, c.Extra)
		}
		if seen[c.Name] {
			t.Fatalf("duplicate case %q", c.Name)
		}
		seen[c.Name] = true
	}
	return cases
}

func paths(vs []Violation) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Path
	}
	return out
}

func TestCases(t *testing.T) {
	cases := loadCases(t)
	var nJSON, nAvro int
	for _, c := range cases {
		if c.Type == TypeJSON {
			nJSON++
		} else {
			nAvro++
		}
		t.Run(c.Name, func(t *testing.T) {
			if c.Full != (c.Backward && c.Forward) {
				t.Fatalf("bad case: full=%v, backward=%v, forward=%v", c.Full, c.Backward, c.Forward)
			}
			for _, lv := range []struct {
				level, transitive Level
				want              bool
			}{
				{Backward, BackwardTransitive, c.Backward},
				{Forward, ForwardTransitive, c.Forward},
				{Full, FullTransitive, c.Full},
			} {
				vs, err := Check(c.Type, lv.level, c.New, []string{c.Old})
				if err != nil {
					t.Fatalf("%s: %v", lv.level, err)
				}
				if got := len(vs) == 0; got != lv.want {
					t.Errorf("%s: compatible = %v, want %v; violations: %v", lv.level, got, lv.want, vs)
				}
				for _, v := range vs {
					if v.Message == "" {
						t.Errorf("%s: violation at %q without a message", lv.level, v.Path)
					}
				}
				// With one existing version, transitive is the same check.
				tvs, err := Check(c.Type, lv.transitive, c.New, []string{c.Old})
				if err != nil || !slices.Equal(tvs, vs) {
					t.Errorf("%s = %v, %v; want %v as for %s", lv.transitive, tvs, err, vs, lv.level)
				}
				if want, ok := c.Paths[lv.level]; ok && !slices.Equal(paths(vs), want) {
					t.Errorf("%s: paths %q, want %q; violations: %v", lv.level, paths(vs), want, vs)
				}
				for _, sub := range c.Messages[lv.level] {
					if !slices.ContainsFunc(vs, func(v Violation) bool { return strings.Contains(v.Message, sub) }) {
						t.Errorf("%s: no message contains %q; violations: %v", lv.level, sub, vs)
					}
				}
			}
			if vs, err := Check(c.Type, None, c.New, []string{c.Old}); err != nil || len(vs) > 0 {
				t.Errorf("NONE = %v, %v; want nothing", vs, err)
			}
			// CanRead(new, old) is the backward check, and CanRead(old,
			// new) the forward check, with paths into the reader.
			back, err := CanRead(c.Type, c.New, c.Old)
			if err != nil || (len(back) == 0) != c.Backward {
				t.Errorf("CanRead(new, old) = %v, %v; want compatible %v", back, err, c.Backward)
			}
			fwd, err := CanRead(c.Type, c.Old, c.New)
			if err != nil || (len(fwd) == 0) != c.Forward {
				t.Errorf("CanRead(old, new) = %v, %v; want compatible %v", fwd, err, c.Forward)
			}
			if c.Type == TypeJSON {
				checkData(t, c)
			}
		})
	}
	if nJSON < 15 || nAvro < 15 {
		t.Errorf("%d JSON and %d Avro cases; want at least 15 of each", nJSON, nAvro)
	}
}

// checkData validates the case's data against both schemas with the
// schema package's validator: a compatible direction must accept
// everything its writer accepts, and an incompatible one needs an instance
// that shows the break, unless the case lists the level as unproven.
func checkData(t *testing.T, c testCase) {
	t.Helper()
	if len(c.Data) == 0 {
		t.Fatal("JSON case without data")
	}
	compile := func(doc string) *schema.Schema {
		m, err := schema.ParseDocument([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		s, err := schema.Compile(schema.ID{Name: "Case", Revision: 1}, m)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	oldS, newS := compile(c.Old), compile(c.New)
	var backWitness, fwdWitness bool
	for _, d := range c.Data {
		okOld, okNew := oldS.Validate(d) == nil, newS.Validate(d) == nil
		if okOld && !okNew {
			backWitness = true
			if c.Backward {
				t.Errorf("unsound: BACKWARD compatible, but %v is valid under the old schema only", d)
			}
		}
		if okNew && !okOld {
			fwdWitness = true
			if c.Forward {
				t.Errorf("unsound: FORWARD compatible, but %v is valid under the new schema only", d)
			}
		}
	}
	if !c.Backward && !backWitness && !slices.Contains(c.Unproven, Backward) {
		t.Errorf("BACKWARD incompatible, but no data is valid under the old schema only")
	}
	if !c.Forward && !fwdWitness && !slices.Contains(c.Unproven, Forward) {
		t.Errorf("FORWARD incompatible, but no data is valid under the new schema only")
	}
}

// TestAvroWalkAgreesWithLibrary: the walk that lists Avro violations finds
// some exactly when twmb/avro's CheckCompatibility fails.
func TestAvroWalkAgreesWithLibrary(t *testing.T) {
	for _, c := range loadCases(t) {
		if c.Type != TypeAvro {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			oldS, err := avroFormat{}.parse(c.Old)
			if err != nil {
				t.Fatal(err)
			}
			newS, err := avroFormat{}.parse(c.New)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range [][2]*avroSchema{{newS.(*avroSchema), oldS.(*avroSchema)}, {oldS.(*avroSchema), newS.(*avroSchema)}} {
				lib := avro.CheckCompatibility(p[1].s, p[0].s)
				walk := walkAvro(p[0], p[1], dirCanRead, true)
				if (lib == nil) != (len(walk) == 0) {
					t.Errorf("library says %v, walk says %v", lib, walk)
				}
			}
		})
	}
}

// TestTransitive: v3 can read v2's data but not v1's.
func TestTransitive(t *testing.T) {
	v1 := `{"type": "record", "name": "Event", "fields": [{"name": "id", "type": "string"}, {"name": "x", "type": "int"}]}`
	v2 := `{"type": "record", "name": "Event", "fields": [{"name": "id", "type": "string"}]}`
	v3 := `{"type": "record", "name": "Event", "fields": [{"name": "id", "type": "string"}, {"name": "x", "type": "string", "default": ""}]}`
	for _, tc := range []struct {
		level Level
		want  []Violation
	}{
		{Backward, nil},
		{BackwardTransitive, []Violation{{Path: "/fields/x", Message: `existing schema 1 of 2: field "x" changed type from int to string: readers of the new schema cannot read old data`}}},
		{Forward, nil},
		{ForwardTransitive, []Violation{{Path: "/fields/x", Message: `existing schema 1 of 2: field "x" changed type from int to string: readers of the old schema cannot read new data`}}},
		{FullTransitive, []Violation{
			{Path: "/fields/x", Message: `existing schema 1 of 2: field "x" changed type from int to string: readers of the new schema cannot read old data`},
			{Path: "/fields/x", Message: `existing schema 1 of 2: field "x" changed type from int to string: readers of the old schema cannot read new data`},
		}},
	} {
		got, err := Check("", tc.level, v3, []string{v1, v2})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.level, got, tc.want)
		}
	}
	// v2 itself followed v1 under BACKWARD.
	if got, err := Check("AVRO", Backward, v2, []string{v1}); err != nil || len(got) > 0 {
		t.Errorf("v2 after v1 = %v, %v", got, err)
	}
}

func TestCheckWithoutExistingVersions(t *testing.T) {
	for _, l := range levels {
		got, err := Check("JSON", l, `{"type": "object"}`, nil)
		if err != nil || len(got) > 0 {
			t.Errorf("%s = %v, %v; want nothing", l, got, err)
		}
	}
}

func TestCanReadMessages(t *testing.T) {
	got, err := CanRead("json", `{"properties": {"n": {"type": "string"}}}`, `{"properties": {"n": {"type": "integer"}}}`)
	want := []Violation{{Path: "/properties/n/type", Message: `property "n" changed type from integer to string: the reader rejects the writer's data`}}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("CanRead = %v, %v; want %v", got, err, want)
	}
	got, err = CanRead("avro", `{"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}`, `{"type": "record", "name": "R", "fields": []}`)
	want = []Violation{{Path: "/fields/a", Message: `field "a" was added without a default: the reader cannot read the writer's data, which lacks it`}}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("CanRead = %v, %v; want %v", got, err, want)
	}
}

func TestErrors(t *testing.T) {
	good := `{"type": "record", "name": "R", "fields": []}`
	for _, tc := range []struct {
		name  string
		check func() error
		is    error
		text  string
	}{
		{"avro candidate", func() error { _, err := Check("AVRO", Backward, `{"type": "record"`, []string{good}); return err }, schema.ErrInvalidSchema, "compat: new schema: invalid schema"},
		{"avro unknown type", func() error {
			_, err := Check("", Backward, `{"type": "record", "name": "R", "fields": [{"name": "a", "type": "Nope"}]}`, nil)
			return err
		}, schema.ErrInvalidSchema, "new schema"},
		{"avro existing", func() error { _, err := Check("AVRO", Full, good, []string{"nope", good, "nope"}); return err }, schema.ErrInvalidSchema, "existing schema 3 of 3"},
		{"json candidate", func() error { _, err := Check("JSON", Backward, `{"type": `, nil); return err }, schema.ErrInvalidSchema, "compat: new schema"},
		{"json not an object", func() error { _, err := Check("JSON", None, `[1, 2]`, nil); return err }, schema.ErrInvalidSchema, "top level"},
		{"json existing", func() error { _, err := Check("JSON", BackwardTransitive, `{}`, []string{"{", "{}"}); return err }, schema.ErrInvalidSchema, "existing schema 1 of 2"},
		{"reader", func() error { _, err := CanRead("JSON", `{`, `{}`); return err }, schema.ErrInvalidSchema, "reader schema"},
		{"writer", func() error { _, err := CanRead("AVRO", good, `"nope"`); return err }, schema.ErrInvalidSchema, "writer schema"},
		{"type", func() error { _, err := Check("PROTOBUF", Backward, good, nil); return err }, ErrUnsupportedType, `"PROTOBUF": want AVRO or JSON`},
		{"level", func() error { _, err := Check("AVRO", "SIDEWAYS", good, nil); return err }, ErrInvalidLevel, "want one of NONE, BACKWARD"},
	} {
		err := tc.check()
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s: error %v; want %v containing %q", tc.name, err, tc.is, tc.text)
		}
	}
}

func TestParseLevel(t *testing.T) {
	for in, want := range map[string]Level{
		"backward": Backward, " Full_Transitive ": FullTransitive, "NONE": None,
		"forward_transitive": ForwardTransitive, "FULL": Full, "Forward": Forward,
		"BACKWARD_TRANSITIVE": BackwardTransitive,
	} {
		if got, err := ParseLevel(in); err != nil || got != want {
			t.Errorf("ParseLevel(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	_, err := ParseLevel("both")
	want := `invalid compatibility level "both": want one of NONE, BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL, FULL_TRANSITIVE`
	if !errors.Is(err, ErrInvalidLevel) || err.Error() != want {
		t.Errorf("ParseLevel(both) = %v; want %s", err, want)
	}
}

func TestViolationString(t *testing.T) {
	if got := (Violation{Message: "m"}).String(); got != "(root): m" {
		t.Errorf("got %q", got)
	}
	if got := (Violation{Path: "/fields/a", Message: "m"}).String(); got != "/fields/a: m" {
		t.Errorf("got %q", got)
	}
}

// TestLibraryViolation: a problem only twmb/avro finds keeps its path.
func TestLibraryViolation(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want Violation
	}{
		{&avro.CompatibilityError{Path: "address.zip", ReaderType: "int", WriterType: "string", Detail: "incompatible types"},
			Violation{Path: "/fields/address/fields/zip", Message: "incompatible types (reader int, writer string): readers of the new schema cannot read old data"}},
		{&avro.CompatibilityError{Path: "tags.items", ReaderType: "int", WriterType: "string", Detail: "d"},
			Violation{Path: "/fields/tags/items", Message: "d (reader int, writer string): readers of the new schema cannot read old data"}},
		{&avro.CompatibilityError{Path: "(root)", ReaderType: "record", WriterType: "record", Detail: "d"},
			Violation{Path: "", Message: "d (reader record, writer record): readers of the new schema cannot read old data"}},
		{errors.New("boom"), Violation{Message: "boom: readers of the new schema cannot read old data"}},
	} {
		if got := libraryViolation(tc.err, dirBackward); got != tc.want {
			t.Errorf("libraryViolation(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
