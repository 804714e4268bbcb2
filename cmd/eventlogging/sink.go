package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/eventlogging/eventlogging/internal/avrowire"
	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/registry"
	"github.com/eventlogging/eventlogging/internal/schema"
	"github.com/eventlogging/eventlogging/internal/sink"
	"github.com/eventlogging/eventlogging/internal/sink/filesink"
	"github.com/eventlogging/eventlogging/internal/sink/sqlsink"
)

const sinkHelp = `Usage: eventlogging sink [--config FILE] [--sql DSN] [--files DIR] [flags]

Loads the valid-event topics (sink.topics, default ^eventlogging_.+) into a
SQL database and/or hour-partitioned files, each sink in its own consumer
group (eventlogging-sink-sql, eventlogging-sink-files).

  --sql sqlite:PATH | mysql:USER:PASS@tcp(HOST:PORT)/DB | postgres://USER:PASS@HOST:PORT/DB
        one table per schema revision <Schema>_<revision>, created on first
        event; duplicates (by uuid) skipped row by row; offsets committed
        after the transaction commits
  --files DIR
        DIR/<topic>/year=YYYY/month=MM/day=DD/hour=HH/ files (Parquet or JSON
        lines gzip), published by atomic rename with the Kafka offsets they
        cover, so a crash never duplicates or loses a record; _SUCCESS when
        an hour is closed

Records a sink can never write go to sink.error_topic with the reason.
Schemas come from registry.url, else from process.schemas_dir. Records in
the Avro wire format (streams with format: avro) are decoded through
registry.url and stored as the same JSON events would be.`

func runSink(ctx context.Context, args []string, stderr io.Writer, log *slog.Logger, rt runtimeEnv) error {
	fs := newFlagSet("sink", sinkHelp, stderr)
	cfgPath := fs.String("config", "", "configuration file (YAML)")
	brokers := fs.String("kafka-brokers", "", "Kafka bootstrap addresses, comma-separated (kafka.brokers)")
	sqlDSN := fs.String("sql", "", "SQL sink database (sink.sql): sqlite:PATH, mysql:DSN or postgres://…")
	files := fs.String("files", "", "file sink root directory (sink.files)")
	format := fs.String("format", "", "file format: parquet or jsonl.gz (sink.format, default parquet)")
	schemas := fs.String("schemas", "", "schema folder when no registry is configured (process.schemas_dir)")
	metricsListen := fs.String("metrics-listen", "", `address of /metrics (sink.metrics_listen, else metrics.listen, default :9102; "off" disables it)`)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c, err := config.Load(*cfgPath)
	if err != nil {
		return err
	}
	if *brokers != "" {
		c.Kafka.Brokers = strings.Split(*brokers, ",")
	}
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&c.Sink.SQL, *sqlDSN)
	set(&c.Sink.Files, *files)
	set(&c.Sink.Format, *format)
	set(&c.Process.SchemasDir, *schemas)
	set(&c.Sink.MetricsListen, *metricsListen)
	if err := c.Validate(); err != nil {
		return err
	}
	if c.Sink.SQL == "" && c.Sink.Files == "" {
		return fmt.Errorf("%w: sink: give --sql DSN and/or --files DIR", errUsage)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	// SIGHUP reloads log.level (the sinks' schemas come from the registry
	// or are looked up in the folder on every miss).
	rl := newReloader(c, *cfgPath, rt, false, log)
	rl.schemasDir = ""
	g.Go(func() error { return rl.Run(gctx) })
	m := newRoleMetrics()
	kc := kafkaConfig(c, log)
	kc.Metrics = m.kafka
	var groups []string
	if c.Sink.SQL != "" {
		groups = append(groups, c.Sink.Group+"-sql")
	}
	if c.Sink.Files != "" {
		groups = append(groups, c.Sink.Group+"-files")
	}
	// First: a metrics address that cannot be bound stops the start.
	// sink.metrics_listen (--metrics-listen), else metrics.listen.
	mc := c
	mc.Metrics.Listen = c.SinkMetricsListen()
	if err := m.serveMetrics(gctx, g, mc, ":9102", kc, groups, log); err != nil {
		return err
	}
	closeSinks, err := startSinks(gctx, g, c, kc, log, m)
	if err != nil {
		cancel()
		return errors.Join(err, g.Wait())
	}
	err = g.Wait()
	return errors.Join(err, closeSinks())
}

// schemaResolver resolves schemas through the registry when one is
// configured, else from the schema folder.
func schemaResolver(c config.Config, m *roleMetrics) (*schema.Resolver, error) {
	var src schema.Source = schema.NewDirSource(c.Process.SchemasDir)
	if c.Registry.URL != "" {
		cl, err := registry.NewClient(c.Registry.URL, nil)
		if err != nil {
			return nil, err
		}
		src = cl
	}
	return schema.NewResolver(src, schema.ResolverConfig{NegativeTTL: c.Process.NegativeCacheTTL, Metrics: m.schemaMetrics()}), nil
}

