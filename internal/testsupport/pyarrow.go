package testsupport

import (
	_ "embed"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

//go:embed pyarrow_uuids.py
var pyarrowUUIDs []byte

// EnvPython names the Python interpreter with pyarrow, DuckDB and PyIceberg
// (scripts/test.sh sets it to its virtualenv's).
const EnvPython = "EVENTLOGGING_PYTHON"

// Python returns the interpreter of EnvPython, or skips (locally) / fails
// (CI=true) the test when it is not set.
func Python(tb testing.TB) string {
	tb.Helper()
	return integrationEnv(tb, EnvPython, "Python (pyarrow)",
		"python3 -m venv /tmp/venv && /tmp/venv/bin/pip install -r scripts/python-requirements.txt, then EVENTLOGGING_PYTHON=/tmp/venv/bin/python")
}

// ParquetRead is what pyarrow found in the file sink's Parquet files.
type ParquetRead struct {
	UUIDs map[string]int `json:"uuids"` // how often each uuid was read
	Hours map[string]int `json:"hours"` // rows per hour partition: <topic>/year=/month=/day=/hour=
	Files int            `json:"files"`
}

// PyarrowS3 reads every Parquet file under s3://bucket/prefix with pyarrow
// (S3FileSystem with endpoint_override, pyarrow.dataset with Hive
// partitioning: a reader nobody here wrote), credentials from the
// environment's AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
func PyarrowS3(tb testing.TB, srv S3Server, bucket, prefix string) ParquetRead {
	tb.Helper()
	return pyarrow(tb, "s3", srv.Endpoint, srv.Region, bucket, prefix)
}

// PyarrowLocal reads every Parquet file under a local directory with
// pyarrow.
func PyarrowLocal(tb testing.TB, dir string) ParquetRead {
	tb.Helper()
	return pyarrow(tb, "local", dir)
}

func pyarrow(tb testing.TB, args ...string) ParquetRead {
	tb.Helper()
	py := Python(tb)
	script := filepath.Join(tb.TempDir(), "pyarrow_uuids.py")
	if err := os.WriteFile(script, pyarrowUUIDs, 0o644); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.CommandContext(tb.Context(), py, append([]string{script}, args...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("pyarrow_uuids.py %v: %v", args, err)
	}
	var r ParquetRead
	if err := json.Unmarshal(out, &r); err != nil {
		tb.Fatalf("pyarrow_uuids.py printed %.200q: %v", out, err)
	}
	return r
}
