package testsupport

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteFile writes content to path, creating its folders.
func WriteFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// WriteFiles writes each file of files (slash-separated path relative to
// dir → content) under dir.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		WriteFile(t, filepath.Join(dir, filepath.FromSlash(p)), c)
	}
}