// sinkTopics is the regular expression of the topics the sinks store:
// sink.topics, and, while it is the default (^eventlogging_.+), also the
// topics of the Event Platform streams configured in process.streams_file
// (a stream without a topic of its own writes to the topic named after it,
// which the default would miss). Streams configured as Avro are included:
// the sinks decode them.
func sinkTopics(c config.Config, log *slog.Logger) string {
	re := c.Sink.Topics
	if re != config.Default().Sink.Topics || c.Process.StreamsFile == "" {
		return re
	}
	st, err := loadStreams(c.Process.StreamsFile)
	if err != nil {
		log.Warn("sink: the stream configuration cannot be read; storing only sink.topics", "err", err)
		return re
	}
	alts := []string{re}
	for _, s := range st.List() {
		switch {
		case s.Topic != "":
			alts = append(alts, "^"+regexp.QuoteMeta(s.Topic)+"$")
		case len(s.Name) > 2 && strings.HasPrefix(s.Name, "/") && strings.HasSuffix(s.Name, "/"):
			alts = append(alts, "(?:"+s.Name[1:len(s.Name)-1]+")") // a /regex/ stream: its topics are its names
		default:
			alts = append(alts, "^"+regexp.QuoteMeta(s.Name)+"$")
		}
	}
	return strings.Join(alts, "|")
}

// sqlTarget splits sink.sql into a dialect and a driver DSN.
func sqlTarget(dsn string) (sqlsink.Dialect, string) {
	switch {
	case strings.HasPrefix(dsn, "sqlite:"):
		return sqlsink.SQLite, strings.TrimPrefix(dsn, "sqlite:")
	case strings.HasPrefix(dsn, "mysql:"):
		return sqlsink.MySQL, strings.TrimPrefix(dsn, "mysql:")
	default:
		return sqlsink.Postgres, dsn
	}
}

// startSinks starts the configured sinks in g (each sink.Run closes its
// sink when it returns) and returns what closes the database and the
// poison producer after g is done.
func startSinks(ctx context.Context, g *errgroup.Group, c config.Config, kc kafka.Config, log *slog.Logger, m *roleMetrics) (func() error, error) {
	res, err := schemaResolver(c, m)
	if err != nil {
		return nil, err
	}
	// Avro records are decoded through the registry, as the processor
	// encodes them; without one they are poison.
	var codec *avrowire.Codec
	if u := c.Registry.URL; u != "" {
		if codec, err = avrowire.New(u, 0); err != nil {
			return nil, err
		}
	}
	prod, err := kafka.NewProducer(kafka.ProducerConfig{Kafka: kc})
	if err != nil {
		return nil, err
	}
	var closers []func() error
	closeAll := func() error {
		var errs []error
		for i := len(closers) - 1; i >= 0; i-- {
			errs = append(errs, closers[i]())
		}
		prod.Close()
		return errors.Join(errs...)
	}
	base := sink.Config{
		Kafka:      kc,
		Topics:     []string{sinkTopics(c, log)},
		TopicRegex: true,
		ErrorTopic: c.Sink.ErrorTopic,
		MaxBatch:   c.Sink.BatchSize,
		BatchTime:  c.Sink.BatchTime,
		Producer:   prod,
		Creator:    prod.Topics(topicDefaults(c)),
		Logger:     log.With("component", "sink"),
		Metrics:    m.sinkMetrics(),
	}
	if c.Sink.SQL != "" {
		dialect, dsn := sqlTarget(c.Sink.SQL)
		db, err := sqlsink.Open(dialect, dsn)
		if err != nil {
			return nil, errors.Join(err, closeAll())
		}
		scfg := sqlsink.Config{Dialect: dialect, TablePerSchema: c.Sink.TablePerSchema, Logger: log.With("component", "sqlsink")}
		if codec != nil {
			scfg.Avro = codec
		}
		w, err := sqlsink.NewWriter(db, res, scfg)
		if err != nil {
			_ = db.Close()
			return nil, errors.Join(err, closeAll())
		}
		closers = append(closers, db.Close) // the Writer is closed by sink.Run
		cfg := base
		cfg.Name, cfg.Group = "sql", c.Sink.Group+"-sql"
		g.Go(func() error { return sink.Run(ctx, cfg, w) })
		log.Info("sql sink running", "dialect", dialect)
	}
	if c.Sink.Files != "" {
		fcfg := filesink.Config{
			Root:       c.Sink.Files,
			Format:     filesink.Format(c.Sink.Format),
			MaxFileAge: c.Sink.FileMaxAge,
			Lateness:   c.Sink.Lateness,
			Schemas:    res,
			Logger:     log.With("component", "filesink"),
			// Rows count as published when a checkpoint renames their files.
			Published: m.sinkMetrics().Published("files"),
		}
		if codec != nil {
			fcfg.Avro = codec
		}
		fsink, err := filesink.Open(fcfg)
		if err != nil {
			return nil, errors.Join(err, closeAll())
		}
		cfg := base // sink.Run closes fsink
		cfg.Name, cfg.Group = "files", c.Sink.Group+"-files"
		g.Go(func() error { return sink.Run(ctx, cfg, fsink) })
		log.Info("file sink running", "root", c.Sink.Files, "format", c.Sink.Format)
	}
	return closeAll, nil
}
