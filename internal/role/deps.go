package role

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/process"
	"github.com/eventlogging/eventlogging/internal/schema"
	"github.com/eventlogging/eventlogging/internal/sink"
	"github.com/eventlogging/eventlogging/internal/telemetry"
)

// Deps are what a role is handed besides its configuration. The zero
// value is usable: a discarding logger, the role's own metrics registry,
// no reloads, its own HTTP listener.
type Deps struct {
	// Logger; nil discards.
	Logger *slog.Logger
	// Metrics is the process's Prometheus registry with each package's
	// metrics; nil: the role makes its own.
	Metrics *Metrics
	// Reloader applies SIGHUP and --watch reloads to the role's schema
	// caches and stream configurations; nil: no reloads.
	Reloader *Reloader
	// Mux, when set, is where the role mounts its HTTP routes instead of
	// listening itself (standalone: one listener for every role).
	Mux *http.ServeMux
}

func (d Deps) logger() *slog.Logger {
	if d.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Logger
}

func (d Deps) metrics() *Metrics {
	if d.Metrics == nil {
		return NewMetrics()
	}
	return d.Metrics
}

// with fills in the defaults, so that the parts of a role share one
// logger and one registry.
func (d Deps) with() Deps {
	d.Logger, d.Metrics = d.logger(), d.metrics()
	return d
}

// Metrics is the Prometheus registry of one process and the metrics of
// each package, registered once. A nil *Metrics (offline tools) measures
// nothing.
type Metrics struct {
	reg     *prometheus.Registry
	kafka   *kafka.Metrics
	process *process.Metrics
	schema  *schema.Metrics
	sink    *sink.Metrics
	http    *telemetry.HTTPMetrics
}

// NewMetrics returns a registry with every package's metrics.
func NewMetrics() *Metrics {
	reg := telemetry.NewRegistry()
	return &Metrics{
		reg:     reg,
		kafka:   kafka.NewMetrics(reg),
		process: process.NewMetrics(reg),
		schema:  schema.NewMetrics(reg),
		sink:    sink.NewMetrics(reg),
		http:    telemetry.NewHTTPMetrics(reg),
	}
}

// Wrap instruments an HTTP handler under name.
func (m *Metrics) Wrap(name string, h http.Handler) http.Handler {
	return m.http.Wrap(name, h)
}

// Handler serves /metrics.
func (m *Metrics) Handler() http.Handler { return telemetry.Handler(m.reg) }

// metricsServer binds the /metrics listener of a role without its own
// HTTP listener (metrics.listen, else def; "off" disables it) and returns
// what serves it until ctx ends (nil when there is none). A configured
// address that cannot be bound is an error; the default one, taken by
// another process on the host (a second processor), only a warning: the
// role runs without /metrics.
func (m *Metrics) metricsServer(ctx context.Context, c config.Config, def string, log *slog.Logger) (func(context.Context) error, error) {
	addr := c.Metrics.Listen
	if addr == "off" {
		return nil, nil
	}
	if addr == "" {
		addr = def
	}
	ln, err := telemetry.Listen(ctx, addr)
	switch {
	case err != nil && c.Metrics.Listen == "":
		log.Warn("no /metrics: the default metrics address is taken (another role on this host?); set metrics.listen or --metrics-listen", "addr", addr, "err", err)
		return nil, nil
	case err != nil:
		return nil, err // nothing started yet
	}
	return func(ctx context.Context) error { return telemetry.Serve(ctx, ln, m.reg, log) }, nil
}

// lagMonitor returns what computes the consumer lag of groups (all
// eventlogging groups when empty) into the metrics until ctx ends.
func (m *Metrics) lagMonitor(c config.Config, kc kafka.Config, groups []string, log *slog.Logger) func(context.Context) error {
	kc.Metrics = m.kafka
	return func(ctx context.Context) error {
		return kafka.RunLagMonitor(ctx, kafka.LagMonitorConfig{Kafka: kc, Groups: groups, Interval: c.Metrics.LagInterval, Logger: log})
	}
}

// KafkaConfig is how every role reaches Kafka: brokers, client settings,
// TLS and SASL from the kafka section.
func KafkaConfig(c config.Config, log *slog.Logger) kafka.Config {
	kc := kafka.Config{Brokers: c.Kafka.Brokers, ClientID: c.Kafka.ClientID, Linger: c.Kafka.Linger, FetchMaxBytes: c.Kafka.FetchMaxBytes, FetchMinBytes: c.Kafka.FetchMinBytes, FetchMaxWait: c.Kafka.FetchMaxWait, Logger: log}
	k := c.Kafka
	if k.TLS {
		kc.TLS = &kafka.TLS{
			CAFile:             k.TLSCAFile,
			CertFile:           k.TLSCertFile,
			KeyFile:            k.TLSKeyFile,
			ServerName:         k.TLSServerName,
			InsecureSkipVerify: k.TLSInsecureSkipVerify,
		}
	}
	if k.SASLMechanism != "" {
		kc.SASL = &kafka.SASL{Mechanism: k.SASLMechanism, Username: k.SASLUsername, Password: k.SASLPassword}
	}
	return kc
}

func topicDefaults(c config.Config) kafka.TopicDefaults {
	return kafka.TopicDefaults{Partitions: c.Kafka.Partitions, ReplicationFactor: c.Kafka.ReplicationFactor}
}
