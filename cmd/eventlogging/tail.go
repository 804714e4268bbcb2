package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/eventlogging/eventlogging/internal/avrowire"
	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/kafka/embedded"
	"github.com/eventlogging/eventlogging/internal/schema"
)

const tailHelp = `Usage:
  eventlogging tail [flags] TOPIC [TOPIC...]

Prints the value of each record of the topics as one JSON line on stdout, as
records arrive: only records produced after tail starts, or, with
--from-beginning, every record the topics still hold. A value that is not
JSON is printed as a JSON string, a null value as null. tail reads without a
consumer group, so it never moves anyone's committed offsets. Flags may come
before or after the topics.

The broker is --kafka-brokers when given (--brokers is the same flag, its
former name); with --config, the configuration's kafka section (brokers,
TLS, SASL: how to reach a secured cluster; --kafka-brokers still overrides
the addresses); otherwise the local standalone broker ("eventlogging
standalone") found through the broker.json it writes in its data directory
(--data-dir, or its kafka subfolder).

Filters (a record is printed when it passes every filter given):
  --schema NAME  the value's top-level "schema" field is NAME (EventLogging
                 capsules and EventErrors), or its "$schema" path has NAME as
                 a path element or title: "$schema":
                 "/analytics/button_click/1.0.0" matches --schema
                 button_click and --schema analytics/button_click
  --grep REGEX   the raw value matches the regular expression (RE2 syntax)

tail stops after --count printed records, after --timeout, or on Ctrl-C, and
exits with status 0 in each case. With --from-beginning and --count but no
--timeout, it also stops at the end of what the topics hold when they hold
fewer matching records (and says so on stderr); add --timeout to wait for
records still to come.

Examples:
  eventlogging tail eventlogging_SearchQuery
  eventlogging tail --from-beginning --count 10 --pretty eventlogging-valid-mixed
  eventlogging tail --schema NavigationTiming --timeout 30s eventlogging-valid-mixed
  eventlogging tail --kafka-brokers kafka1:9092,kafka2:9092 --grep '"code":"validation"' eventlogging_EventError
  eventlogging tail --config /etc/eventlogging.yaml eventlogging_EventError   (TLS/SASL from the file)`

type tailFlags struct {
	brokers, dataDir, schema, grep string
	registry, config               string
	fromBeginning, pretty          bool
	count                          int
	timeout                        time.Duration
}

func runTail(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("tail", tailHelp, stderr)
	var f tailFlags
	fs.StringVar(&f.brokers, "kafka-brokers", "", "Kafka bootstrap addresses as `host:port,...` (kafka.brokers, e.g. kafka1:9092,kafka2:9092), as every command names it; default: the local standalone broker of --data-dir")
	fs.StringVar(&f.brokers, "brokers", "", "alias of --kafka-brokers (its former name): `host:port,...`")
	fs.StringVar(&f.config, "config", "", "configuration `FILE` whose kafka section (brokers, TLS, SASL) and registry.url to use, e.g. --config /etc/eventlogging.yaml")
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
	flt := tailFilter{schema: f.schema}
	if f.grep != "" {
		re, err := regexp.Compile(f.grep)
		if err != nil {
			return fmt.Errorf("%w: tail: --grep: %w", errUsage, err)
		}
		flt.grep = re
	}
	log := slog.Default().With("component", "tail")
	kc, c, local, err := clusterFromFlags(f.config, f.brokers, f.dataDir, log)
	if err != nil {
		return err
	}
	kc.ClientID = "eventlogging-tail"
	switch {
	case f.registry != "":
	case f.config != "":
		f.registry = c.Registry.URL
	case local:
		f.registry = localRegistry(f.dataDir)
	}
	brokers := kc.Brokers
	var codec *avrowire.Codec
	if f.registry != "" {
		c, err := avrowire.New(f.registry, 0)
		if err != nil {
			return err
		}
		codec = c
	}
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
	}

	from := "end"
	if f.fromBeginning {
		from = "beginning"
	}
	cfg := kafka.TailConfig{
		Kafka:         kc,
		Topics:        topics,
		FromBeginning: f.fromBeginning,
		// --count without --timeout reads what the topics hold: fewer
		// records than asked for end the read instead of waiting forever.
		StopAtEnd: f.fromBeginning && f.count > 0 && f.timeout == 0,
		OnStart:   func() { log.Info("tailing", "topics", topics, "from", from, "brokers", brokers) },
	}
	var line bytes.Buffer
	printed := 0
	defer func() {
		if cfg.StopAtEnd && printed < f.count && ctx.Err() == nil {
			fmt.Fprintf(stderr, "tail: %d of %d records: the end of the topics (add --timeout D to wait for new ones)\n", printed, f.count)
		}
	}()
	return kafka.Tail(ctx, cfg, func(r kafka.Record) error {
		if codec != nil && avrowire.IsWire(r.Value) {
			js, err := codec.DecodeJSON(ctx, r.Value)
			if err != nil {
				log.Warn("cannot decode Avro record; printing it raw", "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "err", err)
			} else {
				r.Value = js
			}
		}
		if !flt.match(r.Value) {
			return nil
		}
		line.Reset()
		writeValue(&line, r.Value, f.pretty)
		if _, err := stdout.Write(line.Bytes()); err != nil {
			return fmt.Errorf("tail: write: %w", err)
		}
		printed++
		if f.count > 0 && printed >= f.count {
			return kafka.ErrStopTail
		}
		return nil
	})
}

