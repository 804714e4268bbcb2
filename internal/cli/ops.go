package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"strings"
	"time"

	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/inspect"
	"github.com/eventlogging/eventlogging/internal/role"
)

// opsFlags are the flags of the commands that look at a running pipeline
// (dashboard, status, replay).
type opsFlags struct {
	o       *overlay
	dataDir string
	// health: the local standalone's HTTP endpoints, when one was found.
	health map[string]string
	// standalone: the cluster is a local standalone's (it runs both sinks).
	standalone bool
}

func (f *opsFlags) register(fs *flag.FlagSet, more ...keyFlag) {
	f.o = newOverlay(fs, "", append([]keyFlag{
		flagBrokers.withUsage("Kafka bootstrap addresses, comma-separated (kafka.brokers); default: the local standalone of --data-dir if there is one, else the configuration's"),
		flagRegistryURL.withUsage("schema registry URL (registry.url); default: the local standalone's"),
	}, more...)...)
	fs.StringVar(&f.dataDir, "data-dir", "data", "data directory of a local standalone, searched for its broker and registry when --kafka-brokers is not set")
}

// load reads the configuration and finds the cluster: flags, then a local
// standalone, then the configuration. Without either (no --kafka-brokers,
// --config or EVENTLOGGING_KAFKA_BROKERS) and no local standalone, it
// fails as tail does, rather than trying the default 127.0.0.1:9092.
func (f *opsFlags) load() (config.Config, error) {
	c, err := f.o.load()
	if err != nil {
		return c, err
	}
	if f.o.value(flagBrokers.name) == "" {
		local, err := localBrokers(f.dataDir)
		if _, env := os.LookupEnv("EVENTLOGGING_KAFKA_BROKERS"); err != nil && f.o.config == "" && !env {
			return c, err
		}
		if err == nil {
			c.Kafka.Brokers = local
			info, ok := role.ReadStandaloneInfo(f.dataDir)
			if f.o.value(flagRegistryURL.name) == "" && info.Registry != "" {
				c.Registry.URL = strings.TrimSuffix(info.Registry, "/")
			}
			f.standalone = true
			if ok {
				f.health = map[string]string{"intake": info.HTTP + "/readyz", "registry": info.Registry + "/"}
			}
		}
	}
	return c, c.Validate()
}

// healthTargets are the role health URLs the dashboard and status check:
// --health when given (flag, ROLE=URL,…), else dashboard.health; then the
// local standalone's intake and registry (local) for roles not named; then
// the registry of registry.url when no "registry" is named.
func (f *opsFlags) healthTargets(c config.Config, flag string) (map[string]string, error) {
	roles := maps.Clone(c.Dashboard.Health)
	if flag != "" {
		var err error
		if roles, err = config.ParseHealth(flag); err != nil {
			return nil, fmt.Errorf("%w: dashboard: --health %w", errUsage, err)
		}
	}
	if roles == nil {
		roles = map[string]string{}
	}
	for role, u := range f.health {
		if _, ok := roles[role]; !ok {
			roles[role] = u
		}
	}
	if _, ok := roles["registry"]; !ok && c.Registry.URL != "" {
		roles["registry"] = c.Registry.URL + "/"
	}
	return roles, nil
}

// expectedGroups are the consumer groups c runs (role.ExpectedGroups; a
// local standalone runs both sinks).
func (f *opsFlags) expectedGroups(c config.Config) []inspect.ExpectedGroup {
	return role.ExpectedGroups(c, f.standalone)
}

