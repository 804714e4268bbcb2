package dashboard

import (
	"slices"
	"strings"
	"testing"

	"github.com/eventlogging/eventlogging/internal/inspect"
)

func TestHighlightJSON(t *testing.T) {
	const doc = `{"schema":"Nav","event":{"a/b":{"t~x":1},"list":[10,{"k":"v"},30],"html":"<script>alert('x')</script>","nested":{"deep":{"x":null}}},"z":true}`
	tests := []struct {
		name      string
		path      string // violation path
		wantSpan  string // data-path of the span that must carry it
		missing   bool   // the span also has violation-missing
		wantTitle string
	}{
		{"nested", "/event/nested/deep/x", "/event/nested/deep/x", false, "/event/nested/deep/x: broken"},
		{"escaped slash", "/event/a~1b", "/event/a~1b", false, "broken"},
		{"escaped slash and tilde", "/event/a~1b/t~0x", "/event/a~1b/t~0x", false, "broken"},
		{"array index", "/event/list/1/k", "/event/list/1/k", false, "broken"},
		{"array element", "/event/list/2", "/event/list/2", false, "broken"},
		{"missing property", "/event/nested/deep/required", "/event/nested/deep", true, "/event/nested/deep/required: broken"},
		{"missing parent too", "/event/nope/deeper", "/event", true, "broken"},
		{"index out of range", "/event/list/3", "/event/list", true, "broken"},
		{"leading zero index", "/event/list/01", "/event/list", true, "broken"},
		{"into a scalar", "/z/x", "/z", true, "broken"},
		{"root", "", "", false, "(root): broken"},
		{"URI fragment form", "#/event/a~1b", "/event/a~1b", false, "broken"},
		{"malformed", "event/list", "", false, "broken"},
		{"bad escape", "/event/a~2b", "", false, "broken"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := highlightJSON([]byte(doc), []inspect.Violation{{Path: tt.path, Message: "broken"}})
			if err != nil {
				t.Fatal(err)
			}
			root := parseHTML(t, "<pre>"+string(out)+"</pre>")
			var marked []string
			for _, s := range root.all("span.violation") {
				marked = append(marked, s.attrs["data-path"])
			}
			if !slices.Equal(marked, []string{tt.wantSpan}) {
				t.Fatalf("violation on %q, want only %q", marked, tt.wantSpan)
			}
			span := root.one(t, "span.violation")
			if span.hasClass("violation-missing") != tt.missing {
				t.Errorf("violation-missing %v, want %v", span.hasClass("violation-missing"), tt.missing)
			}
			if !strings.Contains(span.attrs["title"], tt.wantTitle) {
				t.Errorf("title %q, want %q", span.attrs["title"], tt.wantTitle)
			}
		})
	}
}

func TestHighlightJSONRendering(t *testing.T) {
	const doc = `{"z":1,"a":{"<k>":"<script>alert(\"x\")</script> & 'q'"},"m":[],"e":{},"n":-1.50e3,"s":"line\nbreak\u0001"}`
	out, err := highlightJSON([]byte(doc), []inspect.Violation{
		{Path: "/a/<k>", Message: `<b>"bad"</b>`},
		{Path: "/a/<k>", Message: "second"},
	})
	if err != nil {
		t.Fatal(err)
	}
	html := string(out)
	for _, bad := range []string{"<script>", "<k>", "<b>", `"bad"`} {
		if strings.Contains(html, bad) {
			t.Errorf("unescaped %q in %s", bad, html)
		}
	}
	root := parseHTML(t, "<pre>"+html+"</pre>")
	// The text is the document indented, keys in their original order,
	// values as written.
	want := `{
  "z": 1,
  "a": {
    "<k>": "<script>alert(\"x\")</script> & 'q'"
  },
  "m": [],
  "e": {},
  "n": -1.50e3,
  "s": "line\nbreak\u0001"
}`
	if got := root.Text(); got != want {
		t.Errorf("text:\n%s\nwant:\n%s", got, want)
	}
	v := root.one(t, "span[data-path=/a/<k>]")
	if !v.hasClass("violation") || v.attrs["title"] != "/a/<k>: <b>\"bad\"</b>\n/a/<k>: second" {
		t.Errorf("span %v", v.attrs)
	}
	if !v.hasClass("j-str") || !root.one(t, "span[data-path=/n]").hasClass("j-num") {
		t.Error("value kinds not classed")
	}
	if len(root.all("span[data-path]")) != 8 {
		t.Errorf("%d value spans, want 8", len(root.all("span[data-path]")))
	}
}

func TestHighlightJSONRejects(t *testing.T) {
	for name, doc := range map[string]string{
		"not JSON":      `{"a":`,
		"trailing data": `{} {}`,
		"empty":         ``,
		"too deep":      strings.Repeat("[", maxHighlightDepth+2) + strings.Repeat("]", maxHighlightDepth+2),
	} {
		if _, err := highlightJSON([]byte(doc), nil); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestParsePointer(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		ok   bool
	}{
		{"", nil, true},
		{"/", []string{""}, true},
		{"/a/b", []string{"a", "b"}, true},
		{"/a~1b/c~0d/~01", []string{"a/b", "c~d", "~1"}, true},
		{"#/a%20b", []string{"a b"}, true},
		{"a", nil, false},
		{"/a~", nil, false},
		{"/a~x", nil, false},
	}
	for _, tt := range tests {
		got, ok := parsePointer(tt.in)
		if ok != tt.ok || !slices.Equal(got, tt.want) {
			t.Errorf("parsePointer(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzHighlightJSON(f *testing.F) {
	f.Add(`{"event":{"a":[1,"<x>"]}}`, "/event/a/1")
	f.Add(`[{"~":{"/":null}}]`, "/0/~0/~1")
	f.Fuzz(func(t *testing.T, doc, path string) {
		out, err := highlightJSON([]byte(doc), []inspect.Violation{{Path: path, Message: "<m>"}})
		if err != nil {
			return
		}
		if strings.Contains(string(out), "<m>") {
			t.Fatalf("unescaped message in %s", out)
		}
		if strings.Count(string(out), "<span") != strings.Count(string(out), "</span>") {
			t.Fatalf("unbalanced spans in %s", out)
		}
	})
}