// standaloneBrokerDir is the subfolder of the standalone data directory
// holding the embedded broker's data and broker.json (see runStandalone).
const standaloneBrokerDir = "kafka"

// localBrokers finds the broker of a local standalone through the
// broker.json in dataDir, or in the broker's subfolder of a standalone data
// directory.
func localBrokers(dataDir string) ([]string, error) {
	dirs := []string{dataDir, filepath.Join(dataDir, standaloneBrokerDir)}
	var looked []string
	for _, d := range dirs {
		path := filepath.Join(d, embedded.BrokerFile)
		if _, err := os.Stat(path); err == nil {
			return embedded.LocalBrokers(d)
		}
		looked = append(looked, path)
	}
	return nil, fmt.Errorf(`%w: pass --brokers, or start "eventlogging standalone" (looked for %s)`, embedded.ErrNoLocalBroker, strings.Join(looked, " and "))
}

// splitArgs separates flags (with their values) from positional arguments,
// so that flags may follow the topics. Everything after "--" is positional.
func splitArgs(fs *flag.FlagSet, args []string) (flags, positional []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return flags, append(positional, args[i+1:]...)
		case len(a) > 1 && a[0] == '-':
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if strings.Contains(name, "=") {
				continue
			}
			fl := fs.Lookup(name)
			if fl == nil {
				continue // unknown: parsing reports it
			}
			if b, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
				continue
			}
			if i+1 < len(args) {
				i++
				flags = append(flags, args[i])
			}
		default:
			positional = append(positional, a)
		}
	}
	return flags, positional
}

// tailFilter selects the records tail prints; zero fields match everything.
type tailFilter struct {
	schema string
	grep   *regexp.Regexp
}

func (t tailFilter) match(value []byte) bool {
	if t.grep != nil && !t.grep.Match(value) {
		return false
	}
	return t.schema == "" || schemaMatches(value, t.schema)
}

// schemaMatches reports whether a JSON value is an event of schema name: its
// top-level "schema" is name, or its "$schema" path (/title/.../version) has
// name as one of its elements or as its title.
func schemaMatches(value []byte, name string) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(value, &top) != nil {
		return false
	}
	var s string
	if raw, ok := top["schema"]; ok && json.Unmarshal(raw, &s) == nil && s == name {
		return true
	}
	raw, ok := top["$schema"]
	if !ok || json.Unmarshal(raw, &s) != nil {
		return false
	}
	p, err := schema.Path(s)
	if err != nil {
		return false
	}
	elems := strings.Split(p[1:], "/")
	if slices.Contains(elems, name) {
		return true
	}
	title := strings.Join(elems[:len(elems)-1], "/")
	return title != "" && strings.Trim(name, "/") == title
}

// writeValue writes a record value as one JSON line (indented with pretty):
// JSON as it is, anything else as a JSON string, a null value as null.
func writeValue(dst *bytes.Buffer, value []byte, pretty bool) {
	switch {
	case value == nil:
		dst.WriteString("null\n")
	case json.Valid(value):
		if pretty {
			_ = json.Indent(dst, value, "", "  ") // valid JSON: cannot fail
		} else {
			_ = json.Compact(dst, value) // valid JSON: cannot fail
		}
		dst.WriteByte('\n')
	default:
		enc := json.NewEncoder(dst) // ends the line
		enc.SetEscapeHTML(false)
		_ = enc.Encode(string(value)) // a string always encodes
	}
}

// standaloneFile, in the standalone data directory, tells other commands
// where the standalone's HTTP endpoints are.
const standaloneFile = "standalone.json"

// standaloneInfo is the content of standaloneFile.
type standaloneInfo struct {
	HTTP     string `json:"http"`
	Registry string `json:"registry"`
}

// localRegistry is the registry URL of the standalone of dataDir, or "".
func localRegistry(dataDir string) string {
	info, _ := readStandaloneInfo(dataDir)
	return info.Registry
}

// readStandaloneInfo reads the endpoints a standalone wrote in dataDir.
func readStandaloneInfo(dataDir string) (standaloneInfo, bool) {
	var info standaloneInfo
	b, err := os.ReadFile(filepath.Join(dataDir, standaloneFile))
	if err != nil || json.Unmarshal(b, &info) != nil {
		return standaloneInfo{}, false
	}
	return info, true
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
		kc = kafkaConfig(c, log)
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
