package icebergsink

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

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
// rewritten. It is PurgeOld without rules: one Iceberg delete snapshot per
// table, which keeps the offsets of the snapshot it follows. It returns
// the tables it changed.
func (s *Sink) Purge(ctx context.Context, before time.Time) ([]string, error) {
	rep, err := s.PurgeOld(ctx, before, nil)
	return rep.Deleted, err
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
		if err := checkNoReplay(tbl); err != nil {
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
