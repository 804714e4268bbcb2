package registry

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			orig := strings.Replace(c.edited, `"b":{"type":"integer"}`, `"a":{"type":"string"}`, 1)
			if err := os.WriteFile(path, []byte(orig), 0o644); err != nil {
				t.Fatal(err)
			}
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
