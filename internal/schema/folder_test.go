package schema

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// TestScanFolder reads a folder laid out as Wikimedia's Event Platform
// schema repositories are (extensionless JSON beside .yaml and .json,
// latest, current.yaml), the same without the jsonschema/ level (as the
// peer benchmark ships EventGate's test schema), and legacy files; every
// file not loaded is listed with its reason.
func TestScanFolder(t *testing.T) {
	dir := t.TempDir()
	doc := func(title string) string {
		return `{"title":"` + title + `","type":"object","properties":{"a":{"type":"string"}}}`
	}
	files := map[string]string{
		"jsonschema/analytics/button_click/1.0.0":        doc("analytics/button_click"),
		"jsonschema/analytics/button_click/1.0.0.yaml":   "title: analytics/button_click\ntype: object\n",
		"jsonschema/analytics/button_click/1.0.0.json":   doc("analytics/button_click"),
		"jsonschema/analytics/button_click/1.1.0.yaml":   "title: analytics/button_click\ntype: object\n",
		"jsonschema/analytics/button_click/1.10.0":       doc("analytics/button_click"),
		"jsonschema/analytics/button_click/latest":       doc("analytics/button_click"),
		"jsonschema/analytics/button_click/latest.yaml":  "title: analytics/button_click\n",
		"jsonschema/analytics/button_click/current.yaml": "title: analytics/button_click\n",
		"jsonschema/analytics/button_click/README.md":    "# notes\n",
		"jsonschema/1.0.0.yaml":                          "type: object\n",
		"test/event/1.0.0":                               doc("test/event"),
		"Foo/1.json":                                     doc("Foo"),
		"Foo/2.yaml":                                     "type: object\n",
		"Foo/02.json":                                    doc("Foo"),
		"Foo/notes.txt":                                  "x",
		"README.md":                                      "# schemas\n",
		".git/config":                                    "[core]\n",
		"Foo/.1.json.swp":                                "x",
	}
	testsupport.WriteFiles(t, dir, files)
	f, err := ScanFolder(dir)
	if err != nil {
		t.Fatal(err)
	}
	var legacy, platform []string
	for _, ff := range f.Legacy {
		legacy = append(legacy, ff.ID.String()+"="+ff.Path)
	}
	for _, ff := range f.Platform {
		platform = append(platform, "/"+ff.Title+"/"+ff.Version+"="+ff.Path)
	}
	if want := []string{"Foo/1=Foo/1.json", "Foo/2=Foo/2.yaml"}; !slices.Equal(legacy, want) {
		t.Errorf("legacy:\n got %q\nwant %q", legacy, want)
	}
	wantPlatform := []string{
		"/analytics/button_click/1.0.0=jsonschema/analytics/button_click/1.0.0",
		"/analytics/button_click/1.1.0=jsonschema/analytics/button_click/1.1.0.yaml",
		"/analytics/button_click/1.10.0=jsonschema/analytics/button_click/1.10.0",
		"/test/event/1.0.0=test/event/1.0.0",
	}
	if !slices.Equal(platform, wantPlatform) {
		t.Errorf("platform:\n got %q\nwant %q", platform, wantPlatform)
	}
	wantSkipped := map[string]string{
		"Foo/02.json":           "revision an integer without leading zeros",
		"Foo/notes.txt":         "not a schema file",
		"README.md":             "not a schema file",
		"jsonschema/1.0.0.yaml": "directly under jsonschema/",
		"jsonschema/analytics/button_click/1.0.0.json":   "the same version as jsonschema/analytics/button_click/1.0.0",
		"jsonschema/analytics/button_click/1.0.0.yaml":   "the same version as jsonschema/analytics/button_click/1.0.0",
		"jsonschema/analytics/button_click/README.md":    "not a schema file",
		"jsonschema/analytics/button_click/current.yaml": "working copy",
		"jsonschema/analytics/button_click/latest":       "alias of the latest version",
		"jsonschema/analytics/button_click/latest.yaml":  "alias of the latest version",
	}
	got := map[string]string{}
	for _, sk := range f.Skipped {
		got[sk.Path] = sk.Reason
	}
	for p, want := range wantSkipped {
		if !strings.Contains(got[p], want) {
			t.Errorf("skipped %s: reason %q, want one containing %q", p, got[p], want)
		}
	}
	if len(got) != len(wantSkipped) {
		t.Errorf("skipped %d files, want %d: %v", len(got), len(wantSkipped), got)
	}

	// Every listed schema can be fetched by its $schema path or id.
	src := NewDirSource(dir)
	for _, ff := range f.Platform {
		b, err := src.FetchURI(context.Background(), "/"+ff.Title+"/"+ff.Version)
		if err != nil || len(b) == 0 {
			t.Errorf("FetchURI(/%s/%s) = %v", ff.Title, ff.Version, err)
		}
	}
	ids, err := src.List()
	if err != nil || len(ids) != 2 {
		t.Errorf("List = %v, %v", ids, err)
	}
	if _, err := src.FetchURI(context.Background(), "/test/event/2.0.0"); err == nil {
		t.Error("FetchURI of a missing version succeeded")
	}
}
