package cli

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
	"runtime"

	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/iphash"
	"github.com/eventlogging/eventlogging/internal/lineformat"
	"github.com/eventlogging/eventlogging/internal/process"
	"github.com/eventlogging/eventlogging/internal/role"
)

// processFlags are process's flags that are not configuration keys, or
// not only.
type processFlags struct {
	rawTopic, from, to, format, ipHashKeyHex string
	trust, watch                             bool
	workers                                  int
}

func runProcess(ctx context.Context, args []string, e env) error {
	stdin, stdout, stderr, log, rt := e.stdin, e.stdout, e.stderr, e.log, e.reload
	fs := newFlagSet("process", helpText("process"), stderr)
	var f processFlags
	o := newOverlay(fs, "", flagBrokers, flagGroup,
		flagStreams.withUsage("Event Platform stream configuration file (process.streams_file), e.g. examples/streams.yaml"),
		flagSchemas.withUsage("schema folder <Name>/<revision>.json|yaml (process.schemas_dir, default ./schemas)"),
		flagIP, flagIPHashAlg, flagMixedTopic, flagMixedExclude, flagErrorTopic, flagTopicTemplate,
		flagProcessMetricsListen, flagProcessorID)
	fs.StringVar(&f.rawTopic, "raw-topic", "", "consume only this raw topic, read with --format (replaces process.inputs)")
	fs.StringVar(&f.from, "from", "", "offline: read raw lines from FILE, or - for stdin")
	fs.StringVar(&f.to, "to", "-", "offline: write output records to FILE, or - for stdout")
	fs.StringVar(&f.format, "format", "", "line format of the raw records (default "+config.DefaultRawFormat+")")
	fs.StringVar(&f.ipHashKeyHex, "ip-hash-key-hex", "", "offline: the raw HMAC key bytes in hex, for reproducible hashes (default: a random key)")
	fs.BoolVar(&f.trust, "trust-client-capsule-fields", false, "let client-sent recvFrom, seqId, timestamp, clientIp override server values (the 2015 behaviour)")
	fs.IntVar(&f.workers, "workers", runtime.NumCPU(), "offline: process lines on `N` goroutines, one per CPU by default; the output is in input order, the same bytes for every N")
	fs.BoolVar(&f.watch, "watch", false, "reload the schema folder, the stream configuration and log.level when their files change (SIGHUP always reloads)")
	cfg, err := o.parse(args, f.apply)
	if err != nil {
		return err
	}
	role.WarnSkipped(cfg, log)
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
	rt.ConfigPath, rt.Watch = o.config, f.watch
	rl := role.NewReloader(cfg, rt, log)
	err = role.RunInOrder(ctx, rl, role.NewProcessor(cfg, role.Deps{Logger: log, Reloader: rl}))
	return namePortInUse("process", err, listenFlag{name: "metrics-listen", addr: cfg.ProcessMetricsListen()})
}

// apply lays the flags that are not plain configuration keys over c.
func (f *processFlags) apply(c *config.Config) {
	p := &c.Process
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
	proc, _, err := role.ProcessingFunction(c, iphash.NewHasher(alg, key), role.Deps{Logger: log})
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
