package purge

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
)

// pqUser, pqEvent and pqCapsule have the shape of the Parquet files
// filesink writes for the Edit schema: the capsule's fields and the event
// as a group, every field optional.
type pqUser struct {
	ID   *int64  `parquet:"id,optional"`
	Name *string `parquet:"name,optional"`
}

type pqEvent struct {
	Action *string `parquet:"action,optional"`
	PageID *int64  `parquet:"pageId,optional"`
	Token  *string `parquet:"token,optional"`
	User   *pqUser `parquet:"user,optional"`
}

type pqCapsule struct {
	ClientIP  *string  `parquet:"clientIp,optional"`
	DT        *string  `parquet:"dt,optional"`
	Event     *pqEvent `parquet:"event,optional"`
	RecvFrom  *string  `parquet:"recvFrom,optional"`
	Revision  *int64   `parquet:"revision,optional"`
	Schema    *string  `parquet:"schema,optional"`
	SeqID     *int64   `parquet:"seqId,optional"`
	Timestamp *int64   `parquet:"timestamp,optional"`
	Topic     *string  `parquet:"topic,optional"`
	UserAgent *string  `parquet:"userAgent,optional"`
	UUID      *string  `parquet:"uuid,optional"`
	WebHost   *string  `parquet:"webHost,optional"`
	Wiki      *string  `parquet:"wiki,optional"`
}

func ptr[T any](v T) *T { return &v }

// toPQ converts a test capsule (makeCapsule) to its Parquet row.
func toPQ(t *testing.T, c map[string]any) pqCapsule {
	t.Helper()
	num := func(v any) *int64 {
		n, err := v.(interface{ Int64() (int64, error) }).Int64()
		if err != nil {
			t.Fatal(err)
		}
		return &n
	}
	str := func(v any) *string { return ptr(v.(string)) }
	out := pqCapsule{
		ClientIP: str(c["clientIp"]), DT: str(c["dt"]), RecvFrom: str(c["recvFrom"]),
		Revision: num(c["revision"]), Schema: str(c["schema"]), SeqID: num(c["seqId"]),
		Timestamp: num(c["timestamp"]), Topic: str(c["topic"]), UserAgent: str(c["userAgent"]),
		UUID: str(c["uuid"]), WebHost: str(c["webHost"]), Wiki: str(c["wiki"]),
	}
	ev := c["event"].(map[string]any)
	if ev["action"] != nil {
		u := ev["user"].(map[string]any)
		out.Event = &pqEvent{Action: str(ev["action"]), PageID: num(ev["pageId"]), Token: str(ev["token"]),
			User: &pqUser{ID: num(u["id"]), Name: str(u["name"])}}
	} else {
		out.Event = &pqEvent{}
	}
	return out
}

func writePQ(t *testing.T, path string, rows []pqCapsule) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[pqCapsule](f, parquet.KeyValueMetadata("eventlogging.schema", "Edit/1"))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func readPQ(t *testing.T, path string) ([]pqCapsule, *parquet.File) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	r := parquet.NewGenericReader[pqCapsule](f)
	defer r.Close()
	rows := make([]pqCapsule, r.NumRows())
	n, err := r.Read(rows)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return rows[:n], pf
}

const pqPolicyYAML = `
retention: 90d
salt_hex: ` + testSaltHex + `
schemas:
  Edit:
    keep: [wiki, event.action, event.user]
    hash: [event.token, clientIp, event.pageId]
`

