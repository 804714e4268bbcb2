package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/intake"
	"github.com/eventlogging/eventlogging/internal/kafka/embedded"
	"github.com/eventlogging/eventlogging/internal/logging"
)

const standaloneHelp = `Usage: eventlogging standalone [--data-dir DIR] [--listen ADDR] [--schemas DIR] [--streams FILE] [--config FILE]

Runs the whole pipeline in one process, with nothing else installed: an
embedded Kafka-protocol broker (franz-go's kfake) persisting to the data
directory, the HTTP intake, the schema registry, a processor and the SQL
and file sinks.

  eventlogging standalone --schemas examples/schemas --streams examples/streams.yaml

  DIR/kafka     the embedded broker's topics and consumer offsets
  DIR/spool     the intake's spool
  DIR/events.db the SQL sink (SQLite): one table per schema revision
  DIR/files     the file sink: Parquet, DIR/files/<topic>/year=/month=/day=/hour=/

The schema folder (--schemas, default ./schemas) is registered in the
registry at start and on SIGHUP. It holds legacy EventLogging schemas as
<Name>/<revision>.json|yaml (the revision is the schema's id: events name it
with "schema" and "revision"), and Event Platform schemas as
jsonschema/<title>/<version>.yaml|json (or extensionless, as Wikimedia's
schema repositories have them; also without the jsonschema/ level), named by
events with "$schema": "/<title>/<version>". A file that is not loaded is
logged with the reason. A registered version never changes: to change a
schema, add a new version (or start over with a new data directory).

Event Platform events ("$schema" and "meta.stream") also need their stream
configured: --streams FILE maps each stream (or /regex/) to the schema title
it accepts, its topic and sampling (see examples/streams.yaml); without it
every such event is refused as "stream not configured".

Every topic keeps its records for standalone.retention (default 7 days). Data
survives restarts. Other commands find the broker through DIR/kafka/broker.json,
e.g.  eventlogging tail --from-beginning eventlogging_EventError

SIGHUP (or a change of the files, with --watch) reloads the schema folder
(new versions are registered), the stream configuration and log.level,
without a restart; a broken file refuses the reload and is logged.

HTTP (one port, default :8080): /beacon/event, /v1/events, /v1/streams,
/static/eventlogging.js, /healthz, /readyz — see "eventlogging intake --help"; the schema registry
at /registry/, the dashboard at /dashboard/ (and /), Prometheus metrics at /metrics.

Admin routes — registry writes (POST, PUT and DELETE under /registry/,
except lookups and compatibility checks) and the whole dashboard — answer the
admin networks only (security.admin_networks, default loopback: 127.0.0.0/8
and ::1), or a client that sends registry.write_token or dashboard.token as
"Authorization: Bearer <token>"; others get 403. Everything else is open.`

