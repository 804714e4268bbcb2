package icebergsink

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// restReadScript reads every table of a namespace through PyIceberg's REST
// catalog (load_catalog with type rest) and prints, per table, as JSON:
// the rows, the count of each uuid, the columns, event.added by uuid, the
// sanitised rows and their userAgents, the hours, the snapshot count and
// the current snapshot's operation and complete offsets.
const restReadScript = `
import json, sys, collections
from pyiceberg.catalog import load_catalog
uri, ns, props = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
cat = load_catalog("eventlogging", **{"type": "rest", "uri": uri, **props})
out = {}
for ident in cat.list_tables(ns):
    t = cat.load_table(ident)
    rows = t.scan().to_arrow().to_pylist()
    san = [r for r in rows if r.get("eventlogging_sanitised")]
    snap = t.current_snapshot()
    out[ident[-1]] = {
        "rows": len(rows),
        "uuids": collections.Counter(r["uuid"] for r in rows),
        "columns": [f.name for f in t.schema().fields],
        "added": {r["uuid"]: (r["event"] or {}).get("added") for r in rows},
        "sanitised": len(san),
        "sanitised_agents": sorted({r.get("userAgent") or "" for r in san}),
        "hours": sorted({r["dt"].strftime("%Y-%m-%dT%H") for r in rows}),
        "snapshots": len(t.snapshots()),
        "operation": snap.summary.operation.value,
        "complete": snap.summary.additional_properties.get("eventlogging.complete", ""),
    }
json.dump(out, sys.stdout)
`

// pyRESTTable is one table of what restReadScript prints.
type pyRESTTable struct {
	Rows            int                `json:"rows"`
	UUIDs           map[string]int     `json:"uuids"`
	Columns         []string           `json:"columns"`
	Added           map[string]*string `json:"added"`
	Sanitised       int                `json:"sanitised"`
	SanitisedAgents []string           `json:"sanitised_agents"`
	Hours           []string           `json:"hours"`
	Snapshots       int                `json:"snapshots"`
	Operation       string             `json:"operation"`
	Complete        string             `json:"complete"`
}

// readRESTWithPyIceberg runs restReadScript on a namespace of a REST
// catalog, with the catalog properties props (credential, token).
func readRESTWithPyIceberg(t *testing.T, py, uri, ns string, props map[string]string) map[string]pyRESTTable {
	t.Helper()
	pj, err := json.Marshal(props)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	res := runPython[map[string]pyRESTTable](t, py, restReadScript, uri, ns, string(pj))
	t.Logf("pyiceberg read %d tables through the REST catalog in %s", len(res), time.Since(began).Round(time.Millisecond))
	return res
}

