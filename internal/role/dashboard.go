package role

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"golang.org/x/sync/errgroup"

	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/dashboard"
	"github.com/eventlogging/eventlogging/internal/inspect"
	"github.com/eventlogging/eventlogging/internal/intake"
	"github.com/eventlogging/eventlogging/internal/kafka"
)

// Dashboard is the dashboard role: the inspector of the pipeline and the
// web dashboard over it, open to the admin networks and dashboard.token.
// It listens on dashboard.listen with /metrics beside it and follows the
// lag of every eventlogging group; with Deps.Mux (standalone) it is served
// there under /dashboard/. The roles it shows are dashboard.health's URLs
// and the consumer groups of Expect.
type Dashboard struct {
	cfg config.Config
	d   Deps
	// Expect are the consumer groups shown as roles, down until they have
	// a member; NewDashboard sets ExpectedGroups(c, false).
	Expect []inspect.ExpectedGroup
	// Registry is the client the registry is read with; nil: over the
	// network (standalone sets InProcess).
	Registry *http.Client
	late     lateHandler
}

// NewDashboard returns the dashboard of c; it starts nothing.
func NewDashboard(c config.Config, d Deps) *Dashboard {
	return &Dashboard{cfg: c, d: d.with(), Expect: ExpectedGroups(c, false)}
}

// Run serves the dashboard until ctx ends; its live streams end then.
func (ds *Dashboard) Run(ctx context.Context) error {
	c, m, log := ds.cfg, ds.d.Metrics, ds.d.Logger
	kc := KafkaConfig(c, log)
	kc.Metrics = m.kafka
	var ln net.Listener
	if ds.d.Mux == nil {
		// Refused credentials would only show as warnings, forever: stop.
		if err := kafka.CheckAuth(ctx, kc); err != nil {
			return err
		}
	}
	ins, err := NewInspector(c, kc, c.Dashboard.Health, ds.Expect, ds.Registry, log)
	if err != nil {
		return err
	}
	defer ins.Close()
	if ds.d.Mux == nil {
		if ln, err = (&net.ListenConfig{}).Listen(ctx, "tcp", c.Dashboard.Listen); err != nil {
			return fmt.Errorf("dashboard: %w", err)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	prefix := ""
	if ln == nil {
		prefix = "/dashboard"
	}
	listen := c.Dashboard.Listen
	if ln == nil {
		listen = c.Intake.Listen // standalone's one listener
	}
	dash, err := dashboardHandler(ins, c, prefix, listen, gctx.Done(), log)
	if err != nil {
		if ln != nil {
			_ = ln.Close()
		}
		return err
	}
	g.Go(func() error { return ins.Run(gctx) })
	if ln == nil {
		ds.late.set(dash)
		ds.d.Mux.Handle("/dashboard/", http.StripPrefix("/dashboard", m.Wrap("dashboard", &ds.late)))
		err := g.Wait()
		ds.late.close() // no request uses the inspector once it is closed
		return err
	}
	g.Go(func() error { return m.lagMonitor(c, kc, nil, log)(gctx) })
	h := requestLog(serveMux(m, "dashboard", dash), c, log)
	g.Go(func() error { return intake.Serve(gctx, ln, h, log) })
	log.Info("dashboard listening", "addr", "http://"+HostAddr(ln.Addr()), "kafka", c.Kafka.Brokers, "registry", c.Registry.URL, "admin_networks", c.Security.AdminNetworks)
	return g.Wait()
}

// ExpectedGroups are the consumer groups c runs: the processors' always,
// the SQL and file sinks' when c enables them (sink.sql, sink.files; a
// local standalone runs both).
func ExpectedGroups(c config.Config, standalone bool) []inspect.ExpectedGroup {
	out := []inspect.ExpectedGroup{{Role: "processor", Group: c.Process.Group}}
	if c.Sink.SQL != "" || standalone {
		out = append(out, inspect.ExpectedGroup{Role: "sink-sql", Group: c.Sink.Group + "-sql"})
	}
	if c.Sink.Files != "" || standalone {
		out = append(out, inspect.ExpectedGroup{Role: "sink-files", Group: c.Sink.Group + "-files"})
	}
	return out
}

// NewInspector builds the inspector of c's pipeline: health are the role
// health URLs, expect the consumer groups reported as roles, down until
// they have a member; registry reads the registry (nil: over the network).
func NewInspector(c config.Config, kc kafka.Config, health map[string]string, expect []inspect.ExpectedGroup, registry *http.Client, log *slog.Logger) (*inspect.Inspector, error) {
	var raw []string
	for _, in := range c.ProcessInputs() {
		raw = append(raw, in.Topic)
	}
	return inspect.New(inspect.Config{
		Kafka:        kc,
		RegistryURL:  c.Registry.URL,
		RegistryHTTP: registry,
		RawTopics:    raw,
		// Under "hash" the raw lines are the only place the client IP is;
		// under "drop" they carry none, under "keep" it is everywhere.
		HideRawTopics: c.Process.IP == "hash",
		ErrorTopic:    c.Process.ErrorTopic,
		Health:        health,
		Expect:        expect,
		Logger:        log.With("component", "inspect"),
	})
}

// dashboardHandler is the dashboard over b, mounted at prefix and served
// on listen, open to the admin networks and to dashboard.token only, under
// the host names of security.allowed_hosts and of listen, and not to
// cross-origin browser requests; it ends its live streams when stop is
// closed.
func dashboardHandler(b dashboard.Backend, c config.Config, prefix, listen string, stop <-chan struct{}, log *slog.Logger) (http.Handler, error) {
	guard, err := adminGuard(c, "the dashboard and its replay", "dashboard.token", c.Dashboard.AdminToken(), listen)
	if err != nil {
		return nil, err
	}
	h, err := dashboard.New(b, dashboard.Config{
		Prefix: prefix,
		Stop:   stop,
		Logger: log.With("component", "dashboard"),
	})
	if err != nil {
		return nil, err
	}
	return guard.Handler(h), nil
}