func runDashboard(ctx context.Context, args []string, e env) error {
	stderr, log := e.stderr, e.log
	fs := newFlagSet("dashboard", helpText("dashboard"), stderr)
	var f opsFlags
	f.register(fs, flagDashboardListen)
	health := fs.String("health", "", "role health URLs, comma-separated ROLE=URL, e.g. intake=http://intake:8080/readyz,registry=http://registry:8081/ (replaces dashboard.health)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c, err := f.load()
	if err != nil {
		return err
	}
	if c.Dashboard.Health, err = f.healthTargets(c, *health); err != nil {
		return err
	}
	d := role.NewDashboard(c, role.Deps{Logger: log})
	d.Expect = f.expectedGroups(c)
	return namePortInUse("dashboard", d.Run(ctx), listenFlag{name: "listen", addr: c.Dashboard.Listen})
}

func runStatus(ctx context.Context, args []string, e env) error {
	stdout, stderr, log := e.stdout, e.stderr, e.log
	fs := newFlagSet("status", helpText("status"), stderr)
	var f opsFlags
	f.register(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	interval := fs.Duration("interval", 2*time.Second, "window over which rates are measured")
	nErrors := fs.Int("errors", 5, "how many recent EventErrors to show")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c, err := f.load()
	if err != nil {
		return err
	}
	health, err := f.healthTargets(c, "")
	if err != nil {
		return err
	}
	ins, err := role.NewInspector(c, role.KafkaConfig(c, log), health, f.expectedGroups(c), nil, log)
	if err != nil {
		return err
	}
	defer ins.Close()
	st, err := ins.Status(ctx, *interval, *nErrors)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(st); err != nil {
			return err
		}
	} else {
		st.WriteText(stdout)
	}
	if !st.Healthy {
		return exitAs{fmt.Errorf("status: %s down: %s", count(len(st.Missing), "role"), st.DownReasons()), errFindings}
	}
	return nil
}

func runReplay(ctx context.Context, args []string, e env) error {
	stdout, stderr, log := e.stdout, e.stderr, e.log
	fs := newFlagSet("replay", helpText("replay"), stderr)
	var f opsFlags
	f.register(fs)
	schemaName := fs.String("schema", "", "replay only EventErrors of schema NAME")
	since := fs.String("since", "", "replay EventErrors received at or after TIME (RFC 3339, or a duration back from now)")
	until := fs.String("until", "", "replay EventErrors received at or before TIME")
	partition := fs.Int("partition", -1, "with --from-offset/--to-offset: the error topic's partition")
	from := fs.Int64("from-offset", 0, "first offset of --partition to replay")
	to := fs.Int64("to-offset", 0, "offset of --partition to stop before (0: the end)")
	dryRun := fs.Bool("dry-run", false, "count what would be replayed, produce nothing")
	wait := fs.Duration("wait", 30*time.Second, "how long to wait for the processors' outcomes (0: do not wait)")
	force := fs.Bool("force", false, "replay errors already replayed too, and record every replayed one as done whatever its outcome")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c, err := f.load()
	if err != nil {
		return err
	}
	flt := inspect.ErrorFilter{Schema: *schemaName, Limit: -1, Scan: -1}
	now := time.Now()
	if flt.Since, err = inspect.ParseWhen(*since, now); err != nil {
		return fmt.Errorf("%w: replay: --since: %w", errUsage, err)
	}
	if flt.Until, err = inspect.ParseWhen(*until, now); err != nil {
		return fmt.Errorf("%w: replay: --until: %w", errUsage, err)
	}
	if *partition >= 0 {
		flt.Offsets, flt.Partition, flt.FromOffset, flt.ToOffset = true, int32(*partition), *from, *to
	} else if *from != 0 || *to != 0 {
		return fmt.Errorf("%w: replay: --from-offset and --to-offset need --partition", errUsage)
	}
	ins, err := role.NewInspector(c, role.KafkaConfig(c, log), nil, nil, nil, log)
	if err != nil {
		return err
	}
	defer ins.Close()
	res, err := ins.ReplayMatching(ctx, flt, inspect.ReplayOptions{DryRun: *dryRun, Force: *force, Wait: *wait})
	if err != nil {
		return err
	}
	res.WriteText(stdout, *dryRun)
	if len(res.Failed) > 0 && !res.Forced {
		return fmt.Errorf("%w: replay: %d EventErrors failed again; they stay replayable", errFindings, len(res.Failed))
	}
	return nil
}
