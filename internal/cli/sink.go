package cli

import (
	"context"
	"fmt"

	"github.com/eventlogging/eventlogging/internal/role"
)

func runSink(ctx context.Context, args []string, e env) error {
	stderr, log, rt := e.stderr, e.log, e.reload
	fs := newFlagSet("sink", helpText("sink"), stderr)
	o := newOverlay(fs, "", flagBrokers, flagSinkSQL, flagSinkFiles, flagSinkFilesStaging, flagSinkFormat, flagIcebergCatalog, flagIcebergWarehouse, flagIcebergCommitInterval, flagIcebergNamespace, flagIcebergCatalogName, flagIcebergCompactEvery,
		flagSchemas.withUsage("schema folder when no registry is configured (process.schemas_dir)"), flagSinkMetricsListen)
	c, err := o.parse(args)
	if err != nil {
		return err
	}
	if c.Sink.SQL == "" && c.Sink.Files == "" && c.Sink.IcebergCatalog == "" {
		return fmt.Errorf("%w: sink: give --sql DSN, --files TARGET and/or --iceberg-catalog URI --iceberg-warehouse DIR", errUsage)
	}
	// SIGHUP reloads log.level (the sinks' schemas come from the registry
	// or are looked up in the folder on every miss).
	rt.ConfigPath, rt.SkipSchemas = o.config, true
	rl := role.NewReloader(c, rt, log)
	err = role.RunInOrder(ctx, rl, role.NewSinks(c, role.Deps{Logger: log}))
	return namePortInUse("sink", err, listenFlag{name: "metrics-listen", addr: c.SinkMetricsListen()})
}
