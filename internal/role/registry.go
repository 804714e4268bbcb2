package role

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/httpauth"
	"github.com/eventlogging/eventlogging/internal/intake"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/kafka/schemalog"
	"github.com/eventlogging/eventlogging/internal/registry"
	"github.com/eventlogging/eventlogging/internal/registry/compat"
	"github.com/eventlogging/eventlogging/internal/schema"
)

// Registry is the schema registry role: the registry over its Kafka log.
// It listens on registry.listen with /metrics beside it, and registers
// registry.import_dir once it can write. With Deps.Mux (standalone) it is
// served there under /registry/ at registry.url, and it is ready only once
// it registered the schema folder (process.schemas_dir), which a reload
// registers again.
type Registry struct {
	cfg config.Config
	d   Deps
	ready
}

// NewRegistry returns the registry of c; it starts nothing.
func NewRegistry(c config.Config, d Deps) *Registry {
	return &Registry{cfg: c, d: d.with(), ready: newReady()}
}

// Run serves the registry until ctx ends.
func (r *Registry) Run(ctx context.Context) error {
	c, m, log := r.cfg, r.d.Metrics, r.d.Logger
	var ln net.Listener
	self := c.Registry.URL
	if r.d.Mux == nil {
		var err error
		if ln, err = (&net.ListenConfig{}).Listen(ctx, "tcp", c.Registry.Listen); err != nil {
			return fmt.Errorf("registry: %w", err)
		}
		if self = c.Registry.SelfURL; self == "" {
			self = "http://" + HostAddr(ln.Addr())
		}
	}
	kc := KafkaConfig(c, log)
	kc.Metrics = m.kafka
	listen := c.Registry.Listen
	if ln == nil {
		listen = c.Intake.Listen // standalone's one listener
	}
	reg, err := newRegistry(c, kc, listen, self, log)
	if err != nil {
		if ln != nil {
			_ = ln.Close()
		}
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return reg.Run(gctx) })
	if ln == nil {
		r.d.Mux.Handle("/registry/", http.StripPrefix("/registry", m.Wrap("registry", reg.Handler())))
		// The processor resolves through the registry: register the schema
		// folder before the first event is processed.
		dir := c.Process.SchemasDir
		if err := importSchemas(gctx, reg, dir, log); err != nil {
			g.Go(func() error { return err })
			return g.Wait()
		}
		// A reload registers the folder again (new versions), after
		// checking every file of it.
		r.d.Reloader.setImporter(dir, func(ctx context.Context, dir string) error {
			ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			return importSchemas(ictx, reg, dir, log)
		})
	} else {
		h := requestLog(serveMux(m, "registry", reg.Handler()), c, log)
		g.Go(func() error { return intake.Serve(gctx, ln, h, log) })
		if dir := c.Registry.ImportDir; dir != "" {
			g.Go(func() error { return importSchemas(gctx, reg, dir, log) })
		}
		log.Info("registry listening", "addr", ln.Addr().String(), "self_url", self, "topic", c.Registry.Topic, "admin_networks", c.Security.AdminNetworks)
	}
	r.markReady()
	return g.Wait()
}

// newRegistry builds a registry on its Kafka log, served on listen and
// reached by the other instances at selfURL.
func newRegistry(c config.Config, kc kafka.Config, listen, selfURL string, log *slog.Logger) (*registry.Registry, error) {
	guard, err := registryGuard(c, listen, selfURL)
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
	return registry.New(registry.Config{
		Log:          schemaLog,
		Check:        compat.RegistryCheck,
		DefaultLevel: c.Registry.DefaultCompatibility,
		Authorize:    guard.Check,
		// Forwarded writes carry the token, so that the leader admits
		// them whatever this instance's address.
		WriteToken: c.Registry.AdminToken(),
		// A schema record must fit a Kafka message (max.message.bytes, 1 MB by default).
		MaxBodyBytes: 900 << 10,
		Logger:       log,
		Compiler:     schema.NewCompiler(schemaLimits(c)),
	})
}

// registryGuard is the guard of the registry's writes: they answer the
// host names of security.allowed_hosts, of listen, of selfURL (the other
// instances forward writes there) and of registry.url.
func registryGuard(c config.Config, listen, selfURL string) (*httpauth.Guard, error) {
	return adminGuard(c, "registry writes", "registry.write_token", c.Registry.AdminToken(), listen, selfURL, c.Registry.URL)
}

// importSchemas registers a schema folder (idempotent), waiting until
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