func runStandalone(ctx context.Context, args []string, stderr io.Writer, log *slog.Logger, rt runtimeEnv) error {
	fs := newFlagSet("standalone", standaloneHelp, stderr)
	var f commonFlags
	f.register(fs)
	dataDir := fs.String("data-dir", "", "data directory (standalone.data_dir, default ./data)")
	kafkaListen := fs.String("kafka-listen", "", "embedded broker address (standalone.kafka_listen, default 127.0.0.1:19092)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c, err := config.Load(f.config)
	if err != nil {
		return err
	}
	f.apply(&c)
	if *dataDir != "" {
		c.Standalone.DataDir = *dataDir
	}
	if *kafkaListen != "" {
		c.Standalone.KafkaListen = *kafkaListen
	}
	c.Intake.SpoolDir = filepath.Join(c.Standalone.DataDir, "spool")
	// Both sinks on by default: SQLite and Parquet in the data directory.
	if c.Sink.SQL == "" {
		c.Sink.SQL = "sqlite:" + filepath.Join(c.Standalone.DataDir, "events.db")
	}
	if c.Sink.Files == "" {
		c.Sink.Files = filepath.Join(c.Standalone.DataDir, "files")
		// Small local volumes: publish files every minute, not every 10.
		c.Sink.FileMaxAge = min(c.Sink.FileMaxAge, time.Minute)
	}
	if err := c.Validate(); err != nil {
		return err
	}
	emb, err := embedded.Start(embedded.Config{
		DataDir:     filepath.Join(c.Standalone.DataDir, "kafka"),
		Listen:      c.Standalone.KafkaListen,
		Partitions:  c.Kafka.Partitions,
		RetentionMs: c.Standalone.Retention.Milliseconds(),
		Logger:      log,
	})
	if err != nil {
		return err
	}
	defer func() {
		if err := emb.Close(); err != nil {
			log.Error("closing the embedded broker", "err", err)
		}
	}()
	c.Kafka.Brokers = emb.Brokers()
	c.Kafka.ReplicationFactor = -1
	// The embedded broker listens on loopback without TLS or SASL: the
	// kafka.tls* and kafka.sasl_* keys are for clusters.
	if c.Kafka.TLS || c.Kafka.SASLMechanism != "" {
		log.Warn("standalone: kafka.tls and kafka.sasl_* are ignored, the embedded broker is plaintext on loopback")
	}
	c.Kafka.TLS, c.Kafka.SASLMechanism = false, ""
	return serveAll(ctx, c, newReloader(c, f.config, rt, f.watch, log), log)
}

// serveAll runs registry, intake and processor against c.Kafka on one HTTP
// listener until ctx is done: the registry under /registry/, the intake at
// the root.
func serveAll(ctx context.Context, c config.Config, rl *reloader, log *slog.Logger) error {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", c.Intake.Listen)
	if err != nil {
		return fmt.Errorf("standalone: %w", err)
	}
	base := "http://" + hostAddr(ln.Addr())
	c.Registry.URL = base + "/registry"
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	m := newRoleMetrics()
	kc := kafkaConfig(c, log)
	kc.Metrics = m.kafka
	// fail stops what already runs before returning a start-up error.
	fail := func(err error) error {
		cancel()
		_ = g.Wait()
		return err
	}
	reg, err := startRegistry(gctx, g, c, kc, c.Registry.URL, log)
	if err != nil {
		return fail(err)
	}
	late := &lateHandler{}
	ins, err := newInspector(c, kc, map[string]string{"intake": base + "/readyz", "registry": c.Registry.URL + "/"}, log)
	if err != nil {
		return fail(err)
	}
	defer ins.Close()
	dash, err := dashboardHandler(ins, c, "/dashboard", gctx.Done(), log)
	if err != nil {
		return fail(err)
	}
	g.Go(func() error { return ins.Run(gctx) })
	mux := http.NewServeMux()
	mux.Handle("/dashboard/", http.StripPrefix("/dashboard", m.wrap("dashboard", dash)))
	mux.Handle("GET /dashboard", http.RedirectHandler("/dashboard/", http.StatusFound))
	// A newcomer opening the address in a browser lands on the dashboard.
	mux.Handle("GET /{$}", http.RedirectHandler("/dashboard/", http.StatusFound))
	mux.Handle("/registry/", http.StripPrefix("/registry", m.wrap("registry", reg.Handler())))
	mux.Handle("GET /metrics", m.handler())
	mux.Handle("/", m.wrap("intake", late))
	// HTTP stops last: the sinks and the processor resolve schemas through
	// the registry it serves, also while they finish their last batch.
	httpCtx, stopHTTP := context.WithCancel(context.WithoutCancel(ctx))
	defer stopHTTP()
	httpDone := make(chan error, 1)
	handler := logging.Requests(mux, log.With("component", "http"), c.Log.RequestSample)
	go func() { httpDone <- intake.Serve(httpCtx, ln, handler, log) }()
	defer func() {
		stopHTTP()
		if err := <-httpDone; err != nil {
			log.Error("http server", "err", err)
		}
	}()

	// The processor resolves through the registry: register the schema
	// folder before the first event is processed.
	if err := importSchemas(gctx, reg, c.Process.SchemasDir, log); err != nil {
		return fail(err)
	}
	// A reload registers the folder again (new versions), after checking
	// every file of it.
	rl.setImporter(c.Process.SchemasDir, func(ctx context.Context, dir string) error {
		ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return importSchemas(ictx, reg, dir, log)
	})
	g.Go(func() error { return rl.Run(gctx) })
	p, err := newPipeline(gctx, c, log, m, rl)
	if err != nil {
		return fail(err)
	}
	defer p.close()
	late.set(p.server)
	p.start(g, gctx, true)
	closeSinks, err := startSinks(gctx, g, c, kc, log, m)
	if err != nil {
		return fail(err)
	}
	defer func() {
		if err := closeSinks(); err != nil {
			log.Error("closing the sinks", "err", err)
		}
	}()
	m.watchLag(gctx, g, c, kc, nil, log)
	if err := writeStandaloneInfo(c.Standalone.DataDir, ln.Addr()); err != nil {
		return fail(err)
	}
	log.Info("standalone running", "http", base, "registry", c.Registry.URL, "kafka", c.Kafka.Brokers, "data_dir", c.Standalone.DataDir, "admin_networks", c.Security.AdminNetworks)
	return g.Wait()
}

// writeStandaloneInfo records the HTTP endpoints in the data directory for
// other commands (tail finds the registry there).
func writeStandaloneInfo(dataDir string, addr net.Addr) error {
	host := hostAddr(addr)
	info := standaloneInfo{HTTP: "http://" + host, Registry: "http://" + host + "/registry"}
	b, err := json.Marshal(info)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dataDir, standaloneFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("standalone: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dataDir, standaloneFile)); err != nil {
		return fmt.Errorf("standalone: %w", err)
	}
	return nil
}
