package sqlsink

import (
	"context"
	"database/sql"
	"encoding/binary"
	"reflect"
	"strings"
	"testing"

	"github.com/eventlogging/eventlogging/internal/avrowire"
	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// editFunnelAvro is the Avro schema of analytics/edit_funnel 1.0.0 (every
// property; _schema carries $schema).
const editFunnelAvro = testsupport.EditFunnelAvro

// newAvroCodec registers schema under subject in an in-process registry
// and returns a codec on it.
func newAvroCodec(t *testing.T, subjects map[string]string) *avrowire.Codec {
	t.Helper()
	c, err := avrowire.New(testsupport.AvroRegistry(t, subjects), 0)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// writeValues decodes record values with w.Decode and writes them.
func writeValues(t *testing.T, w *Writer, values [][]byte) Result {
	t.Helper()
	rows := make([]map[string]any, len(values))
	for i, v := range values {
		row, reason, err := w.Decode(t.Context(), v)
		if err != nil || reason != "" {
			t.Fatalf("Decode record %d: %q, %v", i, reason, err)
		}
		rows[i] = row
	}
	res, err := w.Write(t.Context(), rows)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// tableRows reads every row of table, ordered by uuid, with the column
// names.
func tableRows(t *testing.T, db *sql.DB, table string) ([]string, [][]any) {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), `SELECT * FROM "`+table+`" ORDER BY uuid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return cols, out
}

// TestAvroRowsEqualJSON: the same Event Platform events, from a JSON
// stream and from an Avro stream (as the processor encodes them), are the
// same rows: same table, columns and values (integers beyond 2^53 exact,
// meta.dt as dt, $schema from _schema, missing optional fields NULL).
func TestAvroRowsEqualJSON(t *testing.T) {
	codec := newAvroCodec(t, map[string]string{"edits-value": editFunnelAvro})
	events := []map[string]any{
		makePlatformEvent(t, editFunnel10, "a3d5f9c2-6f0e-4c5e-9d6b-2b1f3c4d5e6f", `{"action": "save_success", "editor": "visualeditor",
			"session_token": "0123456789abcdef", "page_id": 9007199254740993, "user_edit_count_bucket": "5-99"}`),
		makePlatformEvent(t, "https://schema.example.org"+editFunnel10+".yaml", "b3d5f9c2-6f0e-4c5e-9d6b-2b1f3c4d5e6f",
			`{"action": "init", "editor": "wikitext", "session_token": "fedcba9876543210"}`),
		func() map[string]any {
			ev := makePlatformEvent(t, editFunnel10, "c3d5f9c2-6f0e-4c5e-9d6b-2b1f3c4d5e6f", `{"action": "abort", "editor": "wikitext", "session_token": "0123456789", "page_id": 0}`)
			delete(ev, "http")
			delete(ev, "dt")
			delete(ev["meta"].(map[string]any), "domain")
			return ev
		}(),
	}
	var jsonValues, avroValues [][]byte
	for _, ev := range events {
		jsonValues = append(jsonValues, capsule.AppendValue(nil, ev))
		b, err := codec.Encode(t.Context(), "edits-value", ev)
		if err != nil {
			t.Fatal(err)
		}
		if !avrowire.IsWire(b) {
			t.Fatalf("not Avro: %q", b)
		}
		avroValues = append(avroValues, b)
	}
	const table = "analytics_edit_funnel_1_0_0"
	read := func(values [][]byte) ([]string, [][]any) {
		db := openSQLite(t)
		w := newTestWriter(t, db, testResolver(t), Config{Dialect: SQLite, Avro: codec})
		checkResult(t, "write", writeValues(t, w, values), len(values), 0, nil)
		return tableRows(t, db, table)
	}
	jsonCols, jsonRows := read(jsonValues)
	avroCols, avroRows := read(avroValues)
	if !reflect.DeepEqual(jsonCols, avroCols) {
		t.Fatalf("columns differ:\nJSON %v\nAvro %v", jsonCols, avroCols)
	}
	if len(avroRows) != len(events) {
		t.Fatalf("%d Avro rows, want %d", len(avroRows), len(events))
	}
	for i := range jsonRows {
		for j, col := range jsonCols {
			if !reflect.DeepEqual(jsonRows[i][j], avroRows[i][j]) {
				t.Errorf("row %d column %s: JSON %#v, Avro %#v", i, col, jsonRows[i][j], avroRows[i][j])
			}
		}
	}
	// And the values are the events', not merely equal to each other.
	db := openSQLite(t)
	w := newTestWriter(t, db, testResolver(t), Config{Dialect: SQLite, Avro: codec})
	writeValues(t, w, avroValues)
	dl, _ := newDialect(SQLite)
	checkRow(t, db, dl, table, "a3d5f9c2-6f0e-4c5e-9d6b-2b1f3c4d5e6f", map[string]any{
		"uuid": "a3d5f9c2-6f0e-4c5e-9d6b-2b1f3c4d5e6f", "dt": "2024-05-01T12:00:01Z", "schema": editFunnel10,
		"event_$schema": editFunnel10, "event_dt": "2024-05-01T12:00:00.123Z", "event_meta_stream": "edit_funnel",
		"event_meta_domain": "en.wikipedia.org", "event_http_client_ip": testIP, "event_user_edit_count_bucket": "5-99",
		"event_page_id": int64(9007199254740993), "event_http_request_headers": `{"user-agent":"Mozilla/5.0 (☆ 彡)"}`,
	})
	checkRow(t, db, dl, table, "c3d5f9c2-6f0e-4c5e-9d6b-2b1f3c4d5e6f", map[string]any{
		"event_page_id": int64(0), "event_dt": nil, "event_http_client_ip": nil, "event_meta_domain": nil,
	})
}

// TestAvroPoison: Avro records that can never be decoded are poison with
// the reason; a registry that cannot be asked is a transient error.
func TestAvroPoison(t *testing.T) {
	noSchemaField := strings.Replace(editFunnelAvro, `{"name":"_schema","type":"string"},`, "", 1)
	codec := newAvroCodec(t, map[string]string{"edits-value": editFunnelAvro, "plain-value": noSchemaField})
	ev := makePlatformEvent(t, editFunnel10, "a3d5f9c2-6f0e-4c5e-9d6b-2b1f3c4d5e6f", `{"action": "init", "editor": "wikitext", "session_token": "0123456789"}`)
	good, err := codec.Encode(t.Context(), "edits-value", ev)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := codec.Encode(t.Context(), "plain-value", ev)
	if err != nil {
		t.Fatal(err)
	}
	w := newTestWriter(t, openSQLite(t), testResolver(t), Config{Dialect: SQLite, Avro: codec})
	unknownID := binary.BigEndian.AppendUint32([]byte{0}, 99)
	for name, tc := range map[string]struct {
		value []byte
		want  string
	}{
		"unknown schema id": {append(unknownID, good[5:]...), "schema id 99"},
		"truncated":         {good[:len(good)-4], "avro decode with schema id"},
		"short header":      {[]byte{0, 0, 1}, "not the wire format"},
		"no _schema field":  {plain, "no _schema field"},
		"not JSON":          {[]byte("{not json"), "not a JSON object"},
	} {
		row, reason, err := w.Decode(t.Context(), tc.value)
		if err != nil || row != nil || !strings.Contains(reason, tc.want) {
			t.Errorf("%s: Decode = %v, %q, %v; want poison mentioning %q", name, row, reason, err, tc.want)
		}
	}

	// No decoder configured: poison, saying why.
	w2 := newTestWriter(t, openSQLite(t), testResolver(t), Config{Dialect: SQLite})
	if _, reason, err := w2.Decode(t.Context(), good); err != nil || !strings.Contains(reason, "no schema registry") {
		t.Errorf("no decoder: reason %q, err %v", reason, err)
	}

	// The registry is down: transient, not poison.
	down, err := avrowire.New(testsupport.UnreachableURL(), 0)
	if err != nil {
		t.Fatal(err)
	}
	w3 := newTestWriter(t, openSQLite(t), testResolver(t), Config{Dialect: SQLite, Avro: down})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if row, reason, err := w3.Decode(ctx, good); err == nil || reason != "" || row != nil {
		t.Errorf("registry down: Decode = %v, %q, %v; want a transient error", row, reason, err)
	}
}
