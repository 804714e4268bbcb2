package icebergsink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// killChildEnv carries "catalog URI\nwarehouse" to TestKill9Child.
const killChildEnv = "ICEBERGSINK_KILL_CHILD"

// The Kafka partitions of the kill test's input: two topics of capsules
// of three schema versions in two tables (Test/1 and Test/2 in Test,
// Other/1 in Other), with three and two partitions; 20,000 records each,
// over four hours.
var killParts = []tp{
	{"eventlogging_Mixed", 0}, {"eventlogging_Mixed", 1}, {"eventlogging_Mixed", 2},
	{"eventlogging_Other", 0}, {"eventlogging_Other", 1},
}

const killPerPartition = 20_000

// killRecord is the record at an offset of one of killParts.
func killRecord(p tp, off int64) kafka.Record {
	dt := base.Add(time.Duration(off)*4*time.Hour/killPerPartition + time.Duration(p.partition)*time.Second)
	switch {
	case p.topic == "eventlogging_Other" && off%4 != 0:
		return otherRecord(p.topic, p.partition, off, dt)
	case off%5 == 4:
		return capsule2Record(p.topic, p.partition, off, dt)
	case off%3 == 0:
		return otherRecord(p.topic, p.partition, off, dt)
	}
	return testsupport.CapsuleRecord(p.topic, p.partition, off, dt)
}

// killFeed does what sink.Run does with an assignment of killParts: asks
// the sink where to resume, then writes batches of 200 records of each
// partition in turn (1,000 a batch) until the input is done, no faster
// than rate records a second (0: unlimited). It returns the records
// written.
func killFeed(ctx context.Context, s *Sink, rate int) (int, error) {
	assigned := map[string][]int32{}
	for _, p := range killParts {
		assigned[p.topic] = append(assigned[p.topic], p.partition)
	}
	offs, err := s.StartOffsets(ctx, assigned)
	if err != nil {
		return 0, err
	}
	next := map[tp]int64{}
	for _, p := range killParts {
		next[p] = offs[p.topic][p.partition]
	}
	start, n := time.Now(), 0
	for {
		var batch []kafka.Record
		for _, p := range killParts {
			for i := 0; i < 200 && next[p] < killPerPartition; i++ {
				batch = append(batch, killRecord(p, next[p]))
				next[p]++
			}
		}
		if len(batch) == 0 {
			return n, nil
		}
		poison, err := s.WriteRecords(ctx, batch)
		if err != nil {
			return n, err
		}
		if len(poison) > 0 {
			return n, errors.New("poison: " + poison[0].Reason)
		}
		n += len(batch)
		if rate > 0 {
			if d := time.Until(start.Add(time.Duration(n) * time.Second / time.Duration(rate))); d > 0 {
				time.Sleep(d)
			}
		}
	}
}

// warehouseFiles counts the committed table metadata files (one per
// commit) and the data files under a warehouse.
func warehouseFiles(t *testing.T, warehouse string) (commits, data int) {
	t.Helper()
	err := filepath.WalkDir(warehouse, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // created or removed while walking
			}
			return err
		}
		switch name := d.Name(); {
		case strings.HasSuffix(name, ".metadata.json"):
			commits++
		case strings.HasSuffix(name, ".parquet"):
			data++
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return commits, data
}

