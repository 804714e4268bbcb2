package sqlsink

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/schema"
	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// Two sinks on one database (docs/reliability.md, "Two writers on one
// target"): a zombie whose Kafka session was lost goes on writing a
// partition's records while the partition's new owner writes the same
// records, from the offset committed before. Both retry batches that
// failed half way (a context cancelled during the write, as a lost
// connection would) and write some batches again (redelivered after an
// offset commit that was lost). The unique uuid must keep every record
// once, whatever the interleaving.

// twoWritersInput is one partition of Test/1 capsules, offsets (and
// seqIds) 0..n-1.
func twoWritersInput(n int) []kafka.Record {
	const topic = "eventlogging_Test"
	base := time.Date(2024, 1, 5, 7, 0, 0, 0, time.UTC)
	out := make([]kafka.Record, n)
	for i := range out {
		out[i] = testsupport.CapsuleRecord(topic, 0, int64(i), base.Add(time.Duration(i)*time.Second))
	}
	return out
}

// twoWritersSchemas resolves Test/1, the schema of twoWritersInput.
func twoWritersSchemas(t *testing.T) *schema.Resolver {
	t.Helper()
	dir := t.TempDir()
	testsupport.WriteFiles(t, dir, map[string]string{"Test/1.json": testsupport.CapsuleSchemaDoc})
	return schema.NewResolver(schema.NewDirSource(dir), schema.ResolverConfig{})
}

// feeder writes a range of the input to one Writer in batches, as
// sink.Run would: a batch that fails is written again until it succeeds,
// and after it the offsets are committed (last write wins, as if Kafka
// did not fence the zombie's commits: the worst case).
type feeder struct {
	name    string
	w       *Writer
	rng     *rand.Rand
	batch   int
	retries int // attempts that failed
	again   int // batches written again after they succeeded
}

