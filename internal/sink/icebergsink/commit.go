package icebergsink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Snapshot summary properties the sink writes (see the package
// documentation). Both hold JSON {"topic": {"partition": offset}} and are
// cumulative: each snapshot carries every partition the table's history
// mentions.
const (
	// PropOffsets: for each Kafka partition whose records the table holds,
	// an offset such that every record of the partition at or below it
	// that belongs in this table is in this table.
	PropOffsets = "eventlogging.offsets"
	// PropComplete: for each Kafka partition, an offset such that every
	// record of the partition at or below it is in its table (any table of
	// the namespace) or was acknowledged as poison.
	PropComplete = "eventlogging.complete"
)

// maxCommitAttempts bounds the attempts at a commit that conflicts with
// other writers' (each refreshes the table and applies the rows again).
const maxCommitAttempts = 10

// commitRound commits every table with buffered rows, one snapshot each,
// in name order. The last table's snapshot also records, as complete, the
// offsets every record of the round is covered through: only once all the
// round's tables are committed can a restart resume after them. Between
// two tables' commits a crash leaves the earlier tables ahead; the restart
// resumes at the previous complete offsets and each table drops the rows
// its own offsets show it has (commitTable).
func (s *Sink) commitRound(ctx context.Context) error {
	tables := s.sortedTables()
	s.lastCommit = s.cfg.Now()
	if len(tables) == 0 {
		return nil
	}
	processed := make(map[tp]int64, len(s.parts))
	round := make(map[tp]int64, len(s.parts))
	for key, st := range s.parts {
		if st.processed < 0 {
			continue
		}
		processed[key] = st.processed
		c := st.processed
		for _, p := range st.pending {
			c = min(c, p.Record.Offset-1) // not acknowledged: not complete
		}
		if c >= 0 {
			round[key] = c
		}
	}
	for i, ts := range tables {
		complete := maps.Clone(s.complete)
		last := i == len(tables)-1
		if last {
			mergeMax(complete, round)
		}
		if err := s.commitTable(ctx, ts, processed, complete); err != nil {
			return err
		}
		if last {
			s.complete = complete
		}
	}
	s.rounds++
	return nil
}

// commitTable appends a table's buffered rows in one snapshot whose
// summary records the offsets. Each attempt reloads the table and drops
// the rows its snapshots show committed already (by this sink before a
// crash, or by another member of the group that was given the partition),
// so a conflict, an unknown outcome (an error after the catalog may have
// accepted the commit) or a retry never appends a row twice.
func (s *Sink) commitTable(ctx context.Context, ts *tableState, processed, complete map[tp]int64) error {
	ident := append(slices.Clone(s.ns), ts.name)
	for attempt := 1; ; attempt++ {
		tbl, err := s.cat.LoadTable(ctx, ident)
		if err != nil {
			return fmt.Errorf("icebergsink: table %s: load: %w", ts.name, err)
		}
		ts.setTable(tbl)
		if err := checkNoReplay(tbl); err != nil {
			return fmt.Errorf("icebergsink: table %s: %w", ts.name, err)
		}
		have, err := snapshotOffsets(tbl.Metadata())
		if err != nil {
			return fmt.Errorf("icebergsink: table %s: %w", ts.name, err)
		}
		keep := make([]row, 0, len(ts.rows))
		written := maps.Clone(have.written)
		for _, r := range ts.rows {
			if off, ok := have.written[r.tp]; ok && r.offset <= off {
				continue
			}
			keep = append(keep, r)
			written[r.tp] = max(written[r.tp], processed[r.tp])
		}
		if dropped := len(ts.rows) - len(keep); dropped > 0 {
			s.log.Info("rows already in the table dropped", "table", ts.name, "rows", dropped)
		}
		if len(keep) == 0 {
			s.done(ts, nil)
			return nil
		}
		comp := maps.Clone(have.complete)
		mergeMax(comp, complete)
		props := iceberg.Properties{PropOffsets: encodeOffsets(written), PropComplete: encodeOffsets(comp)}

		files, err := s.writeFiles(ctx, tbl, keep)
		if err != nil {
			return fmt.Errorf("icebergsink: table %s: write data files: %w", ts.name, err)
		}
		if err := s.hookAt(pointWritten, ts.name); err != nil {
			return err
		}
		txn := tbl.NewTransaction()
		err = txn.AddDataFiles(ctx, files, props, table.WithoutDuplicateCheck())
		if err == nil {
			var committed *table.Table
			committed, err = txn.Commit(ctx)
			if err == nil {
				ts.setTable(committed)
				s.done(ts, keep)
				return s.hookAt(pointCommitted, ts.name)
			}
		}
		if !isConflict(err) || attempt >= maxCommitAttempts {
			// The outcome may be unknown: the files stay (a committed
			// snapshot may reference them); the next attempt reloads and
			// drops what was committed.
			return fmt.Errorf("icebergsink: table %s: commit: %w", ts.name, err)
		}
		s.log.Info("iceberg commit conflicted with another writer; retrying", "table", ts.name, "attempt", attempt, "err", err)
		s.removeFiles(ctx, tbl, files)
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(time.Duration(attempt) * 50 * time.Millisecond):
		}
	}
}

// checkNoReplay refuses a table whose commit.retry.num-retries property
// makes iceberg-go retry a conflicting commit by itself: it would replay
// the snapshot, with summary properties computed against the older table,
// on top of another writer's — offsets going backwards, and rows stored
// twice after the next restart. The sink retries conflicts itself, on the
// reloaded table (iceberg-go's default, 0 retries).
func checkNoReplay(tbl *table.Table) error {
	if v := tbl.Properties()[table.CommitNumRetriesKey]; v != "" && v != "0" {
		return fmt.Errorf("table property %s=%s: iceberg-go would replay commits with stale offsets; remove it (the sink retries conflicts itself)", table.CommitNumRetriesKey, v)
	}
	return nil
}

