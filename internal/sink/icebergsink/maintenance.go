package icebergsink

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// tables lists the tables of the namespace.
func (s *Sink) tableIdents(ctx context.Context) ([]table.Identifier, error) {
	var out []table.Identifier
	for ident, err := range s.cat.ListTables(ctx, s.ns) {
		if err != nil {
			return nil, fmt.Errorf("icebergsink: list tables: %w", err)
		}
		out = append(out, ident)
	}
	slices.SortFunc(out, func(a, b table.Identifier) int { return strings.Compare(strings.Join(a, "."), strings.Join(b, ".")) })
	return out, nil
}

// ExpireSnapshots expires, in every table of the namespace, the snapshots
// older than olderThan except the newest keep (at least 1), and deletes
// the files only they referenced. Readers can no longer time-travel to
// them. The newest snapshot carries the offsets (the summaries are
// cumulative), so resuming is unaffected. Safe to call concurrently with
// the Sink's commits (conflicts are retried).
func (s *Sink) ExpireSnapshots(ctx context.Context, keep int, olderThan time.Duration) error {
	keep = max(keep, 1)
	idents, err := s.tableIdents(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, ident := range idents {
		err := s.retry(ctx, ident, func(tbl *table.Table) (*table.Transaction, error) {
			txn := tbl.NewTransaction()
			return txn, txn.ExpireSnapshots(table.WithRetainLast(keep), table.WithOlderThan(olderThan))
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("icebergsink: table %s: expire snapshots: %w", strings.Join(ident, "."), err))
		}
	}
	return errors.Join(errs...)
}

// Purge deletes, in every table of the namespace, the rows received before
// before, truncated to the hour: whole hour partitions, so no data file is
// rewritten. It is one Iceberg delete snapshot per table — readers see a
// table before or after it, never half of it — that carries the offsets of
// the snapshot it follows. The deleted files stay until their snapshots
// expire (ExpireSnapshots). Sanitising (keeping an allow-list of fields,
// hashing others) is not implemented. Safe to call concurrently with the
// Sink's commits (conflicts are retried). It returns the tables it
// changed.
func (s *Sink) Purge(ctx context.Context, before time.Time) ([]string, error) {
	cut := before.UTC().Truncate(time.Hour)
	filter := iceberg.LessThan(iceberg.Reference("dt"), iceberg.Timestamp(cut.UnixMicro()))
	idents, err := s.tableIdents(ctx)
	if err != nil {
		return nil, err
	}
	var (
		changed []string
		errs    []error
	)
	for _, ident := range idents {
		name := strings.Join(ident, ".")
		var did bool
		err := s.retry(ctx, ident, func(tbl *table.Table) (*table.Transaction, error) {
			before := tbl.CurrentSnapshot()
			if before == nil {
				return nil, nil
			}
			props := iceberg.Properties{}
			offs, err := snapshotOffsets(tbl.Metadata())
			if err != nil {
				return nil, err
			}
			if len(offs.written) > 0 || len(offs.complete) > 0 {
				props[PropOffsets], props[PropComplete] = encodeOffsets(offs.written), encodeOffsets(offs.complete)
			}
			txn := tbl.NewTransaction()
			if err := txn.Delete(ctx, filter, props); err != nil {
				return nil, err
			}
			did = true
			return txn, nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("icebergsink: table %s: purge: %w", name, err))
			continue
		}
		if did {
			changed = append(changed, name)
		}
	}
	return changed, errors.Join(errs...)
}

// retry loads a table, builds a transaction with build (nil: nothing to
// do) and commits it, again on the refreshed table when another writer
// committed first.
func (s *Sink) retry(ctx context.Context, ident table.Identifier, build func(*table.Table) (*table.Transaction, error)) error {
	for attempt := 1; ; attempt++ {
		tbl, err := s.cat.LoadTable(ctx, ident)
		if err != nil {
			return err
		}
		txn, err := build(tbl)
		if err != nil || txn == nil {
			return err
		}
		_, err = txn.Commit(ctx)
		if err == nil || !isConflict(err) || attempt >= maxCommitAttempts {
			return err
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(time.Duration(attempt) * 50 * time.Millisecond):
		}
	}
}