// Through the REST catalog (Apache Iceberg's REST catalog fixture, a real
// server): the sink writes two tables, evolves one (revision 2), compacts
// it, sanitises one table's old hour and deletes the other's (PurgeOld),
// expires the old snapshots, and resumes from the offsets; PyIceberg,
// through the same REST catalog with an OAuth2 client credential, reads
// every remaining uuid exactly once, the new columns null in older rows,
// the sanitised hour hashed.
func TestRESTCatalog(t *testing.T) {
	e := restEnv(t)
	py := python(t)
	s := openSink(t, e.config(t))
	defer s.Close()
	const topic, otherTopic = "eventlogging_Test", "eventlogging_Other"
	input := spread(topic, 2, 600, 3) // offsets 0..599, hours 7 (i < 200), 8, 9
	// Other/1 in hours 7 and 8.
	other := otherRecords(otherTopic, 100, 72*time.Second)
	// One commit per partition: two data files in each hour of Test.
	for p := range int32(2) {
		batch := slices.DeleteFunc(slices.Clone(input), func(r kafka.Record) bool { return r.Partition != p })
		if p == 0 {
			batch = append(batch, other...)
		}
		feed(t, s, batch, 250)
		flush(t, s)
	}
	var v2 []kafka.Record
	for i := range 50 {
		v2 = append(v2, capsule2Record(topic, 0, int64(600+i), base.Add(2*time.Hour+time.Duration(i)*time.Second)))
	}
	if p := feed(t, s, v2, 50); len(p) != 0 {
		t.Fatalf("poison: %+v", p)
	}
	flush(t, s)
	if n, err := s.Compact(t.Context(), 0); err != nil || n != 3 {
		t.Fatalf("compact: %d hours, %v; want 3", n, err)
	}
	rep, err := s.PurgeOld(t.Context(), base.Add(time.Hour), testRules) // hour 7
	if err != nil {
		t.Fatal(err)
	}
	ns := e.namespace
	if strings.Join(rep.Deleted, ",") != ns+".Other" || strings.Join(rep.Sanitised, ",") != ns+".Test" || rep.RowsSanitised != 400 {
		t.Errorf("purge: %+v; want Other deleted, 400 rows of Test sanitised", rep)
	}
	if err := s.ExpireSnapshots(t.Context(), 1, 0); err != nil {
		t.Fatal(err)
	}
	offs, err := s.StartOffsets(t.Context(), map[string][]int32{topic: {0, 1}, otherTopic: {0}})
	if err != nil {
		t.Fatal(err)
	}
	if o := offs[topic]; o[0] != 650 || o[1] != 600 || offs[otherTopic][0] != 100 {
		t.Errorf("start offsets %v, want %s 650 and 600, %s 100", offs, topic, otherTopic)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	res := readRESTWithPyIceberg(t, py, e.catalog, ns, map[string]string{"credential": "eventlogging-test:not-a-secret"})
	tt, ot := res["Test"], res["Other"]
	want := append(slices.Clone(input), v2...)
	if tt.Rows != len(want) || len(tt.UUIDs) != len(want) {
		t.Fatalf("Test: pyiceberg read %d rows, %d uuids; want %d", tt.Rows, len(tt.UUIDs), len(want))
	}
	for _, r := range want {
		if n := tt.UUIDs[testsupport.EventUUID(r.Topic, r.Partition, r.Offset)]; n != 1 {
			t.Fatalf("Test: uuid of %d/%d read %d times", r.Partition, r.Offset, n)
		}
	}
	if a := tt.Added[testsupport.EventUUID(topic, 0, 600)]; a == nil || *a != "a600" {
		t.Errorf("revision 2 row: event.added = %v, want a600", a)
	}
	if a := tt.Added[testsupport.EventUUID(topic, 0, 599)]; a != nil {
		t.Errorf("revision 1 row: event.added = %q, want null", *a)
	}
	if tt.Sanitised != 400 || strings.Join(tt.SanitisedAgents, ",") != testHash("UA") {
		t.Errorf("Test: %d rows sanitised, userAgents %v; want 400, the hash of UA", tt.Sanitised, tt.SanitisedAgents)
	}
	if tt.Snapshots != 1 || ot.Snapshots != 1 {
		t.Errorf("snapshots after expiry: Test %d, Other %d; want 1 each", tt.Snapshots, ot.Snapshots)
	}
	complete, err := decodeOffsets(tt.Complete)
	if err != nil || complete[tp{topic, 0}] != 649 || complete[tp{topic, 1}] != 599 {
		t.Errorf("Test: %s = %s (%v) after compaction, purge and expiry", PropComplete, tt.Complete, err)
	}
	if ot.Rows != 50 || len(ot.UUIDs) != 50 || strings.Join(ot.Hours, ",") != "2024-01-05T08" {
		t.Errorf("Other after purge: %d rows, hours %v; want the 50 of hour 8", ot.Rows, ot.Hours)
	}
	for _, r := range other[50:] {
		if ot.UUIDs[testsupport.EventUUID(r.Topic, r.Partition, r.Offset)] != 1 {
			t.Fatalf("Other: uuid of offset %d not read once", r.Offset)
		}
	}
}

// A REST catalog's credentials: the URL's user info (an OAuth2 client
// credential, exchanged at the catalog's v1/oauth/tokens) or the
// environment; never in an error message.
func TestRESTCredentials(t *testing.T) {
	const secret = "s3cret-Value"
	// No server needed: a refused connection, an unknown parameter.
	for _, uri := range []string{
		"http://client:" + secret + "@127.0.0.1:1",
		"http://client:" + secret + "@127.0.0.1:1/?nope=1",
		"http://" + secret + "@127.0.0.1:1/?nope=1", // a secret alone
	} {
		_, err := Open(Config{Catalog: uri, Warehouse: t.TempDir(), Logger: testsupport.Logger(t)})
		t.Log(err)
		if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "127.0.0.1:1") {
			t.Errorf("open %s: %v; want an error naming the host, not the secret", redactREST(uri), err)
		}
	}
	e := restEnv(t)
	// A proxy in front of the catalog records what the sink sends.
	target, err := url.Parse(e.catalog)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var tokenRequests int
	var auths []string
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if strings.HasSuffix(r.URL.Path, "/oauth/tokens") {
			tokenRequests++
		} else {
			auths = append(auths, r.Header.Get("Authorization"))
		}
		mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("eventlogging-test", secret)
	for _, how := range []string{"userinfo", EnvRESTCredential, EnvRESTToken} {
		t.Run(how, func(t *testing.T) {
			mu.Lock()
			tokenRequests, auths = 0, nil
			mu.Unlock()
			var logs testsupport.SyncBuffer
			cfg := e.config(t)
			cfg.Catalog = srv.URL
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			switch how {
			case "userinfo":
				cfg.Catalog = u.String()
			case EnvRESTCredential:
				t.Setenv(EnvRESTCredential, "eventlogging-test:"+secret)
			case EnvRESTToken:
				t.Setenv(EnvRESTToken, secret)
			}
			s := openSink(t, cfg)
			feed(t, s, spread("eventlogging_Test", 1, 10, 1), 10)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if strings.Contains(logs.String(), secret) {
				t.Errorf("the secret is in the log:\n%s", logs.String())
			}
			// The fixture's token endpoint hands out a token of its own
			// for a credential; a token is sent as is.
			wantTokens, wantAuth := 1, "Bearer " // and the fixture's token
			if how == EnvRESTToken {
				wantTokens, wantAuth = 0, "Bearer "+secret
			}
			// (iceberg-go asks twice: for GET /v1/config, then for its session.)
			if (tokenRequests == 0) != (wantTokens == 0) || len(auths) < 3 {
				t.Fatalf("%d token requests, %d catalog requests; want %d (or more) and several", tokenRequests, len(auths), wantTokens)
			}
			for _, a := range auths[1:] { // after GET /v1/config
				if !strings.HasPrefix(a, wantAuth) || (how != EnvRESTToken && (a == "Bearer " || strings.Contains(a, secret))) {
					t.Fatalf("a catalog request carried Authorization %q", a)
				}
			}
			t.Logf("%d catalog requests with %s", len(auths), strings.SplitN(auths[len(auths)-1], ":", 2)[0])
		})
	}
}

