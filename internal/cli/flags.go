package cli

import (
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/suggest"
)

// A keyFlag is the flag of one configuration key, declared here once and
// taken by every command that sets the key.
type keyFlag struct {
	name, usage string
	set         func(c *config.Config, v string)
	// key, when set instead of set, is the configuration key the flag
	// sets from its text (config.SetKey: durations, numbers).
	key string
}

// withUsage is f with the help text of a command that says more.
func (f keyFlag) withUsage(usage string) keyFlag {
	f.usage = usage
	return f
}

var (
	flagBrokers = keyFlag{"kafka-brokers", "Kafka bootstrap addresses, comma-separated (kafka.brokers)",
		func(c *config.Config, v string) { c.Kafka.Brokers = strings.Split(v, ",") }, ""}
	flagSchemas = keyFlag{"schemas", "schema folder (process.schemas_dir)",
		func(c *config.Config, v string) { c.Process.SchemasDir = v }, ""}
	flagStreams = keyFlag{"streams", "Event Platform stream configuration file (process.streams_file)",
		func(c *config.Config, v string) { c.Process.StreamsFile = v }, ""}
	flagIntakeListen = keyFlag{"listen", "HTTP listen address (intake.listen, default :8080)",
		func(c *config.Config, v string) { c.Intake.Listen = v }, ""}
	flagSpoolDir = keyFlag{"spool-dir", "spool folder for events while Kafka is unreachable (intake.spool_dir)",
		func(c *config.Config, v string) { c.Intake.SpoolDir = v }, ""}
	flagRegistryListen = keyFlag{"listen", "HTTP listen address (registry.listen, default :8081)",
		func(c *config.Config, v string) { c.Registry.Listen = v }, ""}
	flagSelfURL = keyFlag{"self-url", "URL other instances use to reach this one (registry.self_url)",
		func(c *config.Config, v string) { c.Registry.SelfURL = v }, ""}
	flagImportDir = keyFlag{"import", "schema folder to register at start (registry.import_dir)",
		func(c *config.Config, v string) { c.Registry.ImportDir = v }, ""}
	flagDashboardListen = keyFlag{"listen", "HTTP listen address (dashboard.listen, default :8090)",
		func(c *config.Config, v string) { c.Dashboard.Listen = v }, ""}
	flagSinkSQL = keyFlag{"sql", "SQL sink database (sink.sql): sqlite:PATH, mysql:DSN or postgres://…",
		func(c *config.Config, v string) { c.Sink.SQL = v }, ""}
	flagSinkFiles = keyFlag{"files", "file sink target (sink.files): a directory, s3://BUCKET/PREFIX?endpoint=…&region=…&use_path_style=true or hdfs://NAMENODE:PORT/PATH",
		func(c *config.Config, v string) { c.Sink.Files = v }, ""}
	flagSinkFilesStaging = keyFlag{"files-staging", "local directory of files being written for an s3:// or hdfs:// target (sink.files_staging)",
		func(c *config.Config, v string) { c.Sink.FilesStaging = v }, ""}
	flagIcebergCatalog = keyFlag{"iceberg-catalog", "Iceberg catalog (sink.iceberg_catalog): sqlite:///PATH, postgresql://… or a REST catalog http(s)://…",
		func(c *config.Config, v string) { c.Sink.IcebergCatalog = v }, ""}
	flagIcebergWarehouse = keyFlag{"iceberg-warehouse", "Iceberg warehouse (sink.iceberg_warehouse): a directory or s3://BUCKET/PREFIX?…",
		func(c *config.Config, v string) { c.Sink.IcebergWarehouse = v }, ""}
	flagIcebergCommitInterval = keyFlag{name: "iceberg-commit-interval", key: "sink.iceberg_commit_interval",
		usage: "how often Iceberg tables are committed: rows are readable about this long after they arrive (sink.iceberg_commit_interval, default 1m)"}
	flagIcebergNamespace = keyFlag{name: "iceberg-namespace", key: "sink.iceberg_namespace",
		usage: "Iceberg namespace of the tables, <namespace>.<Schema> (sink.iceberg_namespace, default eventlogging)"}
	flagIcebergCatalogName = keyFlag{name: "iceberg-catalog-name", key: "sink.iceberg_catalog_name",
		usage: "catalog name a SQL catalog's rows carry, which readers must use (sink.iceberg_catalog_name, default eventlogging)"}
	flagIcebergCompactEvery = keyFlag{name: "iceberg-compact-every", key: "sink.iceberg_compact_every",
		usage: "compact the tables' finished hours every N commits; negative: never (sink.iceberg_compact_every, default 60)"}
	flagSinkFormat = keyFlag{"format", "file format: parquet or jsonl.gz (sink.format, default parquet)",
		func(c *config.Config, v string) { c.Sink.Format = v }, ""}
	flagSinkMetricsListen = keyFlag{"metrics-listen", `address of /metrics (sink.metrics_listen, else metrics.listen, default :9102; "off" disables it)`,
		func(c *config.Config, v string) { c.Sink.MetricsListen = v }, ""}
	flagProcessMetricsListen = keyFlag{"metrics-listen", `address of /metrics (process.metrics_listen, else metrics.listen, default :9101; "off" disables it)`,
		func(c *config.Config, v string) { c.Process.MetricsListen = v }, ""}
	flagDataDir = keyFlag{"data-dir", "data directory (standalone.data_dir, default ./data)",
		func(c *config.Config, v string) { c.Standalone.DataDir = v }, ""}
	flagKafkaListen = keyFlag{"kafka-listen", "embedded broker address (standalone.kafka_listen, default 127.0.0.1:19092)",
		func(c *config.Config, v string) { c.Standalone.KafkaListen = v }, ""}
	flagGroup = keyFlag{"group", "consumer group (process.group, default eventlogging-processor)",
		func(c *config.Config, v string) { c.Process.Group = v }, ""}
	flagIP = keyFlag{"ip", "client IP policy: hash, drop or keep (process.ip, default hash)",
		func(c *config.Config, v string) { c.Process.IP = v }, ""}
	flagIPHashAlg = keyFlag{"ip-hash-alg", "HMAC for --ip hash: sha256 or sha1 (process.ip_hash_alg, default sha256)",
		func(c *config.Config, v string) { c.Process.IPHashAlg = v }, ""}
	flagMixedTopic = keyFlag{"mixed-topic", `topic receiving every valid event too ("-" disables; default eventlogging-valid-mixed)`,
		func(c *config.Config, v string) { c.Process.MixedTopic = v }, ""}
	flagMixedExclude = keyFlag{"mixed-exclude", "regex of schemas kept out of the mixed topic",
		func(c *config.Config, v string) { c.Process.MixedExclude = v }, ""}
	flagErrorTopic = keyFlag{"error-topic", "topic of EventErrors (default eventlogging_EventError)",
		func(c *config.Config, v string) { c.Process.ErrorTopic = v }, ""}
	flagTopicTemplate = keyFlag{"topic-template", "per-schema topic name, with {schema} and {revision} (default eventlogging_{schema})",
		func(c *config.Config, v string) { c.Process.TopicTemplate = v }, ""}
	flagProcessorID = keyFlag{"processor-id", "name of this processor in EventErrors (process.processor_id, default host-pid)",
		func(c *config.Config, v string) { c.Process.ProcessorID = v }, ""}
	flagRegistryURL = keyFlag{"registry", "schema registry URL (registry.url)",
		func(c *config.Config, v string) { c.Registry.URL = strings.TrimSuffix(v, "/") }, ""}
)

