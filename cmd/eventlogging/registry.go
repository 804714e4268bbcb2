package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/intake"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/kafka/schemalog"
	"github.com/eventlogging/eventlogging/internal/logging"
	"github.com/eventlogging/eventlogging/internal/registry"
	"github.com/eventlogging/eventlogging/internal/registry/compat"
)

const registryHelp = `Usage: eventlogging registry [--config FILE] [flags]

Serves a schema registry compatible with Confluent Schema Registry's REST API
(subjects, versions, ids, /compatibility, /config, /mode; JSON Schema and
Avro), and Event Platform $schema paths (GET /analytics/edit_funnel/1.0.0).
Its state lives in a compacted Kafka topic (registry.topic): every instance
replays it and serves reads; one instance, elected through Kafka, writes, and
the others forward writes to it. The global id of a schema is the legacy
EventLogging revision.

Reads, lookups and compatibility checks are open to every client; writes
(registering, deleting, PUT /config, PUT /mode) only to the admin networks
(security.admin_networks, default loopback) or with registry.write_token
(EVENTLOGGING_REGISTRY_WRITE_TOKEN) as "Authorization: Bearer <token>";
others get 403. Instances forward writes to the leader with that token: a
registry of several instances needs it, or each other's addresses in the
admin networks.

Processors and intakes resolve schemas through it when registry.url is set.
With --import DIR (registry.import_dir), the schema folder is registered at
start: legacy <Name>/<revision> files keep their revision as the global id.`

func runRegistry(ctx context.Context, args []string, stderr io.Writer, log *slog.Logger) error {
	fs := newFlagSet("registry", registryHelp, stderr)
	cfgPath := fs.String("config", "", "configuration file (YAML)")
	brokers := fs.String("kafka-brokers", "", "Kafka bootstrap addresses, comma-separated (kafka.brokers)")
	listen := fs.String("listen", "", "HTTP listen address (registry.listen, default :8081)")
	selfURL := fs.String("self-url", "", "URL other instances use to reach this one (registry.self_url)")
	importDir := fs.String("import", "", "schema folder to register at start (registry.import_dir)")
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
	if *listen != "" {
		c.Registry.Listen = *listen
	}
	if *selfURL != "" {
		c.Registry.SelfURL = *selfURL
	}
	if *importDir != "" {
		c.Registry.ImportDir = *importDir
	}
	if err := c.Validate(); err != nil {
		return err
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", c.Registry.Listen)
	if err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	self := c.Registry.SelfURL
	if self == "" {
		self = "http://" + hostAddr(ln.Addr())
	}
	g, gctx := errgroup.WithContext(ctx)
	m := newRoleMetrics()
	kc := kafkaConfig(c, log)
	kc.Metrics = m.kafka
	reg, err := startRegistry(gctx, g, c, kc, self, log)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.handler())
	mux.Handle("/", m.wrap("registry", reg.Handler()))
	h := logging.Requests(mux, log.With("component", "http"), c.Log.RequestSample)
	g.Go(func() error { return intake.Serve(gctx, ln, h, log) })
	if dir := c.Registry.ImportDir; dir != "" {
		g.Go(func() error { return importSchemas(gctx, reg, dir, log) })
	}
	log.Info("registry listening", "addr", ln.Addr().String(), "self_url", self, "topic", c.Registry.Topic, "admin_networks", c.Security.AdminNetworks)
	return g.Wait()
}

// startRegistry runs a registry on its Kafka log in g and, when
// registry.import_dir is set, imports it once the registry can write.
func startRegistry(ctx context.Context, g *errgroup.Group, c config.Config, kc kafka.Config, selfURL string, log *slog.Logger) (*registry.Registry, error) {
	guard, err := registryGuard(c)
	if err != nil {
		return nil, err
	}
	// Each package names itself: the schema log as schema-log, the
	// registry as registry.
	schemaLog, err := schemalog.New(schemalog.Config{
		Kafka:             kc,
		Topic:             c.Registry.Topic,
		SelfURL:           selfURL,
		ReplicationFactor: c.Kafka.ReplicationFactor,
		Logger:            log,
	})
	if err != nil {
		return nil, err
	}
	reg, err := registry.New(registry.Config{
		Log:          schemaLog,
		Check:        compatCheck,
		DefaultLevel: c.Registry.DefaultCompatibility,
		Authorize:    guard.Check,
		// Forwarded writes carry the token, so that the leader admits
		// them whatever this instance's address.
		WriteToken: c.Registry.AdminToken(),
		// A schema record must fit a Kafka message (max.message.bytes, 1 MB by default).
		MaxBodyBytes: 900 << 10,
		Logger:       log,
	})
	if err != nil {
		return nil, err
	}
	g.Go(func() error { return reg.Run(ctx) })
	return reg, nil
}

// importSchemas registers registry.import_dir (idempotent), waiting until
// this or another instance can write.
func importSchemas(ctx context.Context, reg *registry.Registry, dir string, log *slog.Logger) error {
	st, err := reg.ImportDir(ctx, dir)
	if err != nil {
		return fmt.Errorf("registry import %s: %w", dir, err)
	}
	for _, sk := range st.Skipped {
		log.Warn("schema folder: file not loaded", "file", filepath.Join(dir, filepath.FromSlash(sk.Path)), "reason", sk.Reason)
	}
	log.Info("schemas imported", "dir", dir, "registered", st.Registered, "unchanged", st.Unchanged, "skipped", len(st.Skipped))
	return nil
}

// compatCheck adapts internal/registry/compat to the registry.
func compatCheck(schemaType, level, candidate string, existing []string) ([]string, error) {
	lvl, err := compat.ParseLevel(level)
	if err != nil {
		return nil, err
	}
	viol, err := compat.Check(schemaType, lvl, candidate, existing)
	if err != nil {
		return nil, err
	}
	msgs := make([]string, len(viol))
	for i, v := range viol {
		msgs[i] = v.String()
	}
	return msgs, nil
}

// hostAddr is addr with an unspecified IP replaced by 127.0.0.1.
func hostAddr(addr net.Addr) string {
	if ta, ok := addr.(*net.TCPAddr); ok && ta.IP.IsUnspecified() {
		return fmt.Sprintf("127.0.0.1:%d", ta.Port)
	}
	return addr.String()
}

// lateHandler serves 503 until its handler is set (standalone starts
// serving the registry before the intake is ready).
type lateHandler struct{ h atomic.Pointer[http.Handler] }

func (l *lateHandler) set(h http.Handler) { l.h.Store(&h) }

func (l *lateHandler) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if h := l.h.Load(); h != nil {
		(*h).ServeHTTP(rw, r)
		return
	}
	rw.Header().Set("Retry-After", "1")
	http.Error(rw, `{"status":503,"error":"starting"}`, http.StatusServiceUnavailable)
}
