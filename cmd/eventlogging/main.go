// Command eventlogging runs every role of the EventLogging pipeline: one
// binary, one subcommand per role.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/logging"
)

const usage = `eventlogging — an analytics event pipeline on Kafka.

Usage:
  eventlogging <command> [flags]

Commands:
  standalone     the whole pipeline in one process on an embedded broker
  intake         the HTTP intake: beacons and POST /v1/events into Kafka
  sink           load the valid topics into SQL (SQLite, MariaDB, PostgreSQL) and files
  purge          apply the retention policy to the sinks (delete, or keep allow-listed fields)
  registry       the schema registry (Confluent-compatible REST API, state in Kafka)
  schema         lint, check, push, get and diff schemas (a repository on disk, a registry)
  process        validate raw events from Kafka and route them to per-schema
                 and error topics; with --from, process a file or stdin offline
  tail           print the records of topics as JSON lines, from the end or
                 the beginning, filtered by schema or regex
  dashboard      the web dashboard: throughput, lag, schemas, live tail,
                 invalid events with their errors highlighted, replay
  status         a terminal summary of the pipeline (roles, lag, rates,
                 recent errors); --json for scripts
  replay         re-submit EventErrors to the raw topic after a schema fix
  bench          load-test a running pipeline over HTTP and follow the events through Kafka
  check-config   validate a configuration file and print the effective config
  version        print the version

Run "eventlogging <command> --help" for the flags of a command.
Every setting can come from the YAML file given with --config, from the
environment (EVENTLOGGING_<SECTION>_<KEY>, e.g. EVENTLOGGING_KAFKA_BROKERS),
or from flags, in increasing order of precedence.
`

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// errUsage marks command-line mistakes (exit status 2).
var errUsage = errors.New("usage")

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	// The log's format and level are known before the command reads its
	// configuration, so that its very first lines have them.
	lc := logConfig(args[1:])
	level := new(slog.LevelVar)
	if l, err := lc.SlogLevel(); err == nil {
		level.Set(l)
	}
	format, _ := logging.ParseFormat(lc.Format) // text when invalid: the command's config.Load reports it
	logger := slog.New(logging.NewHandler(stderr, format, level))
	slog.SetDefault(logger)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The long-running roles reload on SIGHUP instead of dying of it.
	rt := runtimeEnv{level: level}
	switch args[0] {
	case "process", "intake", "sink", "standalone":
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		rt.hup = hup
	}

	var err error
	switch cmd, rest := args[0], args[1:]; cmd {
	case "process":
		err = runProcess(ctx, rest, stdin, stdout, stderr, logger, rt)
	case "intake":
		err = runIntake(ctx, rest, stderr, logger, rt)
	case "schema":
		err = runSchema(ctx, rest, stdout, stderr)
	case "registry":
		err = runRegistry(ctx, rest, stderr, logger)
	case "sink":
		err = runSink(ctx, rest, stderr, logger, rt)
	case "purge":
		err = runPurge(ctx, rest, stdout, stderr, logger)
	case "standalone":
		err = runStandalone(ctx, rest, stderr, logger, rt)
	case "tail":
		err = runTail(ctx, rest, stdout, stderr)
	case "check-config":
		err = runCheckConfig(rest, stdout, stderr)
	case "dashboard":
		err = runDashboard(ctx, rest, stderr, logger)
	case "status":
		err = runStatus(ctx, rest, stdout, stderr, logger)
	case "replay":
		err = runReplay(ctx, rest, stdout, stderr, logger)
	case "bench":
		err = runBench(ctx, rest, stdout, stderr, logger)
	case "version", "--version":
		fmt.Fprintln(stdout, versionString(version, readBuildInfo()))
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "eventlogging: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errFindings):
		fmt.Fprintln(stderr, "eventlogging:", err)
		return 1
	case errors.Is(err, errUsage):
		fmt.Fprintln(stderr, "eventlogging:", err)
		return 2
	case format == logging.JSON:
		// Machines read this log: the last line is JSON too.
		logger.Error("command failed", "command", args[0], "err", err)
		return 1
	default:
		fmt.Fprintln(stderr, "eventlogging:", err)
		return 1
	}
}

// runtimeEnv is what main hands the long-running roles for live reload:
// the logger's level and the SIGHUP notifications (nil for other
// commands).
type runtimeEnv struct {
	level *slog.LevelVar
	hup   <-chan os.Signal
}

// logConfig is the log section a command will run with: that of the file
// given with --config (under the EVENTLOGGING_LOG_* environment), or, when
// there is none or it does not load, the environment's alone. A file that
// does not load is reported by the command itself.
func logConfig(args []string) config.Log {
	if c, err := config.Load(configFlag(args)); err == nil {
		return c.Log
	}
	return config.Log{Level: os.Getenv("EVENTLOGGING_LOG_LEVEL"), Format: os.Getenv("EVENTLOGGING_LOG_FORMAT")}
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

// newFlagSet returns a flag set that prints its usage with a header.
func newFlagSet(name, header string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "%s\nFlags:\n", header)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags wraps flag errors as usage errors.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %s: %w", errUsage, fs.Name(), err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: %s: unexpected arguments %q", errUsage, fs.Name(), fs.Args())
	}
	return nil
}