// overlay is a command's --config flag and the key flags it takes, laid
// over the loaded configuration: a flag given wins over the file and the
// environment.
type overlay struct {
	fs     *flag.FlagSet
	config string
	flags  []keyFlag
	values []*string
}

// newOverlay declares --config (with configUsage, or the usual text when
// "") and flags on fs.
func newOverlay(fs *flag.FlagSet, configUsage string, flags ...keyFlag) *overlay {
	if configUsage == "" {
		configUsage = "configuration file (YAML)"
	}
	o := &overlay{fs: fs, flags: flags}
	fs.StringVar(&o.config, "config", "", configUsage)
	for _, f := range flags {
		o.values = append(o.values, fs.String(f.name, "", f.usage))
	}
	return o
}

// value is what the flag of that name was given ("" when not).
func (o *overlay) value(name string) string {
	for i, f := range o.flags {
		if f.name == name {
			return *o.values[i]
		}
	}
	return ""
}

// apply lays the flags given over c.
func (o *overlay) apply(c *config.Config) error {
	for i, f := range o.flags {
		v := *o.values[i]
		switch {
		case v == "":
		case f.key != "":
			if err := c.SetKey(f.key, v); err != nil {
				return fmt.Errorf("%w: --%s: %w", errUsage, f.name, err)
			}
		default:
			f.set(c, v)
		}
	}
	return nil
}

// load reads --config (under the environment) and lays the flags over it.
func (o *overlay) load() (config.Config, error) {
	c, err := config.Load(o.config)
	if err != nil {
		return c, err
	}
	return c, o.apply(&c)
}

// parse parses the command's arguments and returns its configuration:
// --config under the environment, the flags over it, then adjust, then
// validated.
func (o *overlay) parse(args []string, adjust ...func(*config.Config)) (config.Config, error) {
	if err := parseFlags(o.fs, args); err != nil {
		return config.Config{}, err
	}
	c, err := o.load()
	if err != nil {
		return c, err
	}
	for _, a := range adjust {
		a(&c)
	}
	return c, c.Validate()
}

