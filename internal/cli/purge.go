package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/eventlogging/eventlogging/internal/purge"
	"github.com/eventlogging/eventlogging/internal/role"
)

func runPurge(ctx context.Context, args []string, e env) error {
	stdout, stderr, log := e.stdout, e.stderr, e.log
	fs := newFlagSet("purge", helpText("purge"), stderr)
	o := newOverlay(fs, "configuration file (YAML), for sink.sql, sink.files and sink.iceberg_*",
		flagSinkSQL.withUsage("SQL sink database: sqlite:PATH, mysql:DSN or postgres://…"),
		flagSinkFiles.withUsage("file sink target: a directory, s3://… or hdfs://…"), flagIcebergCatalog, flagIcebergWarehouse, flagIcebergNamespace, flagIcebergCatalogName)
	policyPath := fs.String("policy", "", "retention policy file (YAML); required")
	dryRun := fs.Bool("dry-run", false, "print what would be deleted or sanitised, change nothing")
	every := fs.Duration("every", 0, "run at this interval until stopped (default: once)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *policyPath == "" {
		return fmt.Errorf("%w: purge: --policy FILE is required", errUsage)
	}
	c, err := o.load()
	if err != nil {
		return err
	}
	if c.Sink.SQL == "" && c.Sink.Files == "" && c.Sink.IcebergCatalog == "" {
		return fmt.Errorf("%w: purge: give --sql DSN, --files TARGET and/or --iceberg-catalog URI --iceberg-warehouse DIR", errUsage)
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
	pg := role.NewPurge(c, pol, role.Deps{Logger: log})
	pg.Every, pg.Out = *every, stdout
	return pg.Run(ctx)
}
