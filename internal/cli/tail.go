package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/eventlogging/eventlogging/internal/avrowire"
	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/inspect"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/kafka/embedded"
	"github.com/eventlogging/eventlogging/internal/role"
	"github.com/twmb/franz-go/pkg/kerr"
)

type tailFlags struct {
	dataDir, schema, grep string
	registry              string
	fromBeginning, pretty bool
	count                 int
	timeout               time.Duration
}

func runTail(ctx context.Context, args []string, e env) error {
	stdout, stderr := e.stdout, e.stderr
	fs := newFlagSet("tail", helpText("tail"), stderr)
	var f tailFlags
	o := newOverlay(fs, "configuration `FILE` whose kafka section (brokers, TLS, SASL) and registry.url to use, e.g. --config /etc/eventlogging.yaml",
		flagBrokers.withUsage("Kafka bootstrap addresses as `host:port,...` (kafka.brokers, e.g. kafka1:9092,kafka2:9092), as every command names it; default: the local standalone broker of --data-dir"))
	fs.StringVar(o.values[0], "brokers", "", "alias of --kafka-brokers (its former name): `host:port,...`")
	fs.StringVar(&f.dataDir, "data-dir", "data", "data directory `DIR` of the local standalone (\"eventlogging standalone --data-dir\"), searched for broker.json when --kafka-brokers and --config are not set")
	fs.StringVar(&f.registry, "registry", "", "schema registry `URL` used to decode Avro records (Confluent wire format) to JSON, e.g. http://localhost:8080/registry; default: the local standalone's, when --kafka-brokers is not set")
	fs.BoolVar(&f.fromBeginning, "from-beginning", false, "print every record the topics still hold, then follow (default: only records produced after tail starts)")
	fs.BoolVar(&f.pretty, "pretty", false, "indent each JSON value over several lines")
	fs.StringVar(&f.schema, "schema", "", "print only events of schema `NAME`: top-level \"schema\" equal to NAME, or a \"$schema\" path with NAME as an element or title, e.g. --schema SearchQuery, --schema analytics/button_click")
	fs.StringVar(&f.grep, "grep", "", "print only values matching the regular expression `REGEX` (RE2), e.g. --grep '\"wiki\":\"enwiki\"'")
	fs.IntVar(&f.count, "count", 0, "stop after printing `N` records, e.g. --count 10 (default 0: no limit)")
	fs.DurationVar(&f.timeout, "timeout", 0, "stop after `DURATION`, e.g. --timeout 30s or 5m (default 0: no limit)")
	flagArgs, topics := splitArgs(fs, args)
	if err := parseFlags(fs, flagArgs); err != nil {
		return err
	}
	if len(topics) == 0 {
		return fmt.Errorf("%w: tail: no topic given (eventlogging tail [flags] TOPIC [TOPIC...])", errUsage)
	}
	if f.count < 0 {
		return fmt.Errorf("%w: tail: --count %d: must be 0 or more", errUsage, f.count)
	}
	if f.timeout < 0 {
		return fmt.Errorf("%w: tail: --timeout %v: must be 0 or more", errUsage, f.timeout)
	}
	pc := inspect.PrintConfig{
		Topics: topics, FromBeginning: f.fromBeginning, Count: f.count, Pretty: f.pretty, Schema: f.schema,
		// --count without --timeout reads what the topics hold: fewer
		// records than asked for end the read instead of waiting forever.
		StopAtEnd: f.fromBeginning && f.count > 0 && f.timeout == 0,
		Logger:    slog.Default().With("component", "tail"),
	}
	// A following tail waits for a topic that does not exist yet: the
	// processor makes a schema's topic with its first event, and a user
	// who tails just after sending it must see it.
	pc.WaitForTopics = !pc.StopAtEnd
	pc.OnWait = func(missing []string) {
		fmt.Fprintf(stderr, "tail: waiting for %s to exist (a topic is made with its first record; --timeout D or Ctrl-C to stop)\n", strings.Join(missing, ", "))
	}
	if f.grep != "" {
		re, err := regexp.Compile(f.grep)
		if err != nil {
			return fmt.Errorf("%w: tail: --grep: %w", errUsage, err)
		}
		pc.Grep = re
	}
	kc, c, local, err := clusterFromFlags(o.config, o.value(flagBrokers.name), f.dataDir, pc.Logger)
	if err != nil {
		return err
	}
	kc.ClientID = "eventlogging-tail"
	pc.Kafka = kc
	switch {
	case f.registry != "":
	case o.config != "":
		f.registry = c.Registry.URL
	case local:
		info, _ := role.ReadStandaloneInfo(f.dataDir)
		f.registry = info.Registry
	}
	if f.registry != "" {
		if pc.Avro, err = avrowire.New(f.registry, 0); err != nil {
			return err
		}
	}
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
	}
	printed, err := inspect.PrintRecords(ctx, pc, stdout)
	if pc.StopAtEnd && errors.Is(err, kerr.UnknownTopicOrPartition) {
		err = fmt.Errorf("%w (it is made with its first record: add --timeout D to wait for it)", err)
	}
	if pc.StopAtEnd && printed < f.count && ctx.Err() == nil {
		fmt.Fprintf(stderr, "tail: %d of %d records: the end of the topics (add --timeout D to wait for new ones)\n", printed, f.count)
	}
	return err
}

// localBrokers finds the broker of a local standalone through the
// broker.json in dataDir, or in the broker's subfolder of a standalone data
// directory.
func localBrokers(dataDir string) ([]string, error) {
	dirs := []string{dataDir, filepath.Join(dataDir, role.BrokerDir)}
	var looked []string
	for _, d := range dirs {
		path := filepath.Join(d, embedded.BrokerFile)
		if _, err := os.Stat(path); err == nil {
			return embedded.LocalBrokers(d)
		}
		looked = append(looked, path)
	}
	return nil, fmt.Errorf(`%w: give --kafka-brokers HOST:PORT,… (or --config FILE), or start "eventlogging standalone" and give its --data-dir DIR (looked for %s)`, embedded.ErrNoLocalBroker, strings.Join(looked, " and "))
}

// clusterFromFlags is how tail and bench reach Kafka: with a configuration
// file, its kafka section (brokers, TLS, SASL), --kafka-brokers overriding
// the addresses; else --kafka-brokers; else the local standalone's broker in dataDir
// (local is then true). c is the loaded configuration, if any.
func clusterFromFlags(configPath, brokers, dataDir string, log *slog.Logger) (kc kafka.Config, c config.Config, local bool, err error) {
	kc = kafka.Config{Logger: log}
	if configPath != "" {
		if c, err = config.Load(configPath); err != nil {
			return kc, c, false, err
		}
		kc = role.KafkaConfig(c, log)
	}
	switch {
	case brokers != "":
		kc.Brokers = strings.Split(brokers, ",")
	case configPath == "":
		if kc.Brokers, err = localBrokers(dataDir); err != nil {
			return kc, c, false, err
		}
		local = true
	}
	return kc, c, local, nil
}
