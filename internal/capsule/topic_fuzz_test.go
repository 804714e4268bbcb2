package capsule

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzParseTopicTemplate parses arbitrary topic templates: an error, or a
// template whose Format is the text with {schema} and {revision} replaced
// and no other braces.
func FuzzParseTopicTemplate(f *testing.F) {
	for _, s := range []string{DefaultTopicTmpl, "{schema}_{revision}", "{schema}{schema}", "x{", "}", "{}", "{Schema}", "{revision", "a{schema}b}c", "{{schema}}", "{schema}\x00"} {
		f.Add(s, "Generic", int64(13))
	}
	f.Add("{schema}", "x'; DROP TABLE y; --", int64(-1))
	f.Fuzz(func(t *testing.T, tmpl, schema string, revision int64) {
		tt, err := ParseTopicTemplate(tmpl)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "topic template ") {
				t.Fatalf("error %q", err)
			}
			return
		}
		rest := strings.NewReplacer("{schema}", "", "{revision}", "").Replace(tmpl)
		if strings.ContainsAny(rest, "{}") {
			t.Fatalf("template %q accepted with stray braces", tmpl)
		}
		want := strings.NewReplacer("{schema}", schema, "{revision}", strconv.FormatInt(revision, 10)).Replace(tmpl)
		if got := tt.Format(schema, revision); got != want {
			t.Fatalf("Format(%q, %d) of %q = %q, want %q", schema, revision, tmpl, got, want)
		}
	})
}

// TestParseTopicTemplateStrayBrace: a '}' before a placeholder is an
// error, as after the last one (found by FuzzParseTopicTemplate; it made
// topic names Kafka refuses).
func TestParseTopicTemplateStrayBrace(t *testing.T) {
	for _, s := range []string{"}{schema}", "a}b_{revision}", "{schema}}", "x}"} {
		if _, err := ParseTopicTemplate(s); err == nil || !strings.Contains(err.Error(), "unmatched '}'") {
			t.Errorf("ParseTopicTemplate(%q): %v, want unmatched '}'", s, err)
		}
	}
}
