package role

import (
	"context"
	"errors"
	"fmt"
	"net"

	"golang.org/x/sync/errgroup"

	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/intake"
	"github.com/eventlogging/eventlogging/internal/iphash"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/kafka/keystore"
	"github.com/eventlogging/eventlogging/internal/process"
	"github.com/eventlogging/eventlogging/internal/schema"
	"github.com/eventlogging/eventlogging/internal/spool"
)

// Intake is the intake role: the HTTP intake (beacons, POST /v1/events)
// with its producer, spool and processing function. It listens on
// intake.listen with /metrics beside it, or, with Deps.Mux, answers
// through the handler standalone mounts at the root. In standalone it also
// runs a processor in the consumer group, on the same processing function.
type Intake struct {
	cfg           config.Config
	d             Deps
	withProcessor bool
	late          lateHandler
	ready
}

// NewIntake returns the intake of c; it starts nothing.
func NewIntake(c config.Config, d Deps) *Intake {
	return &Intake{cfg: c, d: d.with(), ready: newReady()}
}

// Run connects to Kafka, creates the topics, loads the IP key, builds the
// intake and serves until ctx ends; it is ready once it serves.
func (in *Intake) Run(ctx context.Context) error {
	c, log := in.cfg, in.d.Logger
	p, err := newPipeline(ctx, c, in.d)
	if err != nil {
		return err
	}
	defer p.close()
	g, gctx := errgroup.WithContext(ctx)
	// The rotator, the spool replayer, the canaries and the registry
	// follower (and, with a processor, a member of the consumer group).
	start := func() {
		if p.rot != nil {
			g.Go(func() error { return p.rot.Run(gctx) })
		}
		g.Go(func() error { return p.writer.Run(gctx) })
		g.Go(func() error { return p.server.RunCanaries(gctx, c.Intake.CanaryInterval, c.Intake.CanaryEvents) })
		// A schema registered anywhere is seen at once by the processing
		// function (the intake's synchronous path and the processor).
		g.Go(func() error { return watchRegistry(gctx, c, p.kc, p.res, log) })
		if in.withProcessor {
			g.Go(func() error { return runPipe(gctx, c, p.kc, p.proc, log) })
		}
	}
	if in.d.Mux == nil {
		ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", c.Intake.Listen)
		if err != nil {
			return fmt.Errorf("intake: %w", err)
		}
		start()
		handler := requestLog(serveMux(in.d.Metrics, "intake", p.server), c, log)
		g.Go(func() error { return intake.Serve(gctx, ln, handler, log) })
		log.Info("intake listening", "addr", ln.Addr().String(), "raw_topic", c.Intake.RawTopic)
	} else {
		in.late.set(p.server)
		start()
	}
	in.markReady()
	return g.Wait()
}

// pipeline holds the parts the serving roles share: Kafka producer, spool,
// writer, IP-key rotator, processor and intake server.
type pipeline struct {
	kc     kafka.Config
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
// builds the intake; Intake.Run runs its goroutines. Its schema cache and
// stream configurations are registered with d.Reloader for live reloads.
func newPipeline(ctx context.Context, c config.Config, d Deps) (*pipeline, error) {
	log, m := d.Logger, d.Metrics
	p := &pipeline{}
	p.kc = KafkaConfig(c, log)
	p.kc.Metrics = m.kafka
	ok := false
	defer func() {
		if !ok {
			p.close()
		}
	}()
	var err error
	p.prod, err = kafka.NewProducer(kafka.ProducerConfig{Kafka: p.kc, DeliveryTimeout: c.Intake.DeliveryTimeout, MaxBufferedRecords: c.Intake.BufferRecords, SyncLinger: c.Intake.SyncLinger})
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
	pd := d
	pd.Logger = log.With("component", "process")
	if p.proc, p.res, err = ProcessingFunction(c, hasher, pd); err != nil {
		return nil, err
	}
	if p.queue, err = spool.Open(c.Intake.SpoolDir, spool.Config{MaxBytes: c.Intake.SpoolMaxBytes, Logger: log}); err != nil {
		return nil, err
	}
	p.writer = intake.NewWriter(p.prod, p.queue, intake.WriterConfig{Topics: creator, OnRefused: p.proc.Refused, Logger: log.With("component", "intake")})
	proxies, err := intake.ParseTrustedProxies(c.Intake.TrustedProxies)
	if err != nil {
		return nil, err
	}
	streams, err := process.LoadStreamsFile(c.Process.StreamsFile)
	if err != nil {
		return nil, err
	}
	d.Reloader.addStreams(streams)
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
		Metrics:        intake.NewMetrics(m.reg, p.writer),
		Logger:         log.With("component", "intake"),
	})
	if err != nil {
		return nil, err
	}
	ok = true
	return p, nil
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
