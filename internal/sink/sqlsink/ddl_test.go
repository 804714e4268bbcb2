package sqlsink

import (
	"database/sql"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventlogging/eventlogging/internal/schema"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// newTestWriter returns NewWriter(db, s, cfg), closed when the test ends;
// an error fails the test.
func newTestWriter(t testing.TB, db *sql.DB, s Schemas, cfg Config) *Writer {
	t.Helper()
	w, err := NewWriter(db, s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

// testSchemas is the schema repository of the tests.
const testSchemas = "testdata/schemas"

func testResolver(t testing.TB) *schema.Resolver {
	t.Helper()
	return schema.NewResolver(schema.NewDirSource(testSchemas), schema.ResolverConfig{})
}

// allTestSchemas resolves every schema version in testdata/schemas.
func allTestSchemas(t testing.TB) []*schema.Schema {
	t.Helper()
	ids, err := schema.NewDirSource(testSchemas).List()
	if err != nil {
		t.Fatal(err)
	}
	res := testResolver(t)
	var out []*schema.Schema
	for _, id := range ids {
		s, err := res.Resolve(t.Context(), id)
		if err != nil {
			t.Fatalf("resolve %s: %v", id, err)
		}
		out = append(out, s)
	}
	return out
}

// TestDDLGolden pins the CREATE statements of every test schema, per
// dialect and table mode: testdata/<dialect>.golden (one table per
// revision) and testdata/<dialect>.per-schema.golden. Run with -update to
// rewrite them.
func TestDDLGolden(t *testing.T) {
	schemas := allTestSchemas(t)
	for _, d := range []Dialect{SQLite, MySQL, Postgres} {
		for _, perSchema := range []bool{false, true} {
			name := string(d)
			if perSchema {
				name += ".per-schema"
			}
			t.Run(name, func(t *testing.T) {
				w := newTestWriter(t, &sql.DB{}, testResolver(t), Config{Dialect: d, TablePerSchema: perSchema})
				var b strings.Builder
				for _, s := range schemas {
					b.WriteString("-- " + s.ID().String() + "\n")
					for _, stmt := range w.DDL(s) {
						b.WriteString(stmt + ";\n")
					}
					b.WriteString("\n")
				}
				checkGolden(t, filepath.Join("testdata", name+".golden"), b.String())
			})
		}
	}
}

func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run go test -update to rewrite it):\n--- got\n%s", path, got)
	}
}
