package testsupport

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// ReferenceDir is testdata/reference/eventlogging at the repository root:
// the original implementation's vectors.
func ReferenceDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "reference", "eventlogging")
}

// LoadReference decodes the reference vectors of file name into v.
func LoadReference(t testing.TB, name string, v any) {
	t.Helper()
	p := filepath.Join(ReferenceDir(), name)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("reference vectors missing (testdata/reference/eventlogging at the repository root): %v", err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("decode %s: %v", p, err)
	}
}
