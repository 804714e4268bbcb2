package purge

import (
	"context"
	"fmt"

	"github.com/eventlogging/eventlogging/internal/sink/icebergsink"
)

// PurgeIceberg applies the policy to the Iceberg sink's tables: in the
// tables of schemas without a rule, the hour partitions older than the
// retention are deleted; in the others they are rewritten keeping only the
// rule's fields (hashed ones hashed) and the bookkeeping fields, as for the
// files. Each table changes in one Iceberg snapshot, so readers never see
// a half-applied purge, and a second run changes nothing
// (icebergsink.Sink.PurgeOld). A legacy table's rule is its schema's; an
// Event Platform table's is its stream's. A dry run is not supported yet:
// it reports what it would examine and changes nothing.
func PurgeIceberg(ctx context.Context, s *icebergsink.Sink, p Policy) (Report, error) { //nolint:revive // read as "purge Iceberg", like PurgeFiles
	var rep Report
	p, err := p.withDefaults()
	if err != nil {
		return rep, err
	}
	cutoff := p.cutoff()
	if p.DryRun {
		rep.Actions = append(rep.Actions, fmt.Sprintf("iceberg: hours before %s would be deleted, or sanitised in tables with a rule (dry run: Iceberg tables are not inspected)", cutoff.Format("2006-01-02T15:00Z")))
		return rep, nil
	}
	h := p.hasher()
	rules := func(t icebergsink.TableInfo) icebergsink.Sanitiser {
		name := t.Schema
		if name == "" {
			name = t.Stream
		}
		rule, ok := p.Rules[name]
		if !ok {
			return nil
		}
		return func(row map[string]any) map[string]any { return sanitiseRecord(row, rule, h.Hash) }
	}
	pr, err := s.PurgeOld(ctx, cutoff, rules)
	rep.Tables = len(pr.Deleted) + len(pr.Sanitised)
	rep.RowsSanitised = pr.RowsSanitised
	if err != nil {
		return rep, fmt.Errorf("purge: iceberg: %w", err)
	}
	p.Logger.Info("iceberg tables purged", "before", cutoff, "tables_deleted_from", pr.Deleted, "tables_sanitised", pr.Sanitised,
		"files_rewritten", pr.FilesRewritten, "rows_sanitised", pr.RowsSanitised)
	return rep, nil
}
