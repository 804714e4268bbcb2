package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/logging"
	"github.com/eventlogging/eventlogging/internal/role"
)

var usage = helpText("eventlogging")

// Version is what `eventlogging version` prints; main sets it from its
// -ldflags "-X main.version=..." value.
var Version = "dev"

// errUsage marks command-line mistakes (exit status 2).
var errUsage = errors.New("usage")

// Run runs the command of args (without the program name) and returns the
// exit status: 0, 1 when it failed or found problems, 2 for usage errors.
// It stops the command on SIGINT and SIGTERM, and has the long-running
// roles reload on SIGHUP.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, args, stdin, stdout, stderr)
}

// run is Run until ctx ends (Run's SIGINT or SIGTERM; a test's cancel).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
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
	// The long-running roles reload on SIGHUP instead of dying of it.
	rt := role.ReloadConfig{Level: level}
	switch args[0] {
	case "process", "intake", "sink", "standalone":
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		rt.HUP = hup
	}

	setGCPercent(args[0])

	var err error
	switch cmd, rest := args[0], args[1:]; cmd {
	case "version", "--version":
		fmt.Fprintln(stdout, versionString(Version, readBuildInfo()))
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		run, ok := commands[cmd]
		if !ok {
			fmt.Fprintf(stderr, "eventlogging: unknown command %q\n\n%s", cmd, usage)
			return 2
		}
		err = run(ctx, rest, env{stdin: stdin, stdout: stdout, stderr: stderr, log: logger, reload: rt})
	}
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errFindings):
		fmt.Fprintln(stderr, "eventlogging:", err)
		return 1
	case errors.As(err, new(*flagError)):
		// One line: "eventlogging standalone: unknown flag …".
		fmt.Fprintln(stderr, "eventlogging "+err.Error())
		return 2
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

// gcPercent is the garbage collector's target (GOGC) of `eventlogging
// bench`, the load generator: its heap is small and its garbage is per
// request. The roles keep Go's default of 100: GOGC=400 took the intake
// from 30.54 to 21.52 us of CPU per event end to end, but raised its peak
// RSS past TestOverload's bound (115 MiB against 103 MiB in a CI run);
// standalone gained 7-22 % on the peer matrix's 10-event cell for twice
// the RSS. Operators can set GOGC themselves (README, Operations).
// GOGC, when set, wins.
const gcPercent = 400

func setGCPercent(cmd string) {
	if cmd == "bench" && os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}

// env is what Run hands a command besides its arguments.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	log            *slog.Logger
	// reload has the logger's level and, for the long-running roles, the
	// SIGHUP notifications.
	reload role.ReloadConfig
}

// commands are the commands of Run, by name.
var commands = map[string]func(ctx context.Context, args []string, e env) error{
	"process":      runProcess,
	"intake":       runIntake,
	"schema":       runSchema,
	"registry":     runRegistry,
	"sink":         runSink,
	"purge":        runPurge,
	"standalone":   runStandalone,
	"tail":         runTail,
	"check-config": runCheckConfig,
	"dashboard":    runDashboard,
	"status":       runStatus,
	"replay":       runReplay,
	"bench":        runBench,
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
