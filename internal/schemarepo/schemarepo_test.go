package schemarepo

import (
	"strings"
	"testing"
)

func TestLoadExamples(t *testing.T) {
	repo, skipped, err := Load("../../examples/schemas")
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 0 {
		t.Errorf("the examples have files that are not loaded: %+v", skipped)
	}
	if vs := repo["Generic"]; len(vs) != 1 || vs[0].Revision != 13 || vs[0].Label() != "Generic/13" {
		t.Errorf("Generic: %+v", vs)
	}
	if vs := repo["analytics/edit_funnel"]; len(vs) != 2 || vs[0].SemVer != "1.0.0" || vs[1].SemVer != "1.1.0" || vs[0].Label() != "analytics/edit_funnel/1.0.0" {
		t.Errorf("edit_funnel: %d versions", len(vs))
	}
	// The example repository lints clean.
	for _, s := range Subjects(repo) {
		for _, v := range repo[s] {
			for _, p := range Lint(v) {
				t.Errorf("%s", p)
			}
		}
	}
}

func TestLint(t *testing.T) {
	cases := []struct {
		name, doc string
		want      []string // substrings of the problems, in pointer order
	}{
		{"clean", `{"properties":{"page_id":{"type":"integer"},"action":{"type":"string"}}}`, nil},
		{"not JSON", `{"properties":`, []string{"does not parse"}},
		{"invalid schema", `{"type":"object","properties":{"a":{"type":"nonsense"}}}`, []string{"not a valid schema"}},
		{"mixed naming", `{"properties":{"page_id":{"type":"integer"},"user_name":{"type":"string"},"editCount":{"type":"integer"}}}`, []string{`"editCount" is not snake_case`}},
		{"union type", `{"properties":{"v":{"type":["string","integer"]}}}`, []string{"union type"}},
		{"nullable is fine", `{"properties":{"v":{"type":["string","null"]}}}`, nil},
		{"untyped array", `{"properties":{"tags":{"type":"array"}}}`, []string{"array without"}},
		{"bad example", `{"properties":{"n":{"type":"integer"}},"examples":[{"n":1},{"n":"x"}]}`, []string{"/examples/1: example does not validate"}},
		// A YAML flow mapping split at a comma (issue 31; the example
		// edit_funnel schemas had it): the rest of the text became a key
		// without a value.
		{"flow mapping split at a comma", "properties:\n  id: {type: string, description: event uuid, set by the intake}\n",
			[]string{`/properties/id/set by the intake: key "set by the intake" has no value`}},
		{"property without a schema", "properties:\n  id:\n  name: {type: string}\n", []string{`/properties/id: got null`}},
		{"null default is fine", "properties:\n  id: {type: [string, \"null\"], default: null}\n", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := "T/1.json"
			if !strings.HasPrefix(c.doc, "{") {
				path = "T/1.yaml"
			}
			probs := Lint(Version{Subject: "T", Revision: 1, Path: path, Raw: []byte(c.doc)})
			if len(probs) != len(c.want) {
				t.Fatalf("problems %v, want %d", probs, len(c.want))
			}
			for i, w := range c.want {
				if !strings.Contains(probs[i].String(), w) {
					t.Errorf("problem %q lacks %q", probs[i], w)
				}
			}
		})
	}
}

func TestDiff(t *testing.T) {
	a := "{\n  \"a\": 1,\n  \"b\": 2\n}\n"
	b := "{\n  \"a\": 1,\n  \"c\": 3\n}\n"
	want := " {\n   \"a\": 1,\n-  \"b\": 2\n+  \"c\": 3\n }\n"
	if got := Diff(a, b); got != want {
		t.Errorf("diff:\n%s\nwant:\n%s", got, want)
	}
	if Diff(a, a) != "" {
		t.Error("equal inputs differ")
	}
}

func TestCompareSemVer(t *testing.T) {
	if CompareVersions("1.2.10", "1.2.9") <= 0 || CompareVersions("1.0.0", "1.0.0") != 0 || CompareVersions("2.0.0", "10.0.0") >= 0 {
		t.Error("semver order")
	}
}
