package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/intake"
	"github.com/eventlogging/eventlogging/internal/iphash"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/kafka/keystore"
	"github.com/eventlogging/eventlogging/internal/logging"
	"github.com/eventlogging/eventlogging/internal/process"
	"github.com/eventlogging/eventlogging/internal/schema"
	"github.com/eventlogging/eventlogging/internal/spool"
)

const intakeHelp = `Usage: eventlogging intake [--config FILE] [flags]

Serves the HTTP intake against a Kafka cluster:

  GET  /beacon/event?<url-encoded JSON capsule>;   legacy beacon → raw topic, 204
       (also /beacon/event.gif and /event.gif)
  POST /v1/events                                  one JSON event or an array;
       validated inline: 201 all accepted, 207 mixed, 400 all invalid, with
       per-event results; ?hasty=true takes the raw path and answers 202
  GET  /v1/streams                                 the stream configuration
  GET  /static/eventlogging.js                     the browser client (ES module)
  GET  /metrics                                    Prometheus metrics
  GET  /healthz, /readyz                           liveness; readiness (Kafka answers)

While Kafka is unreachable, accepted events are fsync'd to a local spool
(intake.spool_dir) and replayed in order when it returns; when the spool is
full the intake answers 503 with Retry-After.

SIGHUP (or --watch) reloads the schema folder, the stream configuration and
log.level without a restart.`

// commonFlags are the flags every serving role shares.
type commonFlags struct {
	config, brokers, schemas, streams, listen string
	watch                                     bool
}

func (f *commonFlags) register(fs interface {
	StringVar(p *string, name, value, usage string)
	BoolVar(p *bool, name string, value bool, usage string)
}) {
	fs.StringVar(&f.config, "config", "", "configuration file (YAML)")
	fs.StringVar(&f.brokers, "kafka-brokers", "", "Kafka bootstrap addresses, comma-separated (kafka.brokers)")
	fs.StringVar(&f.schemas, "schemas", "", "schema folder (process.schemas_dir)")
	fs.StringVar(&f.streams, "streams", "", "Event Platform stream configuration file (process.streams_file)")
	fs.StringVar(&f.listen, "listen", "", "HTTP listen address (intake.listen, default :8080)")
	fs.BoolVar(&f.watch, "watch", false, "reload the schema folder, the stream configuration and log.level when their files change (SIGHUP always reloads)")
}

func (f *commonFlags) apply(c *config.Config) {
	if f.brokers != "" {
		c.Kafka.Brokers = strings.Split(f.brokers, ",")
	}
	if f.schemas != "" {
		c.Process.SchemasDir = f.schemas
	}
	if f.streams != "" {
		c.Process.StreamsFile = f.streams
	}
	if f.listen != "" {
		c.Intake.Listen = f.listen
	}
}

func runIntake(ctx context.Context, args []string, stderr io.Writer, log *slog.Logger, rt runtimeEnv) error {
	fs := newFlagSet("intake", intakeHelp, stderr)
	var f commonFlags
	f.register(fs)
	spoolDir := fs.String("spool-dir", "", "spool folder for events while Kafka is unreachable (intake.spool_dir)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c, err := config.Load(f.config)
	if err != nil {
		return err
	}
	f.apply(&c)
	if *spoolDir != "" {
		c.Intake.SpoolDir = *spoolDir
	}
	if err := c.Validate(); err != nil {
		return err
	}
	warnSkipped(c, log)
	m := newRoleMetrics()
	rl := newReloader(c, f.config, rt, f.watch, log)
	p, err := newPipeline(ctx, c, log, m, rl)
	if err != nil {
		return err
	}
	defer p.close()
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", c.Intake.Listen)
	if err != nil {
		return fmt.Errorf("intake: %w", err)
	}
	g, gctx := errgroup.WithContext(ctx)
	p.start(g, gctx, false)
	g.Go(func() error { return rl.Run(gctx) })
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.handler())
	mux.Handle("/", m.wrap("intake", p.server))
	handler := logging.Requests(mux, log.With("component", "http"), c.Log.RequestSample)
	g.Go(func() error { return intake.Serve(gctx, ln, handler, log) })
	log.Info("intake listening", "addr", ln.Addr().String(), "raw_topic", c.Intake.RawTopic)
	return g.Wait()
}

// pipeline holds the parts the serving roles share: Kafka producer, spool,
// writer, IP-key rotator, processor and intake server.
type pipeline struct {
	cfg    config.Config
	kc     kafka.Config
	log    *slog.Logger
	prod   *kafka.Producer
	queue  *spool.Queue
	writer *intake.Writer
	rot    *iphash.Rotator
	store  *keystore.Store
	proc   *process.Processor
	res    *schema.Resolver
	server *intake.Server
}

