package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// pyicebergRead lists every table of the eventlogging namespace of a SQLite
// catalog with PyIceberg and counts the uuids and rows of each.
const pyicebergRead = `
import collections, json, sys
from pyiceberg.catalog.sql import SqlCatalog
cat = SqlCatalog("eventlogging", uri=sys.argv[1], warehouse=sys.argv[2])
uuids, tables = collections.Counter(), {}
for ident in cat.list_tables("eventlogging"):
    t = cat.load_table(ident)
    tbl = t.scan().to_arrow()
    tables[".".join(ident)] = {"rows": tbl.num_rows, "columns": tbl.column_names, "snapshots": len(t.metadata.snapshots)}
    uuids.update(tbl.column("uuid").to_pylist())
print(json.dumps({"uuids": uuids, "tables": tables}))
`

// TestIcebergStandalone runs standalone with the Iceberg sink on a SQLite
// catalog (--iceberg-catalog, --iceberg-warehouse, as a user passes them),
// sends 20,000 events with bench, and reads the tables back with PyIceberg:
// one table per schema, every uuid exactly once; then runs
// `eventlogging purge` on the same catalog.
func TestIcebergStandalone(t *testing.T) {
	if raceEnabled {
		t.Skip("20,000 events through a race-built standalone: scripts/test.sh runs it in its pass without -race")
	}
	py := testsupport.Python(t)
	const events = 20_000
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	catalog := "sqlite:///" + filepath.Join(dir, "catalog.db")
	warehouse := filepath.Join(dir, "warehouse")
	env := append(os.Environ(), "EVENTLOGGING_SINK_ICEBERG_COMMIT_INTERVAL=2s")
	_, base := startStandalone(t, env, dataDir, "--schemas", "../../examples/schemas",
		"--iceberg-catalog", catalog, "--iceberg-warehouse", warehouse)
	rep := benchStandalone(t, base, dataDir, events, 4, "3m")
	waitPublished(t, base, "iceberg", events, 3*time.Minute)
	read := func() (map[string]int, map[string]struct {
		Rows    int      `json:"rows"`
		Columns []string `json:"columns"`
	}) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), py, "-c", pyicebergRead, catalog, "file://"+warehouse)
		cmd.Stderr = os.Stderr
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("pyiceberg: %v", err)
		}
		var got struct {
			UUIDs  map[string]int `json:"uuids"`
			Tables map[string]struct {
				Rows    int      `json:"rows"`
				Columns []string `json:"columns"`
			} `json:"tables"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("pyiceberg printed %.300q: %v", b, err)
		}
		return got.UUIDs, got.Tables
	}
	uuids, tables := read()
	dup := notOnce(uuids)
	if len(uuids) != events || dup != 0 {
		t.Fatalf("PyIceberg read %d distinct uuids (%d not exactly once), want %d", len(uuids), dup, events)
	}
	if len(tables) != len(rep.Schemas) {
		t.Errorf("tables %v, want one per schema sent (%v)", keysOf(tables), rep.Schemas)
	}
	for name, tb := range tables {
		if !strings.HasPrefix(name, "eventlogging.") || !contains(tb.Columns, "dt") || !contains(tb.Columns, "event") {
			t.Errorf("table %s: columns %v", name, tb.Columns)
		}
	}
	t.Logf("PyIceberg read %d uuids once each from %d tables", len(uuids), len(tables))

	// `eventlogging purge` on the same catalog: with a retention of an
	// hour, no hour of events received minutes ago has ended before the
	// cutoff, so the purge reports on the Iceberg tables and keeps every
	// row (the deleting and sanitising purge is read back with PyIceberg
	// in internal/sink/icebergsink TestPurgeOld).
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte("retention: 1h\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runCLI(t, "purge", "--policy", policy, "--iceberg-catalog", catalog, "--iceberg-warehouse", warehouse)
	if !strings.Contains(out, "iceberg") {
		t.Errorf("purge did not report on the Iceberg tables:\n%s", out)
	}
	if after, _ := read(); len(after) != events {
		t.Errorf("purge with a 1h retention left %d of %d events", len(after), events)
	}
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
