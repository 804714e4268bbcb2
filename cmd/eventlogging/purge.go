package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/purge"
	"github.com/eventlogging/eventlogging/internal/sink/sqlsink"
)

const purgeHelp = `Usage: eventlogging purge --policy FILE [--sql DSN] [--files DIR] [--dry-run] [--every DURATION]

Applies the retention policy to the sinks: events older than the retention
(default 90 days) are deleted, except for schemas with an allow-list, whose
old events keep only the listed fields ("keep"), with "hash" fields replaced
by a salted HMAC-SHA256; clientIp and userAgent are never kept in clear.
Idempotent and resumable; --dry-run prints what would be done.

Policy file (YAML):
  retention: 2160h
  salt_hex: 6f1c…            # required when any field is hashed
  schemas:
    NavigationTiming: {keep: [wiki, event.responseStart, event.loadEventEnd]}
    SearchQuery:      {keep: [wiki, event.source], hash: [event.query]}

--sql and --files default to sink.sql and sink.files of --config. Without
--every it runs once; with it, it runs at that interval until stopped.`

func runPurge(ctx context.Context, args []string, stdout, stderr io.Writer, log *slog.Logger) error {
	fs := newFlagSet("purge", purgeHelp, stderr)
	cfgPath := fs.String("config", "", "configuration file (YAML), for sink.sql and sink.files")
	policyPath := fs.String("policy", "", "retention policy file (YAML); required")
	sqlDSN := fs.String("sql", "", "SQL sink database: sqlite:PATH, mysql:DSN or postgres://…")
	files := fs.String("files", "", "file sink root directory")
	dryRun := fs.Bool("dry-run", false, "print what would be deleted or sanitised, change nothing")
	every := fs.Duration("every", 0, "run at this interval until stopped (default: once)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *policyPath == "" {
		return fmt.Errorf("%w: purge: --policy FILE is required", errUsage)
	}
	c, err := config.Load(*cfgPath)
	if err != nil {
		return err
	}
	if *sqlDSN != "" {
		c.Sink.SQL = *sqlDSN
	}
	if *files != "" {
		c.Sink.Files = *files
	}
	if c.Sink.SQL == "" && c.Sink.Files == "" {
		return fmt.Errorf("%w: purge: give --sql DSN and/or --files DIR", errUsage)
	}
	raw, err := os.ReadFile(*policyPath)
	if err != nil {
		return fmt.Errorf("purge: %w", err)
	}
	pol, err := purge.ParsePolicy(raw)
	if err != nil {
		return err
	}
	pol.DryRun = pol.DryRun || *dryRun
	pol.Logger = log.With("component", "purge")
	once := func() error {
		var errs []error
		if c.Sink.SQL != "" {
			dialect, dsn := sqlTarget(c.Sink.SQL)
			db, err := sqlsink.Open(dialect, dsn)
			if err != nil {
				return err
			}
			rep, err := purge.PurgeSQL(ctx, db, string(dialect), pol)
			_ = db.Close()
			printReport(stdout, "sql", rep, pol.DryRun)
			errs = append(errs, err)
		}
		if c.Sink.Files != "" {
			rep, err := purge.PurgeFiles(ctx, c.Sink.Files, pol)
			printReport(stdout, "files", rep, pol.DryRun)
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}
	if *every <= 0 {
		return once()
	}
	t := time.NewTicker(*every)
	defer t.Stop()
	for {
		if err := once(); err != nil {
			log.Error("purge run failed; next run at the next interval", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func printReport(w io.Writer, what string, r purge.Report, dry bool) {
	mode := ""
	if dry {
		mode = " (dry run: nothing changed)"
	}
	fmt.Fprintf(w, "%s%s: %d tables, %d rows deleted, %d rows sanitised, %d partitions, %d deleted, %d sanitised\n",
		what, mode, r.Tables, r.RowsDeleted, r.RowsSanitised, r.Partitions, r.PartitionsDeleted, r.PartitionsSanitised)
	for _, a := range r.Actions {
		fmt.Fprintln(w, "  "+strings.TrimSpace(a))
	}
}
