package role

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/intake"
	"github.com/eventlogging/eventlogging/internal/kafka/embedded"
)

// Standalone is every role in one process on an embedded broker
// persisting to standalone.data_dir, behind one HTTP listener
// (intake.listen): the intake at the root, the registry under /registry/,
// the dashboard under /dashboard/, /metrics.
type Standalone struct {
	cfg config.Config
	d   Deps
}

// NewStandalone returns the standalone pipeline of c; it starts nothing.
// c is complete (data-directory defaults applied, validated); its Kafka
// and registry addresses are the embedded broker's and its own.
func NewStandalone(c config.Config, d Deps) *Standalone {
	return &Standalone{cfg: c, d: d.with()}
}

// Run binds the HTTP listener, starts the embedded broker and the roles,
// and runs until ctx ends.
func (s *Standalone) Run(ctx context.Context) error {
	c, d, log := s.cfg, s.d, s.d.Logger
	// The HTTP address first: when it is taken (another standalone), say
	// so before the broker starts and the schema folder is imported.
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", c.Intake.Listen)
	if err != nil {
		return fmt.Errorf("standalone: %w", err)
	}
	emb, err := embedded.Start(embedded.Config{
		DataDir:     filepath.Join(c.Standalone.DataDir, BrokerDir),
		Listen:      c.Standalone.KafkaListen,
		Partitions:  c.Kafka.Partitions,
		RetentionMs: c.Standalone.Retention.Milliseconds(),
		Logger:      log,
	})
	if err != nil {
		_ = ln.Close()
		return err
	}
	// The embedded broker closes after everything else stopped.
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

	base := "http://" + HostAddr(ln.Addr())
	c.Registry.URL = base + "/registry"
	// One listener: each role mounts its routes on the mux when it is
	// built; until then its paths answer 503 through the intake's.
	d.Mux = http.NewServeMux()
	in := NewIntake(c, d)
	in.withProcessor = true
	d.Mux.Handle("GET /dashboard", http.RedirectHandler("/dashboard/", http.StatusFound))
	// A newcomer opening the address in a browser lands on the dashboard.
	d.Mux.Handle("GET /{$}", http.RedirectHandler("/dashboard/", http.StatusFound))
	d.Mux.Handle("GET /metrics", d.Metrics.Handler())
	d.Mux.Handle("/", d.Metrics.Wrap("intake", &in.late))
	dc := c
	dc.Dashboard.Health = map[string]string{"intake": base + "/readyz", "registry": c.Registry.URL + "/"}
	dash := NewDashboard(dc, d)
	dash.Expect = nil
	// The dashboard reads the registry this process serves in process.
	dash.Registry = InProcess(d.Mux)
	kc := KafkaConfig(c, log)

	// The start order; they stop in the reverse order.
	return RunInOrder(ctx,
		// HTTP stops last: the sinks and the processor resolve schemas
		// through the registry it serves, also while they finish their
		// last batch.
		runFunc(func(ctx context.Context) error {
			if err := intake.Serve(ctx, ln, requestLog(d.Mux, c, log), log); err != nil {
				log.Error("http server", "err", err)
			}
			return nil
		}),
		dash,
		// Ready once the schema folder is registered: the processor
		// resolves through the registry.
		NewRegistry(c, d),
		d.Reloader,
		in, // the intake and a processor
		NewSinks(c, d),
		runFunc(d.Metrics.lagMonitor(c, kc, nil, log)),
		runFunc(func(ctx context.Context) error {
			if err := writeStandaloneInfo(c.Standalone.DataDir, ln.Addr()); err != nil {
				return err
			}
			// listen is the address bound: with port 0, the port chosen.
			log.Info("standalone running", "listen", ln.Addr().String(), "http", base, "registry", c.Registry.URL, "kafka", c.Kafka.Brokers, "data_dir", c.Standalone.DataDir, "admin_networks", c.Security.AdminNetworks)
			<-ctx.Done()
			return nil
		}),
	)
}

// runFunc is a function as a Role.
type runFunc func(ctx context.Context) error

func (f runFunc) Run(ctx context.Context) error { return f(ctx) }

// BrokerDir is the subfolder of the standalone data directory holding the
// embedded broker's data and broker.json.
const BrokerDir = "kafka"

// standaloneFile, in the standalone data directory, tells other commands
// where the standalone's HTTP endpoints are.
const standaloneFile = "standalone.json"

// StandaloneInfo is what a standalone tells other commands (tail, bench,
// status) about itself in its data directory.
type StandaloneInfo struct {
	// HTTP is the base URL of its HTTP listener.
	HTTP string `json:"http"`
	// Registry is the URL of its schema registry.
	Registry string `json:"registry"`
}

// ReadStandaloneInfo reads the endpoints a standalone wrote in dataDir.
func ReadStandaloneInfo(dataDir string) (StandaloneInfo, bool) {
	var info StandaloneInfo
	b, err := os.ReadFile(filepath.Join(dataDir, standaloneFile))
	if err != nil || json.Unmarshal(b, &info) != nil {
		return StandaloneInfo{}, false
	}
	return info, true
}

// writeStandaloneInfo records the HTTP endpoints in the data directory for
// other commands (tail finds the registry there).
func writeStandaloneInfo(dataDir string, addr net.Addr) error {
	host := HostAddr(addr)
	info := StandaloneInfo{HTTP: "http://" + host, Registry: "http://" + host + "/registry"}
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
