package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"runtime"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/eventlogging/eventlogging/internal/avrowire"
	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/iphash"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/kafka/keystore"
	"github.com/eventlogging/eventlogging/internal/lineformat"
	"github.com/eventlogging/eventlogging/internal/process"
	"github.com/eventlogging/eventlogging/internal/schema"
)

const processHelp = `Usage:
  eventlogging process [--config FILE] [flags]            Kafka consumer group
  eventlogging process --from FILE|- --to - [flags]       offline

Reads raw events, validates each against its schema and writes valid events
as capsules to eventlogging_<Schema> and eventlogging-valid-mixed, invalid
ones with the reasons to eventlogging_EventError.

Kafka mode joins the consumer group (process.group) over the raw topics
(process.inputs, each with its line format), commits offsets only after every
output of a batch is acknowledged by all in-sync replicas, and stops
gracefully on SIGTERM. The IP-hash key is shared by every processor through a
compacted topic (process.ip_key_topic). SIGHUP (or --watch) reloads the
schema folder, the stream configuration and log.level in place; with a
registry, a newly registered schema is seen at once without a reload.

Offline mode reads raw lines from a file or stdin and prints every output
record as one JSON line {"topic": "...", "key": null, "value": {...}} — the
same processing function as the Kafka path. It uses every core (--workers)
and writes the records in input order, the same bytes for any --workers.

Line format specifiers: %q url-encoded JSON capsule, %j plain JSON capsule,
%t YYYY-MM-DDTHH:MM:SS receive time, %D ISO-8601 dt, %h client IP, %o ignored,
%{name}s string, %{name}d integer, %{name}i up to the next TAB. A space
matches any run of whitespace.`

type processFlags struct {
	config, brokers, group, rawTopic                    string
	from, to, format, schemas                           string
	ip, ipHashAlg, ipHashKeyHex                         string
	trust                                               bool
	mixedTopic, mixedExclude, errorTopic, topicTemplate string
	metricsListen                                       string
	processorID, streams                                string
	watch                                               bool
	workers                                             int
}