// isConflict reports whether a commit failed because another writer
// committed first: nothing was committed, and the commit may be applied
// again on the refreshed table. iceberg-go's SQL catalog wraps
// table.ErrCommitFailed when the metadata location moved under it, but
// returns the requirement check's error ("requirement failed: branch
// \"main\" has changed: …") unwrapped when it saw the change earlier. Its
// REST catalog turns the server's HTTP 409 (CommitFailedException: a
// requirement such as the branch's snapshot id failed) into
// rest.ErrCommitFailed, which wraps table.ErrCommitFailed; a 5xx is
// rest.ErrCommitStateUnknown, not a conflict: the commit fails, and the
// next attempt reloads the table and drops what was committed.
func isConflict(err error) bool {
	return errors.Is(err, table.ErrCommitFailed) || strings.Contains(err.Error(), "requirement failed:")
}

// done forgets a table's buffered rows once committed (or found committed),
// counting the published ones per topic.
func (s *Sink) done(ts *tableState, published []row) {
	s.buffered -= len(ts.rows)
	ts.rows = nil
	if s.cfg.Published == nil || len(published) == 0 {
		return
	}
	per := map[string]int{}
	for _, r := range published {
		per[r.topic]++
	}
	for _, topic := range slices.Sorted(maps.Keys(per)) {
		s.cfg.Published(topic, per[topic])
	}
}

// writeFiles writes rows into Parquet data files of the table (one per
// hour partition, or more for large ones).
func (s *Sink) writeFiles(ctx context.Context, tbl *table.Table, rows []row) ([]iceberg.DataFile, error) {
	asc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return nil, err
	}
	batches, err := arrowBatches(asc, rows)
	if err != nil {
		return nil, err
	}
	i := 0
	defer func() {
		for _, b := range batches[i:] { // those WriteRecords did not consume
			b.Release()
		}
	}()
	seq := func(yield func(arrow.RecordBatch, error) bool) {
		for i < len(batches) {
			b := batches[i]
			i++
			if !yield(b, nil) {
				return
			}
		}
	}
	var files []iceberg.DataFile
	for df, err := range table.WriteRecords(ctx, tbl, asc, seq) {
		if err != nil {
			s.removeFiles(ctx, tbl, files)
			return nil, err
		}
		files = append(files, df)
	}
	return files, nil
}

// removeFiles deletes data files no snapshot references (best effort).
func (s *Sink) removeFiles(ctx context.Context, tbl *table.Table, files []iceberg.DataFile) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return
	}
	for _, f := range files {
		if err := fs.Remove(f.FilePath()); err != nil {
			s.log.Warn("cannot remove an uncommitted data file", "path", f.FilePath(), "err", err)
		}
	}
}

func (s *Sink) hookAt(point, table string) error {
	if s.cfg.hook == nil {
		return nil
	}
	return s.cfg.hook(point, table)
}

// tableOffsetsOf is what a table's snapshots say about Kafka offsets.
type tableOffsetsOf struct {
	written  map[tp]int64
	complete map[tp]int64
}

// snapshotOffsets reads the offsets of the latest snapshot that has them,
// walking back from the current snapshot past snapshots other writers
// made (compaction, deletes); empty maps when none has them.
func snapshotOffsets(meta table.Metadata) (tableOffsetsOf, error) {
	out := tableOffsetsOf{written: map[tp]int64{}, complete: map[tp]int64{}}
	snap := meta.CurrentSnapshot()
	for snap != nil {
		if snap.Summary != nil {
			w, okW := snap.Summary.Properties[PropOffsets]
			c, okC := snap.Summary.Properties[PropComplete]
			if okW || okC {
				var err error
				if out.written, err = decodeOffsets(w); err != nil {
					return out, fmt.Errorf("snapshot %d: %s: %w", snap.SnapshotID, PropOffsets, err)
				}
				if out.complete, err = decodeOffsets(c); err != nil {
					return out, fmt.Errorf("snapshot %d: %s: %w", snap.SnapshotID, PropComplete, err)
				}
				return out, nil
			}
		}
		if snap.ParentSnapshotID == nil {
			break
		}
		snap = meta.SnapshotByID(*snap.ParentSnapshotID)
	}
	return out, nil
}

// encodeOffsets encodes offsets as JSON {"topic": {"partition": offset}}.
func encodeOffsets(m map[tp]int64) string {
	out := map[string]map[string]int64{}
	for k, off := range m {
		if out[k.topic] == nil {
			out[k.topic] = map[string]int64{}
		}
		out[k.topic][strconv.FormatInt(int64(k.partition), 10)] = off
	}
	b, _ := json.Marshal(out) // maps of strings and numbers always encode
	return string(b)
}

// decodeOffsets decodes what encodeOffsets wrote; "" is empty.
func decodeOffsets(s string) (map[tp]int64, error) {
	out := map[tp]int64{}
	if s == "" {
		return out, nil
	}
	var m map[string]map[string]int64
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, err
	}
	for topic, ps := range m {
		for p, off := range ps {
			n, err := strconv.ParseInt(p, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("partition %q: %w", p, err)
			}
			out[tp{topic, int32(n)}] = off
		}
	}
	return out, nil
}

// mergeMax sets dst[k] to the larger of dst[k] and src[k].
func mergeMax(dst, src map[tp]int64) {
	for k, v := range src {
		if cur, ok := dst[k]; !ok || v > cur {
			dst[k] = v
		}
	}
}