// newPipeline connects to Kafka, creates the topics, loads the IP key and
// builds the intake; start runs its goroutines. Its schema cache and
// stream configurations are registered with rl for live reloads.
func newPipeline(ctx context.Context, c config.Config, log *slog.Logger, m *roleMetrics, rl *reloader) (*pipeline, error) {
	p := &pipeline{cfg: c, log: log}
	p.kc = kafkaConfig(c, log)
	p.kc.Metrics = m.kafkaMetrics()
	ok := false
	defer func() {
		if !ok {
			p.close()
		}
	}()
	var err error
	p.prod, err = kafka.NewProducer(kafka.ProducerConfig{Kafka: p.kc, DeliveryTimeout: c.Intake.DeliveryTimeout, MaxBufferedRecords: c.Intake.BufferRecords})
	if err != nil {
		return nil, err
	}
	topics := []string{c.Intake.RawTopic, c.Process.ErrorTopic}
	if c.Process.MixedTopic != "-" {
		topics = append(topics, c.Process.MixedTopic)
	}
	for _, in := range c.Process.Inputs {
		topics = append(topics, in.Topic)
	}
	creator := p.prod.Topics(topicDefaults(c))
	if err := creator.Ensure(ctx, topics...); err != nil {
		if errors.Is(err, kafka.ErrAuthentication) {
			return nil, fmt.Errorf("kafka at %v: %w", c.Kafka.Brokers, err)
		}
		return nil, fmt.Errorf("kafka not reachable at %v: %w", c.Kafka.Brokers, err)
	}
	hasher, rot, store, err := sharedIPKey(ctx, c, p.kc, log)
	if err != nil {
		return nil, err
	}
	p.rot, p.store = rot, store
	if p.proc, p.res, err = newProcessor(c, hasher, m, rl, log.With("component", "process")); err != nil {
		return nil, err
	}
	if p.queue, err = spool.Open(c.Intake.SpoolDir, spool.Config{MaxBytes: c.Intake.SpoolMaxBytes, Logger: log}); err != nil {
		return nil, err
	}
	p.writer = intake.NewWriter(p.prod, p.queue, intake.WriterConfig{Topics: creator, Logger: log.With("component", "intake")})
	proxies, err := intake.ParseTrustedProxies(c.Intake.TrustedProxies)
	if err != nil {
		return nil, err
	}
	streams, err := loadStreams(c.Process.StreamsFile)
	if err != nil {
		return nil, err
	}
	rl.addStreams(streams)
	p.server, err = intake.NewServer(p.writer, p.proc, streams, intake.Config{
		RawTopic:       c.Intake.RawTopic,
		RecvFrom:       c.Intake.RecvFrom,
		MaxURLLength:   c.Intake.MaxURLLength,
		MaxBodyBytes:   c.Intake.MaxBodyBytes,
		MaxBatchEvents: c.Intake.MaxBatchEvents,
		CORSOrigin:     c.Intake.CORSOrigin,
		TrustedProxies: proxies,
		DropClientIP:   c.Process.IP == "drop",
		AckAfterKafka:  c.Intake.Ack == config.AckKafka,
		Metrics:        intake.NewMetrics(m.registerer(), p.writer),
		Logger:         log.With("component", "intake"),
	})
	if err != nil {
		return nil, err
	}
	ok = true
	return p, nil
}

func topicDefaults(c config.Config) kafka.TopicDefaults {
	return kafka.TopicDefaults{Partitions: c.Kafka.Partitions, ReplicationFactor: c.Kafka.ReplicationFactor}
}

// start runs the rotator and the spool replayer (and, with processor, a
// processor in the consumer group) in g.
func (p *pipeline) start(g *errgroup.Group, ctx context.Context, withProcessor bool) {
	if p.rot != nil {
		g.Go(func() error { return p.rot.Run(ctx) })
	}
	g.Go(func() error { return p.writer.Run(ctx) })
	g.Go(func() error { return p.server.RunCanaries(ctx, p.cfg.Intake.CanaryInterval, p.cfg.Intake.CanaryEvents) })
	// A schema registered anywhere is seen at once by the processing
	// function (the intake's synchronous path and the processor).
	g.Go(func() error { return watchRegistry(ctx, p.cfg, p.kc, p.res, p.log) })
	if withProcessor {
		g.Go(func() error { return runPipe(ctx, p.cfg, p.kc, p.proc, p.log) })
	}
}

func (p *pipeline) close() {
	if p.prod != nil {
		p.prod.Close()
	}
	if p.queue != nil {
		_ = p.queue.Close()
	}
	if p.store != nil {
		p.store.Close()
	}
}