// A commit that loses the race to another writer's — the catalog refuses
// it (the REST catalog with HTTP 409, CommitFailedException) — is retried
// on the reloaded table: both writers' rows are stored once, and the loser
// logged the conflict.
func TestCommitConflict(t *testing.T) {
	for _, ev := range envs {
		t.Run(ev.name, func(t *testing.T) {
			e := ev.new(t)
			const topic = "eventlogging_Test"
			var logs testsupport.SyncBuffer
			b := openSink(t, e.config(t))
			defer b.Close()
			cfg := e.config(t)
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
			fired := false
			cfg.hook = func(point, _ string) error {
				if point == pointWritten && !fired {
					fired = true // a has written its files; b commits first
					if err := b.Flush(t.Context()); err != nil {
						t.Errorf("b: %v", err)
					}
				}
				return nil
			}
			a := openSink(t, cfg)
			defer a.Close()
			var in []kafka.Record
			for p := range int32(2) {
				var part []kafka.Record
				for i := range 100 {
					part = append(part, testsupport.CapsuleRecord(topic, p, int64(i), base.Add(time.Duration(i)*time.Second)))
				}
				feed(t, []*Sink{a, b}[p], part, 100)
				in = append(in, part...)
			}
			if err := a.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(logs.String(), "conflicted with another writer") {
				t.Errorf("a's commit did not conflict; its log:\n%s", logs.String())
			}
			t.Log(strings.TrimSpace(logs.String()))
			if ev.name == "rest" && !strings.Contains(logs.String(), "CommitFailedException") {
				t.Errorf("the REST conflict is not the server's CommitFailedException (409); a's log:\n%s", logs.String())
			}
			tbl := loadTable(t, a, "Test")
			if n := len(tbl.Metadata().Snapshots()); n != 2 {
				t.Errorf("%d snapshots, want 2", n)
			}
			got := countBy(scanRows(t, tbl), "uuid")
			for _, r := range in {
				if got[testsupport.EventUUID(r.Topic, r.Partition, r.Offset)] != 1 {
					t.Fatalf("%d/%d stored %d times", r.Partition, r.Offset, got[testsupport.EventUUID(r.Topic, r.Partition, r.Offset)])
				}
			}
		})
	}
}