// The sink SIGKILLed five times while it commits: a child process (this
// test binary) feeds 100,000 capsules of two tables from five Kafka
// partitions, resuming each time from StartOffsets, committing every
// 150 ms; the parent watches the warehouse and kills it when a commit is
// under way — data files written that no table metadata references yet —
// after letting a random number of commits land. A last run, in this
// process, completes the input. PyIceberg then reads every uuid exactly
// once, and every snapshot the sink made carries the offsets.
func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	py := python(t)
	e := sqliteEnv(t)
	began := time.Now()
	for round := range 5 {
		commits0, _ := warehouseFiles(t, e.warehouse)
		cmd, out := testsupport.StartChild(t, "TestKill9Child", killChildEnv+"="+e.catalog+"\n"+e.warehouse)
		target := 4 + rand.IntN(10) // commits to let land before the kill (2 tables: 2 to 7 rounds)
		lastCommits, dataAtCommit := commits0, -1
		var commits, data int
		testsupport.WaitChild(t, cmd, out, 60*time.Second, time.Millisecond, fmt.Sprintf("round %d: no commit under way seen", round), func() bool {
			commits, data = warehouseFiles(t, e.warehouse)
			if commits != lastCommits || dataAtCommit < 0 {
				lastCommits, dataAtCommit = commits, data
			}
			// Files written, not committed yet: a commit is under way.
			return commits-commits0 >= target && data > dataAtCommit
		})
		// Somewhere inside the commit: writing data files, manifests, the
		// table metadata, or the catalog row.
		time.Sleep(time.Duration(rand.IntN(25_000)) * time.Microsecond)
		testsupport.KillChild(t, cmd, fmt.Sprintf("round %d", round), out)
		after, dataAfter := warehouseFiles(t, e.warehouse)
		t.Logf("round %d: killed after %d commits, while %d data files were written for the next; by the kill %d files in all, %d more commits landed",
			round, commits-commits0, data-dataAtCommit, dataAfter-dataAtCommit, after-commits)
	}
	killed := time.Since(began)

	cfg := e.config(t)
	cfg.CommitInterval = 150 * time.Millisecond
	s := openSink(t, cfg)
	n, err := killFeed(t.Context(), s, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("after 5 kills (%s), the last run wrote the remaining %d of %d records", killed.Round(time.Millisecond), n, len(killParts)*killPerPartition)

	got := readAllWithPyIceberg(t, py, e.catalog, "file://"+e.warehouse, nil)
	total := len(killParts) * killPerPartition
	dups := 0
	for _, c := range got.UUIDs {
		if c != 1 {
			dups++
		}
	}
	if len(got.UUIDs) != total || dups != 0 || got.Rows != total {
		t.Errorf("pyiceberg read %d rows, %d distinct uuids, %d of them not once; want %d once each", got.Rows, len(got.UUIDs), dups, total)
	}
	for _, p := range killParts {
		for off := int64(0); off < killPerPartition; off++ {
			if c := got.UUIDs[testsupport.EventUUID(p.topic, p.partition, off)]; c != 1 {
				t.Fatalf("%s/%d@%d read %d times", p.topic, p.partition, off, c)
			}
		}
	}
	// Every snapshot of the sink's carries the offsets; the tables together
	// say every partition is complete through its last offset.
	complete := map[tp]int64{}
	for name, snaps := range got.Snapshots {
		for _, sn := range snaps {
			if sn.Operation == "append" && (sn.Offsets == "" || sn.Complete == "") {
				t.Errorf("table %s: append snapshot %d without offsets", name, sn.ID)
			}
		}
		last := snaps[len(snaps)-1]
		c, err := decodeOffsets(last.Complete)
		if err != nil {
			t.Fatal(err)
		}
		mergeMax(complete, c)
		t.Logf("table %s: %d snapshots; the last: %s=%s", name, len(snaps), PropComplete, last.Complete)
	}
	for _, p := range killParts {
		if complete[p] != killPerPartition-1 {
			t.Errorf("%s/%d complete through %d, want %d", p.topic, p.partition, complete[p], killPerPartition-1)
		}
	}
}

// TestKill9Child is the child of TestKill9; it does nothing unless run by
// it.
func TestKill9Child(t *testing.T) {
	env := os.Getenv(killChildEnv)
	if env == "" {
		t.Skip("child process of TestKill9")
	}
	catalogURI, warehouse, _ := strings.Cut(env, "\n")
	s, err := Open(Config{Catalog: catalogURI, Warehouse: warehouse, Schemas: testSchemas(t), Logger: testsupport.Logger(t),
		CommitInterval: 150 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// At most 8,000 records a second: the parent kills it long before
	// the 100,000 are done.
	if _, err := killFeed(context.Background(), s, 8_000); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
}

// readAllScript reads every table of the namespace with PyIceberg and
// prints the uuids (capsules: uuid; Event Platform: meta.id) with their
// counts, and each table's snapshots with their offsets.
const readAllScript = `
import json, sys, collections
from pyiceberg.catalog.sql import SqlCatalog
uri, warehouse, props = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
cat = SqlCatalog("eventlogging", uri=uri, warehouse=warehouse, **props)
uuids, rows, snaps = collections.Counter(), 0, {}
for ident in cat.list_tables("eventlogging"):
    t = cat.load_table(ident)
    tbl = t.scan().to_arrow()
    rows += tbl.num_rows
    if "uuid" in tbl.column_names:
        uuids.update(tbl.column("uuid").to_pylist())
    else:
        uuids.update(tbl.column("meta").combine_chunks().field("id").to_pylist())
    snaps[ident[-1]] = [{"id": s.snapshot_id, "operation": s.summary.operation.value,
        "offsets": s.summary.additional_properties.get("eventlogging.offsets", ""),
        "complete": s.summary.additional_properties.get("eventlogging.complete", "")}
        for s in sorted(t.snapshots(), key=lambda s: s.sequence_number)]
json.dump({"rows": rows, "uuids": uuids, "snapshots": snaps}, sys.stdout)
`

type pySnapshot struct {
	ID        int64  `json:"id"`
	Operation string `json:"operation"`
	Offsets   string `json:"offsets"`
	Complete  string `json:"complete"`
}

type pyAll struct {
	Rows      int                     `json:"rows"`
	UUIDs     map[string]int          `json:"uuids"`
	Snapshots map[string][]pySnapshot `json:"snapshots"`
}

// readAllWithPyIceberg runs readAllScript on a catalog, with the
// catalog properties props (S3 settings).
func readAllWithPyIceberg(t *testing.T, py, catalogURI, warehouse string, props map[string]string) pyAll {
	t.Helper()
	began := time.Now()
	if props == nil {
		props = map[string]string{}
	}
	pj, err := json.Marshal(props)
	if err != nil {
		t.Fatal(err)
	}
	res := runPython[pyAll](t, py, readAllScript, catalogURI, warehouse, string(pj))
	t.Logf("pyiceberg read %d rows of %d tables in %s", res.Rows, len(res.Snapshots), time.Since(began).Round(time.Millisecond))
	return res
}
