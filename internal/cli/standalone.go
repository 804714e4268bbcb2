package cli

import (
	"context"
	"path/filepath"
	"time"

	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/role"
)

func runStandalone(ctx context.Context, args []string, e env) error {
	stderr, log, rt := e.stderr, e.log, e.reload
	fs := newFlagSet("standalone", helpText("standalone"), stderr)
	o := newOverlay(fs, "", append(servingFlags, flagDataDir, flagKafkaListen,
		flagSinkFiles.withUsage("file sink target (sink.files, default DATA/files): a directory, s3://BUCKET/PREFIX?endpoint=…&region=…&use_path_style=true or hdfs://NAMENODE:PORT/PATH"),
		flagSinkFilesStaging, flagIcebergCatalog, flagIcebergWarehouse)...)
	watch := watchFlag(fs)
	c, err := o.parse(args, standaloneDefaults)
	if err != nil {
		return err
	}
	rt.ConfigPath, rt.Watch = o.config, *watch
	rl := role.NewReloader(c, rt, log)
	return role.NewStandalone(c, role.Deps{Logger: log, Reloader: rl}).Run(ctx)
}

// standaloneDefaults puts the spool and both sinks (SQLite and Parquet) in
// the data directory.
func standaloneDefaults(c *config.Config) {
	c.Intake.SpoolDir = filepath.Join(c.Standalone.DataDir, "spool")
	if c.Sink.SQL == "" {
		c.Sink.SQL = "sqlite:" + filepath.Join(c.Standalone.DataDir, "events.db")
	}
	if c.Sink.Files == "" {
		c.Sink.Files = filepath.Join(c.Standalone.DataDir, "files")
		// Small local volumes: publish files every minute, not every 10.
		c.Sink.FileMaxAge = min(c.Sink.FileMaxAge, time.Minute)
	}
}
