package e2e

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventlogging/eventlogging/internal/avrowire"
	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// funnelAvroSinkAvsc is the Avro schema of the Avro stream of
// TestAvroStreamSinks: analytics/edit_funnel 1.0.0 with _schema for
// $schema, but without user_edit_count_bucket, which the encoding drops.
const funnelAvroSinkAvsc = testsupport.EditFunnelAvroNoBucket

// TestAvroStreamSinks runs standalone with the default sinks (SQLite and
// Parquet, sink.topics ^eventlogging_.+) and two streams of the same
// schema, one JSON and one Avro: the same events sent to both land as the
// same rows in SQLite and Parquet (values compared, integers beyond 2^53
// exact), with what was sent; nothing reaches the sink-error topic; and
// the field the Avro schema lacks is counted by
// eventlogging_process_avro_dropped_fields_total and logged.
func TestAvroStreamSinks(t *testing.T) {
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	const (
		avroTopic = "eventlogging_avro_funnel"
		jsonTopic = "eventlogging_json_funnel"
	)
	streams := filepath.Join(dir, "streams.yaml")
	if err := os.WriteFile(streams, []byte(`streams:
  - name: analytics.edit_funnel_avro
    schema_title: analytics/edit_funnel
    topic: `+avroTopic+`
    format: avro
  - name: analytics.edit_funnel_json
    schema_title: analytics/edit_funnel
    topic: `+jsonTopic+`
`), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, kafkaAddr := freeAddr(t), freeAddr(t)
	base := "http://" + addr
	sa := startService(t, "standalone", []string{
		"EVENTLOGGING_SINK_BATCH_TIME=200ms",
		"EVENTLOGGING_SINK_FILE_MAX_AGE=2s",
	}, "standalone", "--data-dir", dataDir, "--listen", addr, "--kafka-listen", kafkaAddr,
		"--schemas", "../../examples/schemas", "--streams", streams)
	waitReady(t, base)

	// The Avro schema of the stream's subject (<topic>-value), before any
	// event: the processor caches the subject's latest schema.
	body, _ := json.Marshal(map[string]string{"schema": funnelAvroSinkAvsc, "schemaType": "AVRO"})
	if status, b := httpPost(t, base+"/registry/subjects/"+avroTopic+"-value/versions", string(body)); status != http.StatusOK {
		t.Fatalf("register the Avro schema: %d %s", status, b)
	}

	type sent struct {
		token, action, editor, dt, bucket string
		pageID                            any // int64, or nil when not sent
	}
	events := []sent{
		{token: "session-0001", action: "init", editor: "wikitext", pageID: int64(9007199254740993)},
		{token: "session-0002", action: "save_success", editor: "visualeditor", dt: "2026-01-01T10:00:00.250Z", pageID: int64(0)},
		{token: "session-0003", action: "abort", editor: "wikitext", bucket: "5-99"}, // bucket: not in the Avro schema
	}
	var batch []string
	for _, kind := range []string{"avro", "json"} {
		for _, e := range events {
			ev := map[string]any{
				"$schema": "/analytics/edit_funnel/1.0.0", "meta": map[string]any{"stream": "analytics.edit_funnel_" + kind, "domain": "en.wikipedia.org"},
				"action": e.action, "editor": e.editor, "session_token": kind + "-" + e.token,
			}
			if e.pageID != nil {
				ev["page_id"] = e.pageID
			}
			if e.dt != "" {
				ev["dt"] = e.dt
			}
			if e.bucket != "" {
				ev["user_edit_count_bucket"] = e.bucket
			}
			b, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			batch = append(batch, string(b))
		}
	}
	if status, b := httpPost(t, base+"/v1/events", "["+strings.Join(batch, ",")+"]"); status != http.StatusCreated {
		t.Fatalf("POST /v1/events: %d %s", status, b)
	}

	// The Avro stream's topic holds Avro records.
	brokers := []string{kafkaAddr}
	seen := 0
	consumeUntil(t, brokers, avroTopic, func(r *kgo.Record) bool {
		if !avrowire.IsWire(r.Value) {
			t.Fatalf("%s holds a record that is not Avro: %q", avroTopic, r.Value)
		}
		seen++
		return seen == len(events)
	})

	// SQLite: one table (from $schema) for both streams.
	db := openSQLite(t, filepath.Join(dataDir, "events.db"))
	const table = "analytics_edit_funnel_1_0_0"
	sqlRows := map[string]map[string]any{} // session token -> column -> value
	waitFor(t, 90*time.Second, "both streams' rows in SQLite", func() bool {
		rows, err := sqlRowsBy(t, db, table, "event_session_token")
		if err != nil {
			return false
		}
		sqlRows = rows
		return len(rows) == 2*len(events)
	})
	// What differs between the streams: the row's identity, the stream, the
	// receive time, and what the Avro encoding dropped.
	perEvent := map[string]bool{"id": true, "uuid": true, "dt": true, "timestamp": true, "event_meta_id": true, "event_meta_dt": true,
		"event_meta_stream": true, "event_session_token": true}
	for _, e := range events {
		a, j := sqlRows["avro-"+e.token], sqlRows["json-"+e.token]
		for col, jv := range j {
			if perEvent[col] {
				continue
			}
			if col == "event_user_edit_count_bucket" && e.bucket != "" {
				if a[col] != nil {
					t.Errorf("%s: Avro row has %s = %v, a field its Avro schema lacks", e.token, col, a[col])
				}
				continue
			}
			if !reflect.DeepEqual(a[col], jv) {
				t.Errorf("%s: column %s: Avro %#v, JSON %#v", e.token, col, a[col], jv)
			}
		}
		// And the values are what was sent.
		var dt any
		if e.dt != "" {
			dt = e.dt
		}
		var bucket any
		if e.bucket != "" {
			bucket = e.bucket
		}
		for kind, row := range map[string]map[string]any{"avro": a, "json": j} {
			want := map[string]any{
				"event_action": e.action, "event_editor": e.editor, "event_session_token": kind + "-" + e.token,
				"event_page_id": e.pageID, "event_dt": dt, "event_$schema": "/analytics/edit_funnel/1.0.0",
				"schema": "/analytics/edit_funnel/1.0.0", "event_meta_stream": "analytics.edit_funnel_" + kind,
				"event_meta_domain": "en.wikipedia.org", "event_user_edit_count_bucket": bucket,
			}
			if kind == "avro" {
				want["event_user_edit_count_bucket"] = nil
			}
			for col, w := range want {
				if !reflect.DeepEqual(row[col], w) {
					t.Errorf("%s %s: %s = %#v, want %#v", kind, e.token, col, row[col], w)
				}
			}
			if row["uuid"] != row["event_meta_id"] || row["uuid"] == nil || row["dt"] != row["event_meta_dt"] || row["dt"] == nil {
				t.Errorf("%s %s: uuid %v / meta.id %v, dt %v / meta.dt %v", kind, e.token, row["uuid"], row["event_meta_id"], row["dt"], row["event_meta_dt"])
			}
		}
	}

	// Both sinks have written and committed every record (the rows
	// counter leaves poison out) ...
	var metrics string
	waitFor(t, 90*time.Second, "both sinks' rows counted", func() bool {
		_, metrics = request(t, http.MethodGet, base+"/metrics", "", nil)
		for _, sink := range []string{"sql", "files"} {
			for _, topic := range []string{avroTopic, jsonTopic} {
				if !strings.Contains(metrics, fmt.Sprintf(`eventlogging_sink_rows_total{sink=%q,topic=%q} %d`, sink, topic, len(events))) {
					return false
				}
			}
		}
		return true
	})
	// ... and nothing was poison: no record in the sink-error topic, none
	// counted.
	if n := countRecords(t, brokers, "eventlogging_SinkError"); n != 0 {
		t.Errorf("eventlogging_SinkError holds %d records", n)
	}
	if m := regexp.MustCompile(`(?m)^eventlogging_sink_errors_total\{.*\} [1-9].*$`).FindString(metrics); m != "" {
		t.Errorf("sink errors counted: %s", m)
	}
	// The dropped field: counted once (the one event that had it), and
	// named in the log.
	if want := `eventlogging_process_avro_dropped_fields_total{stream="analytics.edit_funnel_avro"} 1`; !strings.Contains(metrics, want) {
		t.Errorf("/metrics lacks %s:\n%s", want, avroGrepLines(metrics, "avro_dropped"))
	}
	if strings.Contains(metrics, `avro_dropped_fields_total{stream="analytics.edit_funnel_json"}`) {
		t.Error("the JSON stream counted dropped Avro fields")
	}
	waitLog(t, sa, "/user_edit_count_bucket", 10*time.Second)

	// A clean stop publishes the open Parquet files.
	sa.stop(t)

	// Parquet: the same, under each stream's topic.
	pq := avroParquetRows(t, filepath.Join(dataDir, "files"))
	if len(pq) != 2*len(events) {
		t.Fatalf("%d rows in Parquet, want %d: %v", len(pq), 2*len(events), pq)
	}
	for _, e := range events {
		a, j := pq["avro-"+e.token], pq["json-"+e.token]
		am, _ := a["meta"].(map[string]any)
		jm, _ := j["meta"].(map[string]any)
		if am["stream"] != "analytics.edit_funnel_avro" || jm["stream"] != "analytics.edit_funnel_json" || am["id"] == jm["id"] ||
			am["dt"] == nil || am["domain"] != "en.wikipedia.org" {
			t.Errorf("%s: Parquet meta: Avro %v, JSON %v", e.token, am, jm)
		}
		for col, jv := range j {
			switch {
			case col == "meta" || col == "session_token":
			case col == "user_edit_count_bucket" && e.bucket != "":
				if jv != e.bucket || a[col] != nil {
					t.Errorf("%s: Parquet %s: Avro %#v, JSON %#v", e.token, col, a[col], jv)
				}
			case !reflect.DeepEqual(a[col], jv):
				t.Errorf("%s: Parquet %s: Avro %#v, JSON %#v", e.token, col, a[col], jv)
			}
		}
		if a["action"] != e.action || a["editor"] != e.editor || a["$schema"] != "/analytics/edit_funnel/1.0.0" {
			t.Errorf("%s: Parquet Avro row %v", e.token, a)
		}
		if want := e.pageID; want != nil && a["page_id"] != want {
			t.Errorf("%s: Parquet page_id %#v, want %#v", e.token, a["page_id"], want)
		}
	}
	if dir := filepath.Join(dataDir, "files", avroTopic); !avroHasParquet(t, dir) {
		t.Errorf("no Parquet files under %s", dir)
	}
}

// sqlRowsBy reads every row of table, by the value of its column key, as
// column -> value (strings for text).
func sqlRowsBy(t *testing.T, db *sql.DB, table, key string) (map[string]map[string]any, error) {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), `SELECT * FROM "`+table+`"`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]any{}
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := map[string]any{}
		for i, c := range cols {
			if b, ok := vals[i].([]byte); ok {
				vals[i] = string(b)
			}
			row[c] = vals[i]
		}
		out[fmt.Sprint(row[key])] = row
	}
	return out, rows.Err()
}

// avroParquetRows reads every row of the Parquet files under dir, by
// session_token.
func avroParquetRows(t *testing.T, dir string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, row := range parquetRows(t, dir) {
		tok, _ := row["session_token"].(string)
		out[tok] = row
	}
	return out
}

func avroHasParquet(t *testing.T, dir string) bool {
	t.Helper()
	found := false
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(d.Name(), ".parquet") {
			found = true
		}
		return nil
	})
	return found
}

func avroGrepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
