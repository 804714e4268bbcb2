package main

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/process"
	"github.com/eventlogging/eventlogging/internal/schema"
	"github.com/eventlogging/eventlogging/internal/sink"
	"github.com/eventlogging/eventlogging/internal/telemetry"
)

// roleMetrics is the Prometheus registry of one process and the metrics of
// each package, registered once. A nil *roleMetrics (offline tools)
// measures nothing.
type roleMetrics struct {
	reg     *prometheus.Registry
	kafka   *kafka.Metrics
	process *process.Metrics
	schema  *schema.Metrics
	sink    *sink.Metrics
	http    *telemetry.HTTPMetrics
}

func newRoleMetrics() *roleMetrics {
	reg := telemetry.NewRegistry()
	return &roleMetrics{
		reg:     reg,
		kafka:   kafka.NewMetrics(reg),
		process: process.NewMetrics(reg),
		schema:  schema.NewMetrics(reg),
		sink:    sink.NewMetrics(reg),
		http:    telemetry.NewHTTPMetrics(reg),
	}
}

func (m *roleMetrics) kafkaMetrics() *kafka.Metrics {
	if m == nil {
		return nil
	}
	return m.kafka
}

func (m *roleMetrics) processMetrics() *process.Metrics {
	if m == nil {
		return nil
	}
	return m.process
}

func (m *roleMetrics) schemaMetrics() *schema.Metrics {
	if m == nil {
		return nil
	}
	return m.schema
}

func (m *roleMetrics) sinkMetrics() *sink.Metrics {
	if m == nil {
		return nil
	}
	return m.sink
}

func (m *roleMetrics) registerer() prometheus.Registerer {
	if m == nil {
		return nil
	}
	return m.reg
}

// wrap instruments an HTTP handler under name.
func (m *roleMetrics) wrap(name string, h http.Handler) http.Handler {
	if m == nil {
		return h
	}
	return m.http.Wrap(name, h)
}

// handler serves /metrics.
func (m *roleMetrics) handler() http.Handler { return telemetry.Handler(m.reg) }

// serveMetrics runs the /metrics listener of a role without its own HTTP
// listener (metrics.listen, else def; "off" disables it) and a lag monitor
// for groups. A configured address that cannot be bound is an error; the
// default one, taken by another process on the host (a second processor),
// only a warning: the role runs without /metrics.
func (m *roleMetrics) serveMetrics(ctx context.Context, g *errgroup.Group, c config.Config, def string, kc kafka.Config, groups []string, log *slog.Logger) error {
	addr := c.Metrics.Listen
	if addr == "off" {
		m.watchLag(ctx, g, c, kc, groups, log)
		return nil
	}
	if addr == "" {
		addr = def
	}
	ln, err := telemetry.Listen(ctx, addr)
	switch {
	case err != nil && c.Metrics.Listen == "":
		log.Warn("no /metrics: the default metrics address is taken (another role on this host?); set metrics.listen or --metrics-listen", "addr", addr, "err", err)
	case err != nil:
		return err // nothing started yet
	default:
		g.Go(func() error { return telemetry.Serve(ctx, ln, m.reg, log) })
	}
	m.watchLag(ctx, g, c, kc, groups, log)
	return nil
}

// watchLag computes consumer lag of groups (all eventlogging groups when
// empty) into the metrics.
func (m *roleMetrics) watchLag(ctx context.Context, g *errgroup.Group, c config.Config, kc kafka.Config, groups []string, log *slog.Logger) {
	kc.Metrics = m.kafka
	g.Go(func() error {
		return kafka.RunLagMonitor(ctx, kafka.LagMonitorConfig{Kafka: kc, Groups: groups, Interval: c.Metrics.LagInterval, Logger: log})
	})
}
