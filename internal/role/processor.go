package role

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/eventlogging/eventlogging/internal/avrowire"
	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/iphash"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/kafka/keystore"
	"github.com/eventlogging/eventlogging/internal/lineformat"
	"github.com/eventlogging/eventlogging/internal/process"
	"github.com/eventlogging/eventlogging/internal/registry"
	"github.com/eventlogging/eventlogging/internal/schema"
)

// Processor is the processor role: a member of the consumer group
// process.group over the raw topics, with the shared IP-hash key, its
// /metrics listener and the consumer lag.
type Processor struct {
	cfg config.Config
	d   Deps
}

// NewProcessor returns the processor of c; it starts nothing.
func NewProcessor(c config.Config, d Deps) *Processor {
	return &Processor{cfg: c, d: d.with()}
}

// Run creates the topics, loads the shared IP key, and processes until ctx
// ends; the batch in hand is finished and committed before it returns.
func (p *Processor) Run(ctx context.Context) error {
	c, m := p.cfg, p.d.Metrics
	log := p.d.Logger.With("component", "process")
	kc := KafkaConfig(c, log)
	kc.Metrics = m.kafka
	admin, err := kafka.NewClient(kc)
	if err != nil {
		return err
	}
	defer admin.Close()
	want := []string{c.Process.ErrorTopic}
	if c.Process.MixedTopic != "-" {
		want = append(want, c.Process.MixedTopic)
	}
	for _, in := range c.ProcessInputs() {
		want = append(want, in.Topic)
	}
	// Create the raw, error and mixed topics before consuming.
	if err := kafka.NewTopics(admin, topicDefaults(c)).Ensure(ctx, want...); err != nil {
		return err
	}
	hasher, rot, store, err := sharedIPKey(ctx, c, kc, log)
	if err != nil {
		return err
	}
	if store != nil {
		defer store.Close()
	}
	d := p.d
	d.Logger = log
	proc, res, err := ProcessingFunction(c, hasher, d)
	if err != nil {
		return err
	}
	// First: a metrics address that cannot be bound stops the start.
	// process.metrics_listen (--metrics-listen), else metrics.listen.
	mc := c
	mc.Metrics.Listen = c.ProcessMetricsListen()
	serveMetrics, err := m.metricsServer(ctx, mc, ":9101", log)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return watchRegistry(gctx, c, kc, res, log) })
	if serveMetrics != nil {
		g.Go(func() error { return serveMetrics(gctx) })
	}
	g.Go(func() error { return m.lagMonitor(mc, kc, []string{c.Process.Group}, log)(gctx) })
	if rot != nil {
		g.Go(func() error { return rot.Run(gctx) })
	}
	g.Go(func() error { return runPipe(gctx, c, kc, proc, log) })
	return g.Wait()
}

// ProcessingFunction builds the processing function of c, and registers
// its schema cache and stream configuration with d.Reloader for live
// reloads. It returns the schema cache too, for watchRegistry. d.Metrics
// nil measures nothing (offline).
func ProcessingFunction(c config.Config, hasher process.IPHasher, d Deps) (*process.Processor, *schema.Resolver, error) {
	p := c.Process
	policy, err := process.ParseIPPolicy(p.IP)
	if err != nil {
		return nil, nil, err
	}
	var exclude *regexp.Regexp
	if p.MixedExclude != "" {
		exclude = regexp.MustCompile(p.MixedExclude) // validated by config.Validate
	}
	if st, err := os.Stat(p.SchemasDir); c.Registry.URL == "" && (err != nil || !st.IsDir()) {
		return nil, nil, fmt.Errorf("schema folder %q: not a readable directory (set --schemas or process.schemas_dir)", p.SchemasDir)
	}
	streams, err := process.LoadStreamsFile(p.StreamsFile)
	if err != nil {
		return nil, nil, err
	}
	// Offline (d.Metrics nil) measures nothing.
	var pm *process.Metrics
	var sm *schema.Metrics
	if d.Metrics != nil {
		pm, sm = d.Metrics.process, d.Metrics.schema
	}
	res, err := schemaResolver(c, sm)
	if err != nil {
		return nil, nil, err
	}
	var avro process.AvroEncoder
	if u := c.Registry.URL; u != "" {
		codec, err := avrowire.New(u, 0)
		if err != nil {
			return nil, nil, err
		}
		avro = codec
	}
	d.Reloader.addResolver(res)
	d.Reloader.addStreams(streams)
	proc, err := process.New(res, hasher, process.Config{
		IPPolicy:                 policy,
		TrustClientCapsuleFields: p.TrustClientCapsuleFields,
		TopicTemplate:            p.TopicTemplate,
		MixedTopic:               p.MixedTopic,
		MixedExclude:             exclude,
		ErrorTopic:               p.ErrorTopic,
		ProcessorID:              p.ProcessorID,
		Streams:                  streams,
		Avro:                     avro,
		Metrics:                  pm,
		Logger:                   d.Logger,
	})
	if err != nil {
		return nil, nil, err
	}
	return proc, res, nil
}