// TestPurgeFilesParquet: an old partition's Parquet files are sanitised
// like JSON lines: kept and bookkeeping columns stay, hashed text columns
// hold the HMAC, hashed non-text columns and every other column are NULL,
// rows and files of schemas without a rule go.
func TestPurgeFilesParquet(t *testing.T) {
	root := t.TempDir()
	ctx := t.Context()
	oldEdit := []map[string]any{makeCapsule(t, testEvent{"Edit", 1, true}), makeCapsule(t, testEvent{"Edit", 2, true})}
	oldClick := makeCapsule(t, testEvent{"Click", 101, true})
	recent := makeCapsule(t, testEvent{"Edit", 5, false})
	oldDir := capsuleHour(t, root, "eventlogging_Edit", oldEdit[0])
	recentDir := capsuleHour(t, root, "eventlogging_Edit", recent)
	// A row of another schema in the Edit file is dropped too.
	writePQ(t, filepath.Join(oldDir, "part-0-0-2.Edit_1.parquet"), []pqCapsule{toPQ(t, oldEdit[0]), toPQ(t, oldClick), toPQ(t, oldEdit[1])})
	writePQ(t, filepath.Join(oldDir, "part-0-3-3.Click_1.parquet"), []pqCapsule{toPQ(t, oldClick)})
	writePQ(t, filepath.Join(recentDir, "part-0-5-5.Edit_1.parquet"), []pqCapsule{toPQ(t, recent)})
	writeFile(t, filepath.Join(oldDir, "_SUCCESS"), "")

	p, err := ParsePolicy([]byte(pqPolicyYAML))
	if err != nil {
		t.Fatal(err)
	}
	p.Now = func() time.Time { return testNow }

	before := treeSnapshot(t, root)
	dry := p
	dry.DryRun = true
	rep, err := PurgeFiles(ctx, root, dry)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Partitions != 1 || rep.PartitionsSanitised != 1 || len(rep.Actions) != 1 {
		t.Errorf("dry run report %+v", rep)
	}
	if !maps.Equal(before, treeSnapshot(t, root)) {
		t.Fatal("dry run changed files")
	}

	rep, err = PurgeFiles(ctx, root, p)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Partitions != 1 || rep.PartitionsSanitised != 1 || rep.PartitionsDeleted != 0 {
		t.Errorf("report %+v", rep)
	}
	entries, err := os.ReadDir(oldDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"_SANITISED", "_SUCCESS", "part-0-0-2.Edit_1.sanitised.parquet"}; !slices.Equal(names, want) {
		t.Fatalf("partition holds %q, want %q", names, want)
	}
	got, pf := readPQ(t, filepath.Join(oldDir, "part-0-0-2.Edit_1.sanitised.parquet"))
	if v, ok := pf.Lookup("eventlogging.schema"); !ok || v != "Edit/1" {
		t.Errorf("key/value metadata lost: %q %v", v, ok)
	}
	if len(got) != len(oldEdit) {
		t.Fatalf("%d rows, want %d", len(got), len(oldEdit))
	}
	for i, c := range oldEdit {
		in := toPQ(t, c)
		want := pqCapsule{
			ClientIP: ptr(wantHash(*in.ClientIP)), DT: in.DT, Revision: in.Revision, Schema: in.Schema,
			Timestamp: in.Timestamp, UUID: in.UUID, Wiki: in.Wiki,
			Event: &pqEvent{Action: in.Event.Action, Token: ptr(wantHash(*in.Event.Token)), User: in.Event.User},
		}
		if a, b := asJSON(t, got[i]), asJSON(t, want); a != b {
			t.Errorf("row %d:\n got %s\nwant %s", i, a, b)
		}
	}
	if s := *got[0].Event.Token; s == *toPQ(t, oldEdit[0]).Event.Token {
		t.Error("token kept in clear")
	}

	// The recent partition is untouched; a second run changes nothing.
	after := treeSnapshot(t, root)
	for k, v := range before {
		if filepath.Dir(k) == filepath.Dir(filepath.Join(recentDir[len(root):], "x")) && after[k] != v {
			t.Errorf("recent file %s changed", k)
		}
	}
	if _, err := PurgeFiles(ctx, root, p); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(after, treeSnapshot(t, root)) {
		t.Error("second run changed files")
	}
	if _, err := os.Stat(filepath.Join(recentDir, "part-0-5-5.Edit_1.parquet")); err != nil {
		t.Error(err)
	}
}

// TestPurgeFilesParquetResume: a rewrite interrupted after its rename
// (both files present, no marker) is finished without hashing twice.
func TestPurgeFilesParquetResume(t *testing.T) {
	root := t.TempDir()
	c := makeCapsule(t, testEvent{"Edit", 1, true})
	dir := capsuleHour(t, root, "eventlogging_Edit", c)
	orig := filepath.Join(dir, "part-0-0-0.Edit_1.parquet")
	writePQ(t, orig, []pqCapsule{toPQ(t, c)})
	p := testPolicy(t)
	if _, err := PurgeFiles(t.Context(), root, p); err != nil {
		t.Fatal(err)
	}
	done := filepath.Join(dir, "part-0-0-0.Edit_1.sanitised.parquet")
	want, err := os.ReadFile(done)
	if err != nil {
		t.Fatal(err)
	}
	// Simulate the crash: the original is back, the marker gone, a temp
	// file left behind.
	writePQ(t, orig, []pqCapsule{toPQ(t, c)})
	writeFile(t, filepath.Join(dir, ".part-0-0-0.Edit_1"+tmpSuffix), "partial")
	if err := os.Remove(filepath.Join(dir, SanitisedMarker)); err != nil {
		t.Fatal(err)
	}
	if _, err := PurgeFiles(t.Context(), root, p); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(done); err != nil || string(b) != string(want) {
		t.Errorf("rewritten file changed (%v)", err)
	}
	for _, name := range []string{orig, filepath.Join(dir, ".part-0-0-0.Edit_1"+tmpSuffix)} {
		if _, err := os.Stat(name); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s left: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, SanitisedMarker)); err != nil {
		t.Error(err)
	}
	got, _ := readPQ(t, done)
	if len(got) != 1 || *got[0].ClientIP != wantHash(testIP) || got[0].UserAgent != nil || *got[0].Event.Token != wantHash("tok-1") {
		t.Errorf("rewritten row %+v", got)
	}
}

// asJSON is a row as JSON, for comparison.
func asJSON(t *testing.T, v pqCapsule) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPurgeFilesParquetRequired: a required column that must be dropped
// cannot be set NULL; the file and its partition are left as they are.
func TestPurgeFilesParquetRequired(t *testing.T) {
	type row struct {
		Schema    string `parquet:"schema"`
		UserAgent string `parquet:"userAgent"`
	}
	root := t.TempDir()
	c := makeCapsule(t, testEvent{"Edit", 1, true})
	dir := capsuleHour(t, root, "eventlogging_Edit", c)
	path := filepath.Join(dir, "part-0-0-0.Edit_1.parquet")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := parquet.WriteFile(path, []row{{"Edit", testUA}}); err != nil {
		t.Fatal(err)
	}
	before := treeSnapshot(t, root)
	_, err := PurgeFiles(t.Context(), root, testPolicy(t))
	if !errors.Is(err, ErrParquetSanitise) {
		t.Fatalf("err = %v, want ErrParquetSanitise", err)
	}
	if !maps.Equal(before, treeSnapshot(t, root)) {
		t.Error("files changed")
	}
}
