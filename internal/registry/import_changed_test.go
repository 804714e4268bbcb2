package registry

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// TestImportChangedVersion: a folder whose registered version was edited
// in place is refused with the way out: a new version, or a fresh start.
func TestImportChangedVersion(t *testing.T) {
	for _, c := range []struct{ name, file, edited string }{
		{"legacy", "Foo/7.json", `{"type":"object","properties":{"b":{"type":"integer"}}}`},
		{"event platform", "jsonschema/test/thing/1.0.0.json", `{"title":"test/thing","type":"object","properties":{"b":{"type":"integer"}}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := newInstance(t, nil)
			dir := t.TempDir()
			path := filepath.Join(dir, filepath.FromSlash(c.file))
			orig := strings.Replace(c.edited, `"b":{"type":"integer"}`, `"a":{"type":"string"}`, 1)
			testsupport.WriteFile(t, path, orig)
			if _, err := in.r.ImportDir(t.Context(), dir); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(c.edited), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := in.r.ImportDir(t.Context(), dir)
			if err == nil {
				t.Fatal("an edited version was imported")
			}
			for _, want := range []string{c.file[strings.LastIndexByte(c.file, '/')+1:], "new version", "data directory"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}

// TestImportRepositoryLayout: a folder laid out as Wikimedia's schema
// repositories (extensionless versions beside .yaml, latest, current.yaml,
// several titles) registers every version once, and reports what it
// skipped.
func TestImportRepositoryLayout(t *testing.T) {
	in := newInstance(t, nil)
	dir := t.TempDir()
	doc := func(title, field string) string {
		return `{"title":"` + title + `","type":"object","properties":{"` + field + `":{"type":"string"}}}`
	}
	files := map[string]string{
		"jsonschema/analytics/click/1.0.0":        doc("analytics/click", "a"),
		"jsonschema/analytics/click/1.0.0.yaml":   "title: analytics/click\ntype: object\nproperties:\n  a: {type: string}\n",
		"jsonschema/analytics/click/1.1.0":        doc("analytics/click", "b"),
		"jsonschema/analytics/click/latest":       doc("analytics/click", "b"),
		"jsonschema/analytics/click/current.yaml": "title: analytics/click\n",
		"jsonschema/mediawiki/edit/2.0.0":         doc("mediawiki/edit", "c"),
		"jsonschema/mediawiki/edit/latest.yaml":   "title: mediawiki/edit\n",
	}
	testsupport.WriteFiles(t, dir, files)
	st, err := in.r.ImportDir(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Registered != 3 {
		t.Errorf("registered %d versions, want 3 (click 1.0.0, 1.1.0, edit 2.0.0)", st.Registered)
	}
	var skipped []string
	for _, sk := range st.Skipped {
		skipped = append(skipped, sk.Path)
	}
	want := []string{
		"jsonschema/analytics/click/1.0.0.yaml", "jsonschema/analytics/click/current.yaml",
		"jsonschema/analytics/click/latest", "jsonschema/mediawiki/edit/latest.yaml",
	}
	if strings.Join(skipped, ",") != strings.Join(want, ",") {
		t.Errorf("skipped %v, want %v", skipped, want)
	}
	in.run(t, []step{
		{method: "GET", path: "/analytics/click/1.1.0", status: 200, contains: `"b"`},
		{method: "GET", path: "/mediawiki/edit/2.0.0", status: 200, contains: `"c"`},
	})
}