func runProcess(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, log *slog.Logger, rt runtimeEnv) error {
	fs := newFlagSet("process", processHelp, stderr)
	var f processFlags
	fs.StringVar(&f.config, "config", "", "configuration file (YAML)")
	fs.StringVar(&f.brokers, "kafka-brokers", "", "Kafka bootstrap addresses, comma-separated (kafka.brokers)")
	fs.StringVar(&f.group, "group", "", "consumer group (process.group, default eventlogging-processor)")
	fs.StringVar(&f.rawTopic, "raw-topic", "", "consume only this raw topic, read with --format (replaces process.inputs)")
	fs.StringVar(&f.from, "from", "", "offline: read raw lines from FILE, or - for stdin")
	fs.StringVar(&f.to, "to", "-", "offline: write output records to FILE, or - for stdout")
	fs.StringVar(&f.format, "format", "", "line format of the raw records (default "+config.DefaultRawFormat+")")
	fs.StringVar(&f.streams, "streams", "", "Event Platform stream configuration file (process.streams_file), e.g. examples/streams.yaml")
	fs.StringVar(&f.schemas, "schemas", "", "schema folder <Name>/<revision>.json|yaml (process.schemas_dir, default ./schemas)")
	fs.StringVar(&f.ip, "ip", "", "client IP policy: hash, drop or keep (process.ip, default hash)")
	fs.StringVar(&f.ipHashAlg, "ip-hash-alg", "", "HMAC for --ip hash: sha256 or sha1 (process.ip_hash_alg, default sha256)")
	fs.StringVar(&f.ipHashKeyHex, "ip-hash-key-hex", "", "offline: the raw HMAC key bytes in hex, for reproducible hashes (default: a random key)")
	fs.BoolVar(&f.trust, "trust-client-capsule-fields", false, "let client-sent recvFrom, seqId, timestamp, clientIp override server values (the 2015 behaviour)")
	fs.StringVar(&f.mixedTopic, "mixed-topic", "", `topic receiving every valid event too ("-" disables; default eventlogging-valid-mixed)`)
	fs.StringVar(&f.mixedExclude, "mixed-exclude", "", "regex of schemas kept out of the mixed topic")
	fs.StringVar(&f.errorTopic, "error-topic", "", "topic of EventErrors (default eventlogging_EventError)")
	fs.StringVar(&f.topicTemplate, "topic-template", "", "per-schema topic name, with {schema} and {revision} (default eventlogging_{schema})")
	fs.StringVar(&f.metricsListen, "metrics-listen", "", `address of /metrics (process.metrics_listen, else metrics.listen, default :9101; "off" disables it)`)
	fs.StringVar(&f.processorID, "processor-id", "", "name of this processor in EventErrors (process.processor_id, default host-pid)")
	fs.IntVar(&f.workers, "workers", runtime.NumCPU(), "offline: process lines on `N` goroutines, one per CPU by default; the output is in input order, the same bytes for every N")
	fs.BoolVar(&f.watch, "watch", false, "reload the schema folder, the stream configuration and log.level when their files change (SIGHUP always reloads)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := config.Load(f.config)
	if err != nil {
		return err
	}
	f.apply(&cfg)
	if err := cfg.Validate(); err != nil {
		return err
	}
	warnSkipped(cfg, log)
	if f.from != "" {
		return processOffline(ctx, cfg, f, stdin, stdout, log)
	}
	workersSet := false
	fs.Visit(func(fl *flag.Flag) { workersSet = workersSet || fl.Name == "workers" })
	if workersSet {
		return fmt.Errorf("%w: process: --workers is for offline mode; Kafka mode sets process.parallelism", errUsage)
	}
	if f.ipHashKeyHex != "" {
		return fmt.Errorf("%w: process: --ip-hash-key-hex is for offline mode; Kafka mode shares its key through %s", errUsage, cfg.Process.IPKeyTopic)
	}
	return processKafka(ctx, cfg, newReloader(cfg, f.config, rt, f.watch, log), log)
}

// apply lays flags over the loaded configuration.
func (f processFlags) apply(c *config.Config) {
	p := &c.Process
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	if f.brokers != "" {
		c.Kafka.Brokers = strings.Split(f.brokers, ",")
	}
	set(&p.Group, f.group)
	set(&p.SchemasDir, f.schemas)
	set(&p.StreamsFile, f.streams)
	set(&p.IP, f.ip)
	set(&p.IPHashAlg, f.ipHashAlg)
	set(&p.MixedTopic, f.mixedTopic)
	set(&p.MixedExclude, f.mixedExclude)
	set(&p.ErrorTopic, f.errorTopic)
	set(&p.TopicTemplate, f.topicTemplate)
	set(&p.ProcessorID, f.processorID)
	set(&c.Process.MetricsListen, f.metricsListen)
	if f.trust {
		p.TrustClientCapsuleFields = true
	}
	switch {
	case f.rawTopic != "":
		format := f.format
		if format == "" {
			format = config.DefaultRawFormat
		}
		p.Inputs = []config.Input{{Topic: f.rawTopic, Format: format}}
	case f.format != "":
		for i := range p.Inputs {
			p.Inputs[i].Format = f.format
		}
	}
}

// loadStreams reads the stream configuration file; an empty configuration
// when none is set.
func loadStreams(path string) (*process.Streams, error) {
	if path == "" {
		return process.NewStreams(nil)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("process.streams_file: %w", err)
	}
	st, err := process.ParseStreams(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}

// newProcessor builds the processing function from the configuration, and
// registers its schema cache and stream configuration with rl (nil: no
// reloads) for live reloads. It returns the schema cache too, for
// watchRegistry.
func newProcessor(c config.Config, hasher process.IPHasher, m *roleMetrics, rl *reloader, log *slog.Logger) (*process.Processor, *schema.Resolver, error) {
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
	streams, err := loadStreams(p.StreamsFile)
	if err != nil {
		return nil, nil, err
	}
	res, err := schemaResolver(c, m)
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
	rl.addResolver(res)
	rl.addStreams(streams)
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
		Metrics:                  m.processMetrics(),
		Logger:                   log,
	})
	if err != nil {
		return nil, nil, err
	}
	return proc, res, nil
}

