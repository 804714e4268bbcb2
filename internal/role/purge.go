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
			Logger: p.d.Logger.With("component", "icebergsink")})
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		rep, err := purge.PurgeIceberg(ctx, s, p.pol)
		p.report("iceberg", rep)
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