// schemaResolver resolves schemas through the registry when one is
// configured, else from the schema folder.
func schemaResolver(c config.Config, m *schema.Metrics) (*schema.Resolver, error) {
	var src schema.Source = schema.NewDirSource(c.Process.SchemasDir)
	if c.Registry.URL != "" {
		cl, err := registry.NewClient(c.Registry.URL, nil)
		if err != nil {
			return nil, err
		}
		src = cl
	}
	return schema.NewResolver(src, schema.ResolverConfig{
		NegativeTTL: c.Process.NegativeCacheTTL, Metrics: m, Compiler: schema.NewCompiler(schemaLimits(c)),
	}), nil
}

// schemaLimits are the limits on compiling a schema (registry section).
func schemaLimits(c config.Config) schema.Limits {
	r := c.Registry
	return schema.Limits{
		MaxSchemaBytes:    r.MaxSchemaBytes,
		MaxPatterns:       r.MaxSchemaPatterns,
		MaxPatternBytes:   r.MaxPatternBytes,
		MaxPatternProgram: r.MaxPatternProgram,
		CompileTimeout:    r.CompileTimeout,
		MaxConcurrent:     r.MaxConcurrentCompiles,
		Wait:              r.CompileWait,
	}
}

// rotatingHasher hashes with the rotator's current key.
type rotatingHasher struct{ r *iphash.Rotator }

func (h rotatingHasher) Hash(ip string) string { return h.r.Current().Hash(ip) }

// sharedIPKey loads the shared IP-hash key from Kafka (hash policy only);
// the rotator must then Run to follow rotations. All nil for other policies.
func sharedIPKey(ctx context.Context, c config.Config, kc kafka.Config, log *slog.Logger) (process.IPHasher, *iphash.Rotator, *keystore.Store, error) {
	if c.Process.IP != "hash" {
		return nil, nil, nil, nil
	}
	alg, err := iphash.ParseAlg(c.Process.IPHashAlg)
	if err != nil {
		return nil, nil, nil, err
	}
	store, err := keystore.New(kc, c.Process.IPKeyTopic)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := store.EnsureTopic(ctx, c.Kafka.ReplicationFactor); err != nil {
		store.Close()
		return nil, nil, nil, err
	}
	host, _ := os.Hostname()
	rot := iphash.NewRotator(store, iphash.RotatorConfig{Alg: alg, Period: c.Process.IPKeyPeriod, Logger: log, Writer: fmt.Sprintf("%s-%d", host, os.Getpid())})
	if err := rot.Init(ctx); err != nil {
		store.Close()
		return nil, nil, nil, fmt.Errorf("ip-hash key: %w", err)
	}
	return rotatingHasher{rot}, rot, store, nil
}

// runPipe runs one processor member of the consumer group until ctx is done.
func runPipe(ctx context.Context, c config.Config, kc kafka.Config, proc *process.Processor, log *slog.Logger) error {
	var inputs []process.Input
	var rawTopics, extra []string
	for _, in := range c.ProcessInputs() {
		if !slices.Contains(c.Process.Inputs, in) {
			extra = append(extra, in.Topic)
		}
		format, err := lineformat.Compile(in.Format)
		if err != nil {
			return err
		}
		if err := process.CheckFormat(in.Format); err != nil {
			return err
		}
		inputs = append(inputs, process.Input{Topic: in.Topic, Format: format})
		rawTopics = append(rawTopics, in.Topic)
	}
	// The raw topics read by default beyond process.inputs (the
	// server-side one): the intake of standalone makes the others.
	if len(extra) > 0 {
		if err := ensureTopics(ctx, c, kc, extra); err != nil {
			return err
		}
	}
	tf, err := proc.Transform(inputs)
	if err != nil {
		return err
	}
	pipe, err := kafka.NewPipe(kafka.PipeConfig{
		Kafka:              kc,
		Group:              c.Process.Group,
		Topics:             rawTopics,
		Parallelism:        c.Process.Parallelism,
		MaxPollRecords:     c.Process.MaxPollRecords,
		SessionTimeout:     c.Kafka.SessionTimeout,
		OutputTopics:       topicDefaults(c),
		CreateOutputTopics: true,
		OnRefused:          proc.Refused,
		Logger:             log,
	}, tf)
	if err != nil {
		return err
	}
	log.Info("processing", "group", c.Process.Group, "topics", rawTopics, "brokers", c.Kafka.Brokers)
	return pipe.Run(ctx)
}

// ensureTopics creates the topics that do not exist yet, with the
// configured partitions and replication.
func ensureTopics(ctx context.Context, c config.Config, kc kafka.Config, topics []string) error {
	cl, err := kafka.NewClient(kc)
	if err != nil {
		return err
	}
	defer cl.Close()
	return kafka.NewTopics(cl, topicDefaults(c)).Ensure(ctx, topics...)
}

// watchRegistry drops a resolver's unknown-schema entries for every
// subject the registry's log shows registered, from now on (when a
// registry is configured). It runs until ctx is done.
func watchRegistry(ctx context.Context, c config.Config, kc kafka.Config, res *schema.Resolver, log *slog.Logger) error {
	if c.Registry.URL == "" || res == nil {
		return nil
	}
	return registry.Watch(ctx, registry.WatchConfig{Kafka: kc, Topic: c.Registry.Topic, Logger: log}, func(subject string) {
		if n := res.Forget(subject); n > 0 {
			log.Debug("schema registered: unknown-schema cache entries dropped", "subject", subject, "entries", n)
		}
	})
}
