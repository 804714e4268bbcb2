package role

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/purge"
	"github.com/eventlogging/eventlogging/internal/sink/icebergsink"
	"github.com/eventlogging/eventlogging/internal/sink/sqlsink"
)

// Purge is the retention job: a policy applied to the sinks of c
// (sink.sql, sink.files), once, or every Every until stopped; each run's
// report is written to Out.
type Purge struct {
	cfg config.Config
	d   Deps
	pol purge.Policy
	// Every is the interval between runs; 0: Run purges once.
	Every time.Duration
	// Out receives each run's report; nil discards it.
	Out io.Writer
}

// NewPurge returns the purge of c's sinks under pol; it starts nothing.
func NewPurge(c config.Config, pol purge.Policy, d Deps) *Purge {
	d = d.with()
	pol.Logger = d.Logger.With("component", "purge")
	return &Purge{cfg: c, d: d, pol: pol, Out: io.Discard}
}

// Run purges once (Every 0: returning the run's error), or at every
// interval until ctx ends (a failed run is logged and the next one tried).
func (p *Purge) Run(ctx context.Context) error {
	if p.Every <= 0 {
		return p.once(ctx)
	}
	t := time.NewTicker(p.Every)
	defer t.Stop()
	for {
		if err := p.once(ctx); err != nil {
			p.d.Logger.Error("purge run failed; next run at the next interval", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (p *Purge) once(ctx context.Context) error {
	c := p.cfg
	var errs []error
	if c.Sink.SQL != "" {
		dialect, dsn := sqlsink.ParseTarget(c.Sink.SQL)
		db, err := sqlsink.Open(dialect, dsn)
		if err != nil {
			return err
		}
		rep, err := purge.PurgeSQL(ctx, db, string(dialect), p.pol)
		_ = db.Close()
		p.report("sql", rep)
		errs = append(errs, err)
	}
	if c.Sink.Files != "" {
		rep, err := purge.PurgeFiles(ctx, c.Sink.Files, p.pol)
		p.report("files", rep)
		errs = append(errs, err)
	}
	if c.Sink.IcebergCatalog != "" {
		s, err := icebergsink.Open(icebergsink.Config{Catalog: c.Sink.IcebergCatalog, Warehouse: c.Sink.IcebergWarehouse,
			Namespace: c.Sink.IcebergNamespace, CatalogName: c.Sink.IcebergCatalogName,
			Logger: p.d.Logger.With("component", "icebergsink")})
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		err = p.purgeIceberg(ctx, s)
		errs = append(errs, err, s.Close())
	}
	return errors.Join(errs...)
}

func (p *Purge) report(what string, r purge.Report) {
	mode := ""
	if p.pol.DryRun {
		mode = " (dry run: nothing changed)"
	}
	fmt.Fprintf(p.Out, "%s%s: %d tables, %d rows deleted, %d rows sanitised, %d partitions, %d deleted, %d sanitised\n",
		what, mode, r.Tables, r.RowsDeleted, r.RowsSanitised, r.Partitions, r.PartitionsDeleted, r.PartitionsSanitised)
	for _, a := range r.Actions {
		fmt.Fprintln(p.Out, "  "+strings.TrimSpace(a))
	}
}

// purgeIceberg applies the policy to the Iceberg sink's tables: old hours
// of tables without a rule deleted, the others sanitised, one snapshot per
// table (icebergsink.Sink.PurgeOld). A legacy table's rule is its
// schema's, an Event Platform table's its stream's. A dry run reports the
// cutoff and changes nothing (the tables are not inspected).
func (p *Purge) purgeIceberg(ctx context.Context, s *icebergsink.Sink) error {
	cutoff, sanitiser, err := p.pol.TableRules()
	if err != nil {
		return err
	}
	if p.pol.DryRun {
		_, _ = fmt.Fprintf(p.Out, "iceberg (dry run): hours before %s would be deleted, or sanitised in the tables of schemas with a rule\n", cutoff.Format("2006-01-02T15:04Z"))
		return nil
	}
	rep, err := s.PurgeOld(ctx, cutoff, func(t icebergsink.TableInfo) icebergsink.Sanitiser {
		name := t.Schema
		if name == "" {
			name = t.Stream
		}
		if f := sanitiser(name); f != nil {
			return f
		}
		return nil
	})
	_, _ = fmt.Fprintf(p.Out, "iceberg: %d tables with old hours deleted, %d sanitised (%d files rewritten, %d rows sanitised)\n",
		len(rep.Deleted), len(rep.Sanitised), rep.FilesRewritten, rep.RowsSanitised)
	if err != nil {
		return fmt.Errorf("purge: iceberg: %w", err)
	}
	p.d.Logger.Info("iceberg tables purged", "before", cutoff, "tables_deleted_from", rep.Deleted, "tables_sanitised", rep.Sanitised,
		"files_rewritten", rep.FilesRewritten, "rows_sanitised", rep.RowsSanitised)
	return nil
}