// checkSchemaFolder fails, naming --schemas and the default, when the
// schema folder (process.schemas_dir) that cmd reads is not a folder.
func checkSchemaFolder(cmd string, o *overlay, c config.Config) error {
	dir := c.Process.SchemasDir
	st, err := os.Stat(dir)
	var what string
	switch {
	case errors.Is(err, os.ErrNotExist):
		what = "no such folder"
	case err != nil:
		what = err.Error()
	case !st.IsDir():
		what = "not a folder"
	default:
		return nil
	}
	if !filepath.IsAbs(dir) {
		if wd, err := os.Getwd(); err == nil {
			what += " in " + wd
		}
	}
	if o.value(flagSchemas.name) == "" && dir == config.Default().Process.SchemasDir {
		what += " (the default, as --schemas was not given)"
	}
	return fmt.Errorf("%s: --schemas %s: %s; give the folder of your schemas with --schemas DIR, or process.schemas_dir in --config (default is ./schemas)", cmd, dir, what)
}

// newFlagSet returns a flag set whose usage (its --help) is the header,
// then the flags spelled as the usage lines spell them (--name).
func newFlagSet(name, header string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "%s\nFlags:\n", header)
		printFlags(stderr, fs)
	}
	return fs
}

// printFlags is flag.PrintDefaults with the flags spelled --name.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		var b strings.Builder
		b.WriteString("  --" + f.Name)
		name, usage := flag.UnquoteUsage(f)
		if name != "" {
			b.WriteString(" " + name)
		}
		b.WriteString("\n    \t")
		b.WriteString(strings.ReplaceAll(usage, "\n", "\n    \t"))
		g, _ := f.Value.(flag.Getter)
		switch {
		case f.DefValue == "", f.DefValue == "0", f.DefValue == "false", f.DefValue == "0s":
		case g != nil && isString(g.Get()):
			fmt.Fprintf(&b, " (default %q)", f.DefValue)
		default:
			fmt.Fprintf(&b, " (default %v)", f.DefValue)
		}
		fmt.Fprintln(w, b.String())
	})
}

func isString(v any) bool {
	_, ok := v.(string)
	return ok
}

// A flagError is a mistake in a command's flags or arguments. Run prints
// it as one line that says how to get the help (exit status 2), rather
// than the whole help, which would scroll the mistake away.
type flagError struct {
	cmd, msg string
}

func (e *flagError) Error() string {
	return fmt.Sprintf("%s: %s; run 'eventlogging %s --help' for the flags", e.cmd, e.msg, e.cmd)
}

func (e *flagError) Unwrap() error { return errUsage }

// parseFlags parses args; a mistake is a *flagError, --help prints the
// help and returns flag.ErrHelp.
func parseFlags(fs *flag.FlagSet, args []string) error {
	// The flag package prints its error and the help on a mistake: keep
	// both quiet, and print the help for --help only.
	help, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = help
	fs.SetOutput(out)
	switch {
	case errors.Is(err, flag.ErrHelp):
		help()
		return err
	case err != nil:
		return &flagError{fs.Name(), flagMistake(fs, err)}
	case fs.NArg() > 0:
		return &flagError{fs.Name(), fmt.Sprintf("unexpected arguments %q", fs.Args())}
	}
	return nil
}

// flagMistake says what is wrong in err, the flag package's error, with
// the flags spelled --name; an unknown flag gets the command's flags that
// are spelled alike as a suggestion.
func flagMistake(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		msg = "unknown flag --" + name
		if alike := alikeFlags(fs, name); len(alike) > 0 {
			msg += " (did you mean --" + strings.Join(alike, " or --") + "?)"
		}
		return msg
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return "flag --" + name + " needs a value"
	}
	// invalid value "x" for flag -name: …
	return flagNameRE.ReplaceAllString(msg, "flag --$1")
}

var flagNameRE = regexp.MustCompile(`flag -([[:alnum:]][-[:alnum:]]*)`)

// alikeFlags are the flags of fs nearest to name by edit distance, when
// near enough to be a typo of it: one edit for a short name, two for a
// longer one; else, those that name begins (--kafka: --kafka-brokers,
// --kafka-listen).
func alikeFlags(fs *flag.FlagSet, name string) []string {
	if alike := nearFlags(fs, name); len(alike) > 0 {
		return alike
	}
	var alike []string
	if len(name) >= 3 {
		fs.VisitAll(func(f *flag.Flag) {
			if strings.HasPrefix(f.Name, name) {
				alike = append(alike, f.Name)
			}
		})
	}
	return alike
}

// nearFlags are the flags of fs nearest to name (suggest.Nearest).
func nearFlags(fs *flag.FlagSet, name string) []string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return suggest.Nearest(name, names)
}

// configFlag is the value of the --config (or -config) flag in a command's
// arguments, "" when there is none. Every command that reads a
// configuration file takes it under that name.
func configFlag(args []string) string {
	for i, a := range args {
		if a == "--" {
			break // the rest are arguments
		}
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name != "config" {
			continue
		}
		if hasValue {
			return value
		}
		if i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
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

//go:embed help/*.txt
var helpFiles embed.FS

// helpText is the text of help/name.txt: what `eventlogging name --help`
// prints above the flags.
func helpText(name string) string {
	b, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic("help/" + name + ".txt: " + err.Error()) // embedded: cannot happen
	}
	return string(b)
}
