package filesink

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// envPython names the Python interpreter that has duckdb installed
// (scripts/test.sh sets it to its virtualenv's).
const envPython = "EVENTLOGGING_PYTHON"

// pythonWithDuckDB returns the interpreter, or skips (locally) / fails
// (CI=true) when there is none.
func pythonWithDuckDB(t *testing.T) string {
	t.Helper()
	py := os.Getenv(envPython)
	if py == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set: under CI=true the DuckDB cross-check must run (scripts/test.sh sets it)", envPython)
		}
		t.Skipf("%s not set; skipping the DuckDB cross-check (python3 -m venv /tmp/fsvenv && /tmp/fsvenv/bin/pip install -r scripts/python-requirements.txt, then %s=/tmp/fsvenv/bin/python)", envPython, envPython)
	}
	return py
}

// DuckDB reads the Parquet files with Hive partitioning: every record once,
// nested groups as structs, the partition columns from the directories,
// column statistics, and two schema versions of a topic by name.
func TestDuckDB(t *testing.T) {
	py := pythonWithDuckDB(t)
	root := t.TempDir()
	s := openSink(t, Config{Root: root, Format: Parquet, Schemas: testSchemas(t), MaxFileBytes: 64 << 10})
	input := spread([]string{"eventlogging_Test"}, 3, 600, 3)
	for i := range 50 {
		dt := base.Add(time.Duration(i) * time.Minute)
		input = append(input, testsupport.CapsuleRecord("eventlogging_Mixed", 0, int64(i), dt))
		input = append(input, kafka.Record{Topic: "eventlogging_Mixed", Partition: 1, Offset: int64(i), Timestamp: dt,
			Value: fmt.Appendf(nil, `{"event":{"action":"v2","count":%d,"added":"yes"},"schema":"Test","revision":2,"dt":%q,"uuid":"m%d"}`, i, dt.Format(time.RFC3339), i)})
	}
	feedAndClose(t, s, input, 1000)
	uuid := testsupport.EventUUID("eventlogging_Test", 2, 333) // 333 × 18s = 1h39m54s: hour 08
	cmd := exec.CommandContext(t.Context(), py, "testdata/duckdb_check.py", root, "eventlogging_Test", uuid, "eventlogging_Mixed")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("duckdb_check.py: %v", err)
	}
	var got struct {
		DuckDB   string
		Count    int
		Distinct int
		Row      []any
		PerHour  [][]any `json:"per_hour"`
		Typed    []any   `json:"typed_hours"`
		Types    map[string]string
		Stats    [][]any
		Mixed    []int
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Logf("DuckDB %s: %s", got.DuckDB, out)
	if got.Count != 1800 || got.Distinct != 1800 {
		t.Errorf("count %d, distinct uuids %d; want 1800, 1800", got.Count, got.Distinct)
	}
	want := []any{float64(333 % 7), "n333", float64(333), 333.5, false, `["a","b"]`, float64(2024), "01", "05", "08"}
	if fmt.Sprint(got.Row) != fmt.Sprint(want) {
		t.Errorf("row %v, want %v", got.Row, want)
	}
	if fmt.Sprint(got.PerHour) != "[[07 600] [08 600] [09 600]]" {
		t.Errorf("rows per hour %v", got.PerHour)
	}
	if fmt.Sprint(got.Typed) != "[7 9 INTEGER]" {
		t.Errorf("hours typed with hive_types: %v", got.Typed)
	}
	if ty := got.Types["event"]; !strings.HasPrefix(ty, "STRUCT(") || !strings.Contains(ty, `nested STRUCT(depth STRUCT("level" BIGINT), "label" VARCHAR)`) {
		t.Errorf("event column type %q", ty)
	}
	if got.Types["uuid"] != "VARCHAR" || got.Types["revision"] != "BIGINT" {
		t.Errorf("types %v", got.Types)
	}
	if len(got.Stats) == 0 {
		t.Error("no column statistics")
	}
	for _, st := range got.Stats {
		if st[1] == nil || st[2] == nil || st[3] == nil {
			t.Errorf("column %v without statistics", st)
		}
	}
	if fmt.Sprint(got.Mixed) != "[100 50 2]" {
		t.Errorf("mixed revisions (rows, rows with the v2 field, revisions) = %v, want [100 50 2]", got.Mixed)
	}
}