func processOffline(ctx context.Context, c config.Config, f processFlags, stdin io.Reader, stdout io.Writer, log *slog.Logger) error {
	if f.workers < 1 {
		return fmt.Errorf("%w: process: --workers %d: want at least 1", errUsage, f.workers)
	}
	if len(c.Process.Inputs) != 1 && f.format == "" {
		return fmt.Errorf("%w: process: offline mode needs --format when the config has several inputs", errUsage)
	}
	format, err := lineformat.Compile(c.Process.Inputs[0].Format)
	if err != nil {
		return err
	}
	if err := process.CheckFormat(format.String()); err != nil {
		return err
	}
	alg, err := iphash.ParseAlg(c.Process.IPHashAlg)
	if err != nil {
		return err
	}
	var key []byte
	if f.ipHashKeyHex != "" {
		if key, err = hex.DecodeString(f.ipHashKeyHex); err != nil || len(key) == 0 {
			return fmt.Errorf("%w: process: --ip-hash-key-hex: not a hex string", errUsage)
		}
	} else {
		key = make([]byte, 64)
		_, _ = rand.Read(key) // never fails (crypto/rand)
		if c.Process.IP == "hash" {
			log.Warn("offline: no --ip-hash-key-hex, hashing client IPs with a random key; hashes differ from run to run")
		}
	}
	proc, _, err := newProcessor(c, iphash.NewHasher(alg, key), nil, nil, log)
	if err != nil {
		return err
	}
	in := stdin
	if f.from != "-" {
		file, err := os.Open(f.from)
		if err != nil {
			return fmt.Errorf("process --from: %w", err)
		}
		defer file.Close()
		in = file
	}
	out := stdout
	if f.to != "-" {
		file, err := os.Create(f.to)
		if err != nil {
			return fmt.Errorf("process --to: %w", err)
		}
		defer file.Close()
		out = file
	}
	_, err = proc.RunOffline(ctx, format, in, out, process.OfflineConfig{Workers: f.workers, Logger: log})
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
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

// kafkaConfig is how every role reaches Kafka: brokers, client settings,
// TLS and SASL from the kafka section.
func kafkaConfig(c config.Config, log *slog.Logger) kafka.Config {
	kc := kafka.Config{Brokers: c.Kafka.Brokers, ClientID: c.Kafka.ClientID, Linger: c.Kafka.Linger, FetchMaxBytes: c.Kafka.FetchMaxBytes, Logger: log}
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

func processKafka(ctx context.Context, c config.Config, rl *reloader, log *slog.Logger) error {
	log = log.With("component", "process")
	m := newRoleMetrics()
	kc := kafkaConfig(c, log)
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
	for _, in := range c.Process.Inputs {
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
	proc, res, err := newProcessor(c, hasher, m, rl, log)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return rl.Run(gctx) })
	g.Go(func() error { return watchRegistry(gctx, c, kc, res, log) })
	// First: a metrics address that cannot be bound stops the start.
	// process.metrics_listen (--metrics-listen), else metrics.listen.
	mc := c
	mc.Metrics.Listen = c.ProcessMetricsListen()
	if err := m.serveMetrics(gctx, g, mc, ":9101", kc, []string{c.Process.Group}, log); err != nil {
		return err
	}
	if rot != nil {
		g.Go(func() error { return rot.Run(gctx) })
	}
	g.Go(func() error { return runPipe(gctx, c, kc, proc, log) })
	return g.Wait()
}

// runPipe runs one processor member of the consumer group until ctx is done.
func runPipe(ctx context.Context, c config.Config, kc kafka.Config, proc *process.Processor, log *slog.Logger) error {
	var inputs []process.Input
	var rawTopics []string
	for _, in := range c.Process.Inputs {
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
		Logger:             log,
	}, tf)
	if err != nil {
		return err
	}
	log.Info("processing", "group", c.Process.Group, "topics", rawTopics, "brokers", c.Kafka.Brokers)
	return pipe.Run(ctx)
}
