package role

import (
	"context"
	"errors"
	"log/slog"
	"regexp"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/eventlogging/eventlogging/internal/avrowire"
	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/process"
	"github.com/eventlogging/eventlogging/internal/sink"
	"github.com/eventlogging/eventlogging/internal/sink/filesink"
	"github.com/eventlogging/eventlogging/internal/sink/icebergsink"
	"github.com/eventlogging/eventlogging/internal/sink/sqlsink"
)

// Sinks is the sink role: the SQL sink (sink.sql), the file sink
// (sink.files) and the Iceberg sink (sink.iceberg_catalog), each in its own
// consumer group, with the /metrics
// listener (sink.metrics_listen, else metrics.listen) and the consumer lag
// of their groups. With Deps.Mux (standalone) it runs the sinks only.
type Sinks struct {
	cfg config.Config
	d   Deps
}

// NewSinks returns the sinks of c; it starts nothing.
func NewSinks(c config.Config, d Deps) *Sinks {
	return &Sinks{cfg: c, d: d.with()}
}

// Run stores records until ctx ends, then finishes the batch in hand,
// commits and closes the sinks, the database and the poison producer.
func (s *Sinks) Run(ctx context.Context) error {
	c, m, log := s.cfg, s.d.Metrics, s.d.Logger
	kc := KafkaConfig(c, log)
	kc.Metrics = m.kafka
	var groups []string
	if c.Sink.SQL != "" {
		groups = append(groups, c.Sink.Group+"-sql")
	}
	if c.Sink.Files != "" {
		groups = append(groups, c.Sink.Group+"-files")
	}
	if c.Sink.IcebergCatalog != "" {
		groups = append(groups, c.Sink.Group+"-iceberg")
	}
	g, gctx := errgroup.WithContext(ctx)
	if s.d.Mux == nil {
		// First: a metrics address that cannot be bound stops the start.
		// sink.metrics_listen (--metrics-listen), else metrics.listen.
		mc := c
		mc.Metrics.Listen = c.SinkMetricsListen()
		serveMetrics, err := m.metricsServer(ctx, mc, ":9102", log)
		if err != nil {
			return err
		}
		if serveMetrics != nil {
			g.Go(func() error { return serveMetrics(gctx) })
		}
		g.Go(func() error { return m.lagMonitor(mc, kc, groups, log)(gctx) })
	}
	runs, closeSinks, err := openSinks(c, kc, log, m)
	if err != nil {
		g.Go(func() error { return err })
		return g.Wait()
	}
	for _, run := range runs {
		g.Go(func() error { return run(gctx) })
	}
	err = g.Wait()
	return errors.Join(err, closeSinks())
}

// openSinks opens the configured sinks and returns what runs each (each
// sink.Run closes its sink when it returns) and what closes the database
// and the poison producer after they returned.
func openSinks(c config.Config, kc kafka.Config, log *slog.Logger, m *Metrics) ([]func(context.Context) error, func() error, error) {
	res, err := schemaResolver(c, m.schema)
	if err != nil {
		return nil, nil, err
	}
	// Avro records are decoded through the registry, as the processor
	// encodes them; without one they are poison.
	var codec *avrowire.Codec
	if u := c.Registry.URL; u != "" {
		if codec, err = avrowire.New(u, 0); err != nil {
			return nil, nil, err
		}
	}
	prod, err := kafka.NewProducer(kafka.ProducerConfig{Kafka: kc})
	if err != nil {
		return nil, nil, err
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
		// The SQL sink is no Resumer: its unique uuid drops copies.
		DedupeWindow: c.Sink.DedupeWindow,
		Creator:      prod.Topics(topicDefaults(c)),
		Logger:       log.With("component", "sink"),
		Metrics:      m.sink,
	}
	var runs []func(context.Context) error
	// addRun adds the run of s (sink.Run closes it), the sink name
	// consuming as the group <sink group>-<name>.
	addRun := func(name string, s sink.Sink) {
		cfg := base
		cfg.Name, cfg.Group = name, c.Sink.Group+"-"+name
		runs = append(runs, func(ctx context.Context) error { return sink.Run(ctx, cfg, s) })
	}
	if c.Sink.SQL != "" {
		dialect, dsn := sqlsink.ParseTarget(c.Sink.SQL)
		db, err := sqlsink.Open(dialect, dsn)
		if err != nil {
			return nil, nil, errors.Join(err, closeAll())
		}
		scfg := sqlsink.Config{Dialect: dialect, TablePerSchema: c.Sink.TablePerSchema, Logger: log.With("component", "sqlsink")}
		if codec != nil {
			scfg.Avro = codec
		}
		w, err := sqlsink.NewWriter(db, res, scfg)
		if err != nil {
			_ = db.Close()
			return nil, nil, errors.Join(err, closeAll())
		}
		closers = append(closers, db.Close) // the Writer is closed by sink.Run
		addRun("sql", w)
		log.Info("sql sink running", "dialect", dialect)
	}
	if c.Sink.Files != "" {
		fcfg := filesink.Config{
			Root:       c.Sink.Files,
			Staging:    c.Sink.FilesStaging,
			Format:     filesink.Format(c.Sink.Format),
			MaxFileAge: c.Sink.FileMaxAge,
			Lateness:   c.Sink.Lateness,
			Schemas:    res,
			Logger:     log.With("component", "filesink"),
			// Rows count as published when a checkpoint renames (or
			// uploads) their files.
			Published: m.sink.Published("files"),
		}
		if codec != nil {
			fcfg.Avro = codec
		}
		fsink, err := filesink.Open(fcfg)
		if err != nil {
			return nil, nil, errors.Join(err, closeAll())
		}
		addRun("files", fsink)
		log.Info("file sink running", "root", c.Sink.Files, "format", c.Sink.Format)
	}
	if c.Sink.IcebergCatalog != "" {
		icfg := icebergsink.Config{
			Catalog:           c.Sink.IcebergCatalog,
			Warehouse:         c.Sink.IcebergWarehouse,
			CommitInterval:    c.Sink.IcebergCommitInterval,
			Namespace:         c.Sink.IcebergNamespace,
			CatalogName:       c.Sink.IcebergCatalogName,
			CompactEvery:      c.Sink.IcebergCompactEvery,
			SnapshotRetention: c.Sink.IcebergSnapshotRetention,
			Schemas:           res,
			Logger:            log.With("component", "icebergsink"),
			// Rows count as published when a commit makes them visible.
			Published: m.sink.Published("iceberg"),
		}
		if codec != nil {
			icfg.Avro = codec
		}
		isink, err := icebergsink.Open(icfg)
		if err != nil {
			return nil, nil, errors.Join(err, closeAll())
		}
		addRun("iceberg", isink)
		log.Info("iceberg sink running", "warehouse", c.Sink.IcebergWarehouse, "commit_interval", c.Sink.IcebergCommitInterval)
	}
	return runs, closeAll, nil
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
	st, err := process.LoadStreamsFile(c.Process.StreamsFile)
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
