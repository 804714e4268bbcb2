package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/testsupport"

	"github.com/parquet-go/parquet-go"
)

// eventGateResponse is the part of a POST /v1/events answer the test reads.
type eventGateResponse struct {
	Events []struct {
		Status string `json:"status"`
		UUID   string `json:"uuid"`
		Errors []struct {
			Pointer string `json:"pointer"`
		} `json:"errors"`
	} `json:"events"`
}

// TestEventGateClients points standalone at EventGate's own test event and
// schema, as the peer benchmark ships them (testdata/eventgate: the schema
// in the Event Platform repository layout, an extensionless file named by
// its version, unchanged): the valid event is accepted (201) with the
// client's meta.id kept, the invalid one refused (400) with its five
// violations; an event without meta.id gets a hyphenated RFC 4122 id; a
// client's retry of the same event is stored once in SQL (unique on the
// meta.id); every record is in Parquet exactly once. A legacy beacon carrying the old client's
// clientValidated and isTruncated flags is stored without them.
func TestEventGateClients(t *testing.T) {
	valid, err := os.ReadFile("testdata/eventgate/event-valid.json")
	if err != nil {
		t.Fatal(err)
	}
	invalid, err := os.ReadFile("testdata/eventgate/event-invalid.json")
	if err != nil {
		t.Fatal(err)
	}
	// The legacy schemas beside EventGate's, for the beacon.
	schemas := filepath.Join(t.TempDir(), "schemas")
	if err := os.CopyFS(schemas, os.DirFS("testdata/eventgate/schemas")); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(schemas, "Generic"), os.DirFS("../../examples/schemas/Generic")); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(t.TempDir(), "data")
	sa, base := startStandalone(t, nil, dataDir, "--schemas", schemas, "--streams", "testdata/eventgate/streams.yaml")

	post := func(body string, wantStatus int) eventGateResponse {
		t.Helper()
		code, answer := postSync(t, base, body)
		if code != wantStatus {
			t.Fatalf("POST %s: %d %s, want %d", body, code, answer, wantStatus)
		}
		var r eventGateResponse
		if err := json.Unmarshal([]byte(answer), &r); err != nil || len(r.Events) != 1 {
			t.Fatalf("answer %s: %v", answer, err)
		}
		return r
	}
	const clientID = "5f0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b"
	if r := post(string(valid), 201); r.Events[0].UUID != clientID {
		t.Errorf("valid event: uuid %q, want the client's meta.id %s", r.Events[0].UUID, clientID)
	}
	post(string(valid), 201) // the client retries: the same meta.id, stored once
	r := post(string(invalid), 400)
	var pointers []string
	for _, e := range r.Events[0].Errors {
		pointers = append(pointers, e.Pointer)
	}
	if len(pointers) != 5 {
		t.Errorf("invalid event: %d violations %v, want EventGate's five", len(pointers), pointers)
	}
	var ev map[string]any
	if err := json.Unmarshal(valid, &ev); err != nil {
		t.Fatal(err)
	}
	delete(ev["meta"].(map[string]any), "id")
	ev["user_name"] = "Generated Id"
	noID, _ := json.Marshal(ev)
	generated := post(string(noID), 201).Events[0].UUID
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(generated) {
		t.Errorf("generated meta.id %q is not a hyphenated RFC 4122 uuid", generated)
	}

	// A legacy beacon with the 2013-2016 client's flags.
	beacon := `{"schema":"Generic","revision":13,"clientValidated":true,"isTruncated":false,"wiki":"testwiki","webHost":"flags.example","event":{"articleId":7,"articleTitle":"Flags"}}`
	resp, _, err := get(t.Context(), beaconURL(base, beacon))
	if err != nil || resp != 204 {
		t.Fatalf("beacon: %d %v", resp, err)
	}

	db := openSQLite(t, filepath.Join(dataDir, "events.db"))
	countRows(t, db, 1, `SELECT count(*) FROM "test_event_1_0_0" WHERE uuid = ?`, clientID)
	countRows(t, db, 1, `SELECT count(*) FROM "test_event_1_0_0" WHERE uuid = ?`, generated)
	countRows(t, db, 2, `SELECT count(*) FROM "test_event_1_0_0"`)
	countRows(t, db, 1, `SELECT count(*) FROM "Generic_13" WHERE webHost = ?`, "flags.example")
	cols, err := tableColumns(t.Context(), db, "Generic_13")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cols {
		if strings.Contains(strings.ToLower(c), "clientvalidated") || strings.Contains(strings.ToLower(c), "istruncated") {
			t.Errorf("the legacy flags were stored: column %s", c)
		}
	}

	// A clean stop publishes the Parquet files.
	sa.stop(t)
	ids := map[string]int{}
	for _, row := range parquetRows(t, filepath.Join(dataDir, "files", "test.event")) {
		meta, _ := row["meta"].(map[string]any)
		id, _ := meta["id"].(string)
		ids[id]++
	}
	// The client's retry is a record of its own with the same uuid, the
	// key of both, so in the same partition: the file sink drops it
	// (sink.dedupe_window), as SQL, unique on the uuid, does.
	if ids[clientID] != 1 || ids[generated] != 1 || len(ids) != 2 {
		t.Errorf("Parquet rows by meta.id: %v, want %s once (sent, then retried: the retry dropped) and %s once", ids, clientID, generated)
	}
}

// tableColumns lists the columns of a SQLite table.
func tableColumns(ctx context.Context, db *sql.DB, table string) ([]string, error) {
	rows, err := db.QueryContext(ctx, fmt.Sprintf(`SELECT name FROM pragma_table_info('%s')`, table))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// parquetRows reads every row of the Parquet files under dir; it waits up
// to a minute for the first file.
func parquetRows(t *testing.T, dir string) []map[string]any {
	t.Helper()
	var out []map[string]any
	deadline := time.Now().Add(time.Minute)
	for len(out) == 0 {
		err := testsupport.WalkParquet(dir, true, func(p string, pf *parquet.File) error {
			rows, err := testsupport.ParquetRows(pf)
			out = append(out, rows...)
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("no Parquet rows under %s", dir)
			}
			time.Sleep(500 * time.Millisecond) // polling for the published file
		}
	}
	return out
}
