package cli

import (
	"context"
	"os"
	"path/filepath"

	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/role"
)

func runStandalone(ctx context.Context, args []string, e env) error {
	stderr, log, rt := e.stderr, e.log, e.reload
	fs := newFlagSet("standalone", helpText("standalone"), stderr)
	o := newOverlay(fs, "", flagBrokers, flagSchemas, flagStreams,
		flagIntakeListen.withUsage("HTTP listen address (intake.listen; default "+standaloneListen+", loopback only: --listen :8080 for every interface)"),
		flagDataDir, flagKafkaListen,
		flagSinkFiles.withUsage("file sink target (sink.files, default DATA/files): a directory, s3://BUCKET/PREFIX?endpoint=…&region=…&use_path_style=true or hdfs://NAMENODE:PORT/PATH"),
		flagSinkFilesStaging, flagIcebergCatalog, flagIcebergWarehouse, flagIcebergCommitInterval, flagIcebergNamespace, flagIcebergCatalogName, flagIcebergCompactEvery)
	watch := watchFlag(fs)
	c, err := o.parse(args, standaloneDefaults, func(c *config.Config) {
		_, env := os.LookupEnv("EVENTLOGGING_INTAKE_LISTEN")
		if o.value(flagIntakeListen.name) == "" && !env && c.Intake.Listen == config.Default().Intake.Listen {
			c.Intake.Listen = standaloneListen
		}
	})
	if err != nil {
		return err
	}
	// Before anything starts: the embedded broker would start, and the
	// registry find the folder missing.
	if err := checkSchemaFolder("standalone", o, c); err != nil {
		return err
	}
	rt.ConfigPath, rt.Watch = o.config, *watch
	rl := role.NewReloader(c, rt, log)
	err = role.NewStandalone(c, role.Deps{Logger: log, Reloader: rl}).Run(ctx)
	return namePortInUse("standalone", err,
		listenFlag{name: flagIntakeListen.name, addr: c.Intake.Listen},
		listenFlag{name: flagKafkaListen.name, addr: c.Standalone.KafkaListen, other: "another eventlogging standalone, or a Kafka broker?"})
}

// standaloneListen is standalone's HTTP address when neither --listen nor
// EVENTLOGGING_INTAKE_LISTEN is given and intake.listen is left at the
// intake's default (:8080, every interface): loopback, as a trial on a
// laptop should not be open to its network. --listen :8080 opens it.
const standaloneListen = "127.0.0.1:8080"

// standaloneDefaults puts the spool and both sinks (SQLite and Parquet) in
// the data directory.
func standaloneDefaults(c *config.Config) {
	c.Intake.SpoolDir = filepath.Join(c.Standalone.DataDir, "spool")
	if c.Sink.SQL == "" {
		c.Sink.SQL = "sqlite:" + filepath.Join(c.Standalone.DataDir, "events.db")
	}
	if c.Sink.Files == "" {
		c.Sink.Files = filepath.Join(c.Standalone.DataDir, "files")
	}
	// Files are published every minute, not every 10, on every target
	// (a directory, S3, HDFS), unless file_max_age says otherwise.
	if c.Sink.FileMaxAge == config.DefaultFileMaxAge {
		c.Sink.FileMaxAge = config.StandaloneFileMaxAge
	}
}