// run writes input[from:to]. After each batch's commit it checks that the
// table holds every record below the committed offset exactly once (what
// a new owner resuming there relies on), through check.
func (f *feeder) run(ctx context.Context, input []kafka.Record, from, to int, commit func(int64), check func(end int) error) error {
	for start := from; start < to; start += f.batch {
		b := input[start:min(start+f.batch, to)]
		for attempt := 1; ; attempt++ {
			wctx, cancel := ctx, context.CancelFunc(func() {})
			if attempt == 1 && f.rng.IntN(3) == 0 {
				// Cut short somewhere in the write: before, during or
				// after the transaction's commit.
				wctx, cancel = context.WithTimeout(ctx, time.Duration(f.rng.IntN(1500))*time.Microsecond)
			}
			poison, err := f.w.WriteRecords(wctx, b)
			cancel()
			if err == nil {
				if len(poison) > 0 {
					return fmt.Errorf("%s: batch at %d: %d poison records, the first %d: %s", f.name, start, len(poison), poison[0].Record.Offset, poison[0].Reason)
				}
				break
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if attempt == 50 {
				return fmt.Errorf("%s: batch at %d: %w", f.name, start, err)
			}
			f.retries++
		}
		if f.rng.IntN(4) == 0 {
			// Redelivered: the offset commit after it was lost.
			if _, err := f.w.WriteRecords(ctx, b); err != nil {
				return fmt.Errorf("%s: batch at %d written again: %w", f.name, start, err)
			}
			f.again++
		}
		end := start + len(b)
		commit(int64(end))
		if err := check(end); err != nil {
			return fmt.Errorf("%s: committed %d: %w", f.name, end, err)
		}
	}
	return nil
}

// TestTwoWritersOneTable: writer A owns the partition and writes offsets
// 0..499 (committing 400, the rest still in flight when its session is
// lost); writer B is assigned the partition at the committed offset, 400,
// and writes 400..1999 while A, a zombie, goes on writing 500..1499, at
// the same time, in batches of other sizes, with failed attempts and
// repeats. Every committed offset is covered by stored records, and at
// the end every record is in the table exactly once. On every dialect;
// each writer has a pool of its own, as two processes would.
func TestTwoWritersOneTable(t *testing.T) {
	const n = 2000
	input := twoWritersInput(n)
	eachDSN(t, func(t *testing.T, dl *dialect, dsn string) {
		ctx := t.Context()
		res := twoWritersSchemas(t)
		dbA, dbB := openDSN(t, dl.name, dsn), openDSN(t, dl.name, dsn)
		a := &feeder{name: "A", w: newTestWriter(t, dbA, res, Config{Dialect: dl.name}), rng: rand.New(rand.NewPCG(1, 2)), batch: 50}
		b := &feeder{name: "B", w: newTestWriter(t, dbB, res, Config{Dialect: dl.name}), rng: rand.New(rand.NewPCG(3, 4)), batch: 73}
		check := dbA // the checks read through A's pool

		var committed atomic.Int64
		commit := func(off int64) { committed.Store(off) }
		stored := func(end int) error {
			var rows, distinct int
			q := "SELECT COUNT(*), COUNT(DISTINCT " + dl.quote("uuid") + ") FROM " + dl.quote("Test_1") +
				" WHERE " + dl.quote("seqId") + " < " + dl.name.Placeholder(1)
			if err := check.QueryRowContext(ctx, q, end).Scan(&rows, &distinct); err != nil {
				return err
			}
			if rows != end || distinct != end {
				return fmt.Errorf("%d rows, %d distinct uuids below offset %d, want %d", rows, distinct, end, end)
			}
			return nil
		}

		// A alone: 0..499, of which it commits 400.
		if err := a.run(ctx, input, 0, 400, commit, stored); err != nil {
			t.Fatal(err)
		}
		if err := a.run(ctx, input, 400, 500, func(int64) {}, stored); err != nil {
			t.Fatal(err)
		}
		// B takes over at the committed offset while A goes on.
		from := int(committed.Load())
		var wg sync.WaitGroup
		var aDone, bStarted atomic.Int64
		errs := make([]error, 2)
		wg.Add(2)
		go func() {
			defer wg.Done()
			errs[0] = a.run(ctx, input, 500, 1500, commit, stored)
			aDone.Store(time.Now().UnixNano())
		}()
		go func() {
			defer wg.Done()
			errs[1] = b.run(ctx, input, from, n, func(off int64) {
				bStarted.CompareAndSwap(0, time.Now().UnixNano())
				commit(off)
			}, stored)
		}()
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		if bStarted.Load() == 0 || bStarted.Load() > aDone.Load() {
			t.Log("warning: B's first commit came after A had finished; the writers did not overlap in time")
		}
		t.Logf("A: %d failed attempts, %d batches again; B: %d failed attempts, %d batches again",
			a.retries, a.again, b.retries, b.again)
		checkEveryUUIDOnce(t, check, dl, "Test_1", input)
	})
}

// checkEveryUUIDOnce checks that table holds one row per record of
// input, by uuid, and no other row.
func checkEveryUUIDOnce(t *testing.T, db *sql.DB, dl *dialect, table string, input []kafka.Record) {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), "SELECT "+dl.quote("uuid")+", COUNT(*) FROM "+dl.quote(table)+" GROUP BY "+dl.quote("uuid"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rows.Close() }()
	got := map[string]int{}
	for rows.Next() {
		var u string
		var c int
		if err := rows.Scan(&u, &c); err != nil {
			t.Fatal(err)
		}
		got[u] = c
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	bad := 0
	for _, r := range input {
		u := testsupport.EventUUID(r.Topic, r.Partition, r.Offset)
		if c := got[u]; c != 1 && bad < 10 {
			t.Errorf("offset %d (uuid %s) stored %d times", r.Offset, u, c)
			bad++
		}
		delete(got, u)
	}
	if len(got) > 0 {
		t.Errorf("%d uuids in %s that are not in the input", len(got), table)
	}
}
