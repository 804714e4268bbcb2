package sqlsink

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/schema"
)

const (
	editFunnel10 = "/analytics/edit_funnel/1.0.0"
	editFunnel11 = "/analytics/edit_funnel/1.1.0"
	testIP       = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

// makePlatformEvent builds an Event Platform event the way the processor
// emits it (meta.id, meta.dt and http filled, numbers as json.Number),
// with the event's own fields merged in from fields (a JSON object).
func makePlatformEvent(t testing.TB, uri, id, fields string) map[string]any {
	t.Helper()
	v, err := capsule.Decode([]byte(fmt.Sprintf(`{"$schema": %q, "dt": "2024-05-01T12:00:00.123Z",
		"meta": {"stream": "edit_funnel", "id": %q, "dt": "2024-05-01T12:00:01Z", "domain": "en.wikipedia.org"},
		"http": {"client_ip": %q, "request_headers": {"user-agent": "Mozilla/5.0 (☆ 彡)"}}}`, uri, id, testIP)))
	if err != nil {
		t.Fatal(err)
	}
	ev := v.(map[string]any)
	f, err := capsule.Decode([]byte(fields))
	if err != nil {
		t.Fatalf("fields %s: %v", fields, err)
	}
	for k, x := range f.(map[string]any) {
		ev[k] = x
	}
	return ev
}

// testPlatform writes Event Platform events (part of the conformance run,
// so dialect-neutral): table and columns from the $schema path and the
// whole-record schema, meta.id as the uuid (a redelivery is a duplicate),
// meta.dt as dt and timestamp, and precise poison reasons.
func testPlatform(t *testing.T, db *sql.DB, dl *dialect) {
	ctx := t.Context()
	w := newTestWriter(t, db, testResolver(t), Config{Dialect: dl.name})
	const table = "analytics_edit_funnel_1_0_0"
	if got := w.Table(schema.ID{Name: editFunnel10}); got != table {
		t.Fatalf("Table = %q", got)
	}
	const id0, id1 = "a3d5f9c2-6f0e-4c5e-9d6b-2b1f3c4d5e6f", "b3d5f9c2-6f0e-4c5e-9d6b-2b1f3c4d5e6f"
	batch := []map[string]any{
		0: makePlatformEvent(t, editFunnel10, id0, `{"action": "save_success", "editor": "visualeditor",
			"session_token": "0123456789abcdef", "page_id": 9007199254740993, "user_edit_count_bucket": "5-99"}`),
		1: makePlatformEvent(t, "https://schema.example.org"+editFunnel10+".yaml", id1,
			`{"action": "init", "editor": "wikitext", "session_token": "fedcba9876543210"}`),
		2: func() map[string]any {
			ev := makePlatformEvent(t, editFunnel10, "", `{"action": "init", "editor": "wikitext", "session_token": "0123456789"}`)
			delete(ev["meta"].(map[string]any), "id")
			return ev
		}(),
		3: func() map[string]any {
			ev := makePlatformEvent(t, editFunnel10, "c3d5f9c2", `{"action": "init", "editor": "wikitext", "session_token": "0123456789"}`)
			ev["meta"].(map[string]any)["dt"] = "yesterday"
			return ev
		}(),
		4: makePlatformEvent(t, editFunnel10, "d3d5f9c2", `{"action": "init", "editor": "wikitext", "session_token": "0123456789", "page_id": "42"}`),
		5: makePlatformEvent(t, "/analytics/no_such_schema/1.0.0", "e3d5f9c2", `{}`),
		6: makePlatformEvent(t, editFunnel10, "f3d5f9c2", `{"meta": "not an object"}`),
	}
	// An undeclared member of the open meta object goes to the
	// event_meta column.
	batch[0]["meta"].(map[string]any)["request_id"] = "r-1"
	res, err := w.Write(ctx, batch)
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	checkResult(t, "platform", res, 2, 0, []int{2, 3, 4, 5, 6})
	reasons := map[int]string{}
	for _, p := range res.Poison {
		reasons[p.Index] = p.Reason
	}
	for i, want := range map[int]string{
		2: "/meta/id: required: rows are deduplicated on the uuid",
		3: `/meta/dt: "yesterday" is not an RFC 3339 date-time`,
		4: "/page_id: got string, want integer",
		5: "schema not found",
		6: "/meta: got string, want object",
	} {
		if !strings.Contains(reasons[i], want) {
			t.Errorf("poison %d: reason %q, want it to contain %q", i, reasons[i], want)
		}
	}
	checkCounts(t, db, dl, map[string]int{table: 2})
	checkRow(t, db, dl, table, id0, map[string]any{
		// Capsule columns: from meta, the rest NULL.
		"uuid": id0, "dt": "2024-05-01T12:00:01Z", "timestamp": "20240501120001", "schema": editFunnel10,
		"revision": nil, "topic": nil, "wiki": nil, "webHost": nil, "recvFrom": nil, "seqId": nil,
		"userAgent": nil, "clientIp": nil,
		// The whole record, flattened.
		"event_$schema": editFunnel10, "event_dt": "2024-05-01T12:00:00.123Z",
		"event_meta_id": id0, "event_meta_dt": "2024-05-01T12:00:01Z", "event_meta_stream": "edit_funnel",
		"event_meta_domain": "en.wikipedia.org", "event_meta": `{"request_id":"r-1"}`,
		"event_http_client_ip": testIP, "event_http_request_headers": `{"user-agent":"Mozilla/5.0 (☆ 彡)"}`, "event_http": nil,
		"event_action": "save_success", "event_editor": "visualeditor", "event_session_token": "0123456789abcdef",
		"event_page_id": int64(9007199254740993), "event_user_edit_count_bucket": "5-99",
	})
	// A full URL names the same schema: same table, canonical path.
	checkRow(t, db, dl, table, id1, map[string]any{
		"schema": editFunnel10, "event_$schema": "https://schema.example.org" + editFunnel10 + ".yaml",
		"event_action": "init", "event_page_id": nil, "event_meta": nil,
	})

	// Redelivered (even with another receive time): one row.
	again := makePlatformEvent(t, editFunnel10, id0, `{"action": "abort", "editor": "visualeditor", "session_token": "0123456789abcdef"}`)
	again["meta"].(map[string]any)["dt"] = "2024-05-01T13:00:00Z"
	for round := range 2 {
		res, err = w.Write(ctx, []map[string]any{batch[0], again})
		if err != nil {
			t.Fatal(err)
		}
		checkResult(t, fmt.Sprintf("platform redelivered, round %d", round), res, 0, 2, nil)
	}
	checkCounts(t, db, dl, map[string]int{table: 2})
	checkRow(t, db, dl, table, id0, map[string]any{"event_action": "save_success", "dt": "2024-05-01T12:00:01Z"})

	// Legacy capsules and Event Platform events in one batch.
	res, err = w.Write(ctx, []map[string]any{
		makeCapsule(t, "Nested", 1, 600, `{"value": "legacy"}`),
		makePlatformEvent(t, editFunnel10, "0a000000-0000-4000-8000-000000000600", `{"action": "ready", "editor": "wikitext", "session_token": "0123456789"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, "mixed batch", res, 2, 0, nil)
	checkCounts(t, db, dl, map[string]int{table: 3, "Nested_1": 3})
}

// testPlatformPerSchema writes two versions of an Event Platform schema to
// one table: the lower version creates it, the higher adds its column.
func testPlatformPerSchema(t *testing.T, db *sql.DB, dl *dialect) {
	ctx := t.Context()
	w := newTestWriter(t, db, testResolver(t), Config{Dialect: dl.name, TablePerSchema: true})
	const table = "analytics_edit_funnel"
	for _, uri := range []string{editFunnel10, editFunnel11} {
		if got := w.Table(schema.ID{Name: uri}); got != table {
			t.Fatalf("Table(%s) = %q", uri, got)
		}
	}
	const id0, id1 = "1a000000-0000-4000-8000-000000000001", "1a000000-0000-4000-8000-000000000002"
	batch := []map[string]any{
		makePlatformEvent(t, editFunnel11, id1, `{"action": "save_success", "editor": "wikitext", "session_token": "0123456789", "edit_duration_ms": 1500}`),
		makePlatformEvent(t, editFunnel10, id0, `{"action": "init", "editor": "wikitext", "session_token": "0123456789"}`),
	}
	res, err := w.Write(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, "platform per schema", res, 2, 0, nil)
	checkRow(t, db, dl, table, id0, map[string]any{"schema": editFunnel10, "event_action": "init", "event_edit_duration_ms": nil})
	checkRow(t, db, dl, table, id1, map[string]any{"schema": editFunnel11, "event_action": "save_success", "event_edit_duration_ms": int64(1500)})

	// A restarted sink finds the table as it is.
	w2 := newTestWriter(t, db, testResolver(t), Config{Dialect: dl.name, TablePerSchema: true})
	res, err = w2.Write(ctx, []map[string]any{
		batch[1],
		makePlatformEvent(t, editFunnel11, "1a000000-0000-4000-8000-000000000003", `{"action": "abort", "editor": "wikitext", "session_token": "0123456789", "edit_duration_ms": 7}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, "platform per schema, restarted", res, 1, 1, nil)
	checkCounts(t, db, dl, map[string]int{table: 3})
}

func TestPlatformLayout(t *testing.T) {
	s, err := testResolver(t).ResolveURI(t.Context(), editFunnel10)
	if err != nil {
		t.Fatal(err)
	}
	l := buildLayout(s, false)
	if l.table != "analytics_edit_funnel_1_0_0" || !l.platform || !slices.Equal(l.version, []int64{1, 0, 0}) {
		t.Errorf("table %q, platform %v, version %v", l.table, l.platform, l.version)
	}
	want := []string{
		"event_$schema string", "event_action string", "event_dt string", "event_editor string",
		"event_http json", "event_http_client_ip string", "event_http_request_headers json",
		"event_meta json", "event_meta_domain string", "event_meta_dt string", "event_meta_id string", "event_meta_stream string",
		"event_page_id int", "event_session_token string", "event_user_edit_count_bucket string",
	}
	if got := eventColumns(l); !slices.Equal(got, want) {
		t.Errorf("columns\n got %q\nwant %q", got, want)
	}
	for _, c := range l.columns[:l.capsuleCols] {
		if i := slices.IndexFunc(capsuleColumns, func(x column) bool { return x.name == c.name }); i < 0 {
			t.Errorf("capsule column %q", c.name)
		}
	}
}

func TestPlatformTable(t *testing.T) {
	long := "/" + strings.Repeat("segment/", 10) + "1.0.0"
	for _, tc := range []struct {
		path          string
		table, schema string // "" for an error
	}{
		{"/analytics/button_click/1.0.0", "analytics_button_click_1_0_0", "analytics_button_click"},
		{"/analytics/edit_funnel/1.1.0", "analytics_edit_funnel_1_1_0", "analytics_edit_funnel"},
		{"/mediawiki.page-change/12", "mediawiki_page-change_12", "mediawiki_page-change"},
		{long, shorten(strings.Repeat("segment_", 10) + "1_0_0"), shorten(strings.TrimSuffix(strings.Repeat("segment_", 10), "_"))},
		{"/analytics/button_click/latest", "", ""},
		{"/analytics/button_click/1..0", "", ""},
		{"/1.0.0", "", ""},
	} {
		for _, per := range []bool{false, true} {
			want := tc.table
			if per {
				want = tc.schema
			}
			got, err := platformTable(tc.path, per)
			if (err != nil) != (want == "") || got != want {
				t.Errorf("platformTable(%q, %v) = %q, %v; want %q", tc.path, per, got, err, want)
			}
			if len(got) > maxIdent {
				t.Errorf("table %q longer than %d", got, maxIdent)
			}
			if tn := tableName(schema.ID{Name: tc.path}, per); tn != want {
				t.Errorf("tableName(%q, %v) = %q, want %q", tc.path, per, tn, want)
			}
		}
	}
}

// countingSchemas records the ResolveURI lookups.
type countingSchemas struct {
	Schemas
	mu   sync.Mutex
	uris []string
}

func (c *countingSchemas) ResolveURI(ctx context.Context, uri string) (*schema.Schema, error) {
	c.mu.Lock()
	c.uris = append(c.uris, uri)
	c.mu.Unlock()
	return c.Schemas.ResolveURI(ctx, uri)
}

// TestPlatformHostileSchema: a $schema that cannot name a table is poison
// before any lookup or SQL.
func TestPlatformHostileSchema(t *testing.T) {
	db := openSQLite(t)
	sch := &countingSchemas{Schemas: testResolver(t)}
	w := newTestWriter(t, db, sch, Config{Dialect: SQLite})
	hostile := map[string]string{
		`/a;b/"x/1.0.0`:                   "not a schema path",
		"../../x/1.0.0":                   "dot segments",
		"/analytics/../../etc/passwd/1.0": "dot segments",
		"/a/b/1.0.0; DROP TABLE x; --":    "not a schema path",
		"/a/b/`x`/1.0.0":                  "not a schema path",
		"/analytics/button_click/latest":  "not a version",
		"/1.0.0":                          "want a schema path and a version",
		"":                                "not a schema path",
	}
	var batch []map[string]any
	var wants []string
	for uri, want := range hostile {
		batch = append(batch, makePlatformEvent(t, uri, "00000000-0000-4000-8000-00000000000"+fmt.Sprint(len(batch)), `{}`))
		wants = append(wants, want)
	}
	batch = append(batch, map[string]any{"$schema": 5, "meta": map[string]any{"id": "x", "dt": "2024-05-01T12:00:01Z"}})
	wants = append(wants, "/$schema: got number, want string")
	res, err := w.Write(t.Context(), batch)
	if err != nil {
		t.Fatal(err)
	}
	all := make([]int, len(batch))
	for i := range all {
		all[i] = i
	}
	checkResult(t, "hostile $schema", res, 0, 0, all)
	for _, p := range res.Poison {
		if !strings.HasPrefix(p.Reason, "/$schema: ") || !strings.Contains(p.Reason, wants[p.Index]) {
			t.Errorf("poison %d ($schema %q): reason %q, want /$schema: …%s", p.Index, batch[p.Index]["$schema"], p.Reason, wants[p.Index])
		}
	}
	if len(sch.uris) != 0 {
		t.Errorf("looked up %q", sch.uris)
	}
	var n int
	if err := db.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM sqlite_master").Scan(&n); err != nil || n != 0 {
		t.Errorf("%d database objects (%v), want none", n, err)
	}
}

// docSchemas compiles the same document for every $schema path.
type docSchemas struct{ doc map[string]any }

func (docSchemas) Resolve(context.Context, schema.ID) (*schema.Schema, error) {
	return nil, schema.ErrNotFound
}

func (d docSchemas) ResolveURI(_ context.Context, uri string) (*schema.Schema, error) {
	return schema.Compile(schema.ID{Name: uri}, d.doc)
}

// TestPlatformTableCollision: two $schema paths that join to one table
// name are not mixed in it; the second is poison.
func TestPlatformTableCollision(t *testing.T) {
	doc, err := schema.ParseDocument([]byte(`{"type": "object", "properties": {"n": {"type": "integer"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, per := range []bool{false, true} {
		db := openSQLite(t)
		w := newTestWriter(t, db, docSchemas{doc}, Config{Dialect: SQLite, TablePerSchema: per})
		res, err := w.Write(t.Context(), []map[string]any{
			makePlatformEvent(t, "/a_b/c/1.0.0", "id-1", `{"n": 1}`),
			makePlatformEvent(t, "/a/b_c/1.0.0", "id-2", `{"n": 2}`),
			makePlatformEvent(t, "/a_b/c/2.0.0", "id-3", `{"n": 3}`),
		})
		if err != nil {
			t.Fatal(err)
		}
		if per {
			checkResult(t, "collision per schema", res, 2, 0, []int{1})
		} else {
			checkResult(t, "collision", res, 2, 0, []int{1})
		}
		if len(res.Poison) == 1 && !strings.Contains(res.Poison[0].Reason, "would share table a_b_c") {
			t.Errorf("reason %q", res.Poison[0].Reason)
		}
		_ = w.Close()
	}
}
