package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/dashboard"
	"github.com/eventlogging/eventlogging/internal/inspect"
	"github.com/eventlogging/eventlogging/internal/intake"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/logging"
)

// opsFlags are the flags of the commands that look at a running pipeline
// (dashboard, status, replay).
type opsFlags struct {
	config, brokers, registry, dataDir string
	// health: the local standalone's HTTP endpoints, when one was found.
	health map[string]string
	// standalone: the cluster is a local standalone's (it runs both sinks).
	standalone bool
}

func (f *opsFlags) register(fs interface {
	StringVar(p *string, name, value, usage string)
}) {
	fs.StringVar(&f.config, "config", "", "configuration file (YAML)")
	fs.StringVar(&f.brokers, "kafka-brokers", "", "Kafka bootstrap addresses, comma-separated (kafka.brokers); default: the local standalone of --data-dir if there is one, else the configuration's")
	fs.StringVar(&f.registry, "registry", "", "schema registry URL (registry.url); default: the local standalone's")
	fs.StringVar(&f.dataDir, "data-dir", "data", "data directory of a local standalone, searched for its broker and registry when --kafka-brokers is not set")
}

// load reads the configuration and finds the cluster: flags, then a local
// standalone, then the configuration.
func (f *opsFlags) load() (config.Config, error) {
	c, err := config.Load(f.config)
	if err != nil {
		return c, err
	}
	if f.brokers != "" {
		c.Kafka.Brokers = strings.Split(f.brokers, ",")
	} else if local, err := localBrokers(f.dataDir); err == nil {
		c.Kafka.Brokers = local
		if f.registry == "" {
			f.registry = localRegistry(f.dataDir)
		}
		f.standalone = true
		if info, ok := readStandaloneInfo(f.dataDir); ok {
			f.health = map[string]string{"intake": info.HTTP + "/readyz", "registry": info.Registry + "/"}
		}
	}
	if f.registry != "" {
		c.Registry.URL = strings.TrimSuffix(f.registry, "/")
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

// expectedGroups are the consumer groups c runs: the processors' always,
// the SQL and file sinks' when c enables them (sink.sql, sink.files; a
// local standalone runs both).
func (f *opsFlags) expectedGroups(c config.Config) []inspect.ExpectedGroup {
	out := []inspect.ExpectedGroup{{Role: "processor", Group: c.Process.Group}}
	if c.Sink.SQL != "" || f.standalone {
		out = append(out, inspect.ExpectedGroup{Role: "sink-sql", Group: c.Sink.Group + "-sql"})
	}
	if c.Sink.Files != "" || f.standalone {
		out = append(out, inspect.ExpectedGroup{Role: "sink-files", Group: c.Sink.Group + "-files"})
	}
	return out
}

// newInspector builds the inspector of c's pipeline.
func newInspector(c config.Config, kc kafka.Config, health map[string]string, log *slog.Logger) (*inspect.Inspector, error) {
	return newInspectorExpecting(c, kc, health, nil, log)
}

// newInspectorExpecting is newInspector that also reports the expected
// consumer groups as roles, down until they have a member.
func newInspectorExpecting(c config.Config, kc kafka.Config, health map[string]string, expect []inspect.ExpectedGroup, log *slog.Logger) (*inspect.Inspector, error) {
	var raw []string
	for _, in := range c.Process.Inputs {
		raw = append(raw, in.Topic)
	}
	return inspect.New(inspect.Config{
		Kafka:       kc,
		RegistryURL: c.Registry.URL,
		RawTopics:   raw,
		// Under "hash" the raw lines are the only place the client IP is;
		// under "drop" they carry none, under "keep" it is everywhere.
		HideRawTopics: c.Process.IP == "hash",
		ErrorTopic:    c.Process.ErrorTopic,
		Health:        health,
		Expect:        expect,
		Logger:        log.With("component", "inspect"),
	})
}

// dashboardHandler is the dashboard over ins, mounted at prefix, open to
// the admin networks and to dashboard.token only; it ends its live streams
// when stop is closed.
func dashboardHandler(ins *inspect.Inspector, c config.Config, prefix string, stop <-chan struct{}, log *slog.Logger) (http.Handler, error) {
	guard, err := dashboardGuard(c)
	if err != nil {
		return nil, err
	}
	h, err := dashboard.New(ins, dashboard.Config{
		Prefix: prefix,
		Stop:   stop,
		Logger: log.With("component", "dashboard"),
	})
	if err != nil {
		return nil, err
	}
	return guard.Handler(h), nil
}

const dashboardHelp = `Usage: eventlogging dashboard [--config FILE] [--kafka-brokers ADDRS] [--registry URL] [--listen ADDR] [--health ROLE=URL,...]

Serves the web dashboard (default :8090, dashboard.listen) for a running
pipeline, read from Kafka and the schema registry:

  /             throughput per stream, valid/invalid rates, consumer lag,
                health of each role: the processors' and the enabled sinks'
                consumer groups (process.group, sink.group with sink.sql,
                sink.files), and the URLs of dashboard.health (--health
                replaces it), e.g. intake: http://intake1:8080/readyz
  /schemas      the registry's schemas, versions side by side with a diff
  /tail         a live tail of any topic (pausable, filterable)
  /errors       the latest EventErrors with the violations highlighted in
                the event; select and replay them after a schema fix
  /metrics      Prometheus metrics, including consumer lag of every
                eventlogging group

The dashboard (pages, API and replay) answers the admin networks only
(security.admin_networks, default loopback: 127.0.0.0/8 and ::1), and
other clients that send dashboard.token (EVENTLOGGING_DASHBOARD_TOKEN) as
"Authorization: Bearer <token>"; others get 403. /metrics stays open.
Standalone serves the same dashboard at /dashboard/.`

func runDashboard(ctx context.Context, args []string, stderr io.Writer, log *slog.Logger) error {
	fs := newFlagSet("dashboard", dashboardHelp, stderr)
	var f opsFlags
	f.register(fs)
	listen := fs.String("listen", "", "HTTP listen address (dashboard.listen, default :8090)")
	health := fs.String("health", "", "role health URLs, comma-separated ROLE=URL, e.g. intake=http://intake:8080/readyz,registry=http://registry:8081/ (replaces dashboard.health)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c, err := f.load()
	if err != nil {
		return err
	}
	if *listen != "" {
		c.Dashboard.Listen = *listen
	}
	roles, err := f.healthTargets(c, *health)
	if err != nil {
		return err
	}
	m := newRoleMetrics()
	kc := kafkaConfig(c, log)
	kc.Metrics = m.kafka
	// Refused credentials would only show as warnings, forever: stop.
	if err := kafka.CheckAuth(ctx, kc); err != nil {
		return err
	}
	ins, err := newInspectorExpecting(c, kc, roles, f.expectedGroups(c), log)
	if err != nil {
		return err
	}
	defer ins.Close()
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", c.Dashboard.Listen)
	if err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	g, gctx := errgroup.WithContext(ctx)
	dash, err := dashboardHandler(ins, c, "", gctx.Done(), log)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.handler())
	mux.Handle("/", m.wrap("dashboard", dash))
	g.Go(func() error { return ins.Run(gctx) })
	m.watchLag(gctx, g, c, kc, nil, log)
	h := logging.Requests(mux, log.With("component", "http"), c.Log.RequestSample)
	g.Go(func() error { return intake.Serve(gctx, ln, h, log) })
	log.Info("dashboard listening", "addr", "http://"+hostAddr(ln.Addr()), "kafka", c.Kafka.Brokers, "registry", c.Registry.URL, "admin_networks", c.Security.AdminNetworks)
	return g.Wait()
}

const statusHelp = `Usage: eventlogging status [--config FILE] [--kafka-brokers ADDRS] [--json] [--errors N]

Prints the pipeline at a glance: the roles, consumer lag, the rate of each
stream over --interval, and the latest EventErrors. --json prints the same
as one JSON object, for scripts ("missing" names the roles down).

The roles are the ones the configuration expects — the processors'
consumer group (process.group), the sinks' groups it enables (sink.group
-sql with sink.sql, -files with sink.files), every URL of dashboard.health
and the registry of registry.url (each must answer 200) — and any other
eventlogging consumer group found on the cluster. A local standalone
(--data-dir) expects both sinks, its intake and its registry.

Exit status 1, naming them, when a role is down: an expected group with no
member (also one nobody has joined yet), a health URL that does not answer
200, or another group without members.`

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer, log *slog.Logger) error {
	fs := newFlagSet("status", statusHelp, stderr)
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
	ins, err := newInspectorExpecting(c, kafkaConfig(c, log), health, f.expectedGroups(c), log)
	if err != nil {
		return err
	}
	defer ins.Close()
	ins.Sample(ctx)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(*interval):
	}
	ins.Sample(ctx)
	ov, err := ins.Overview(ctx)
	if err != nil {
		return err
	}
	var recent []inspect.ErrorRecord
	if *nErrors > 0 {
		ectx, cancel := context.WithTimeout(ctx, 10*time.Second)
		recent, err = ins.Errors(ectx, inspect.ErrorFilter{Limit: *nErrors})
		cancel()
		if err != nil {
			return err
		}
	}
	down := ov.Down()
	missing := make([]string, 0, len(down))
	for _, r := range down {
		missing = append(missing, r.Role)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			inspect.Overview
			Errors  []inspect.ErrorRecord `json:"errors"`
			Healthy bool                  `json:"healthy"`
			Missing []string              `json:"missing"`
		}{ov, recent, len(down) == 0, missing}); err != nil {
			return err
		}
	} else {
		printStatus(stdout, ov, recent)
	}
	if len(down) > 0 {
		why := make([]string, len(down))
		for k, r := range down {
			why[k] = fmt.Sprintf("%s (%s)", r.Role, roleDetail(r))
		}
		return fmt.Errorf("%w: status: %d roles down: %s", errFindings, len(down), strings.Join(why, "; "))
	}
	return nil
}

// roleDetail is a role's detail, with its health URL when the detail does
// not name it already.
func roleDetail(r inspect.RoleHealth) string {
	if r.URL != "" && !strings.Contains(r.Detail, r.URL) {
		return r.URL + ": " + r.Detail
	}
	return r.Detail
}

func printStatus(w io.Writer, ov inspect.Overview, recent []inspect.ErrorRecord) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "ROLE\tHEALTH\tDETAIL\n")
	for _, r := range ov.Roles {
		h := "ok"
		if !r.Healthy {
			h = "DOWN"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Role, h, roleDetail(r))
	}
	fmt.Fprintf(tw, "\nGROUP\tSTATE\tMEMBERS\tLAG\n")
	for _, g := range ov.Groups {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", g.Group, g.State, g.Members, g.Lag)
	}
	fmt.Fprintf(tw, "\nTOPIC\tKIND\tRECORDS\tRATE/s\n")
	for _, s := range ov.Streams {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\n", s.Topic, s.Kind, s.Total, s.Rate)
	}
	fmt.Fprintf(tw, "\nvalid %.1f/s, invalid %.1f/s\n", ov.ValidRate, ov.InvalidRate)
	_ = tw.Flush()
	if len(recent) > 0 {
		fmt.Fprintf(w, "\nlatest EventErrors:\n")
		for _, e := range recent {
			fmt.Fprintf(w, "  %s  %s/%d  %s  %s  [%s]\n", e.Time.Format(time.RFC3339), e.Schema, e.Revision, e.Code, e.Message, e.UUID)
		}
	}
}

const replayHelp = `Usage: eventlogging replay [--schema NAME] [--since TIME] [--until TIME] [--partition P --from-offset N --to-offset M] [--wait D] [--force] [--dry-run]

Re-submits EventErrors to the raw topic they came from, after a schema fix
(for example once the missing schema revision is registered; replaying in
the same second as "schema push" is fine): each goes through the processor
again exactly as received, marked as a replay, so the processor looks its
schema up afresh rather than trusting what it remembered as unknown. Events
get the uuid they would have had, so the sinks store each once.

The processors record each replay's outcome in the compacted topic
_eventlogging_replayed; replay waits for them (--wait) and prints which
came out valid and which failed again, with the reason. Only a replay that
came out valid closes an EventError: one that failed again, or whose
outcome did not arrive in time, can be replayed again after the next fix.
Errors whose raw event was cut to size are skipped. Exit status 1 when a
replay failed again.

  --since, --until   RFC 3339 times or durations back from now (e.g. 2h)
  --wait D           how long to wait for the outcomes (default 30s; 0: do not wait)
  --force            replay closed errors too, and close every replayed one
                     whatever its outcome
  --dry-run          count what would be replayed, produce nothing`

func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer, log *slog.Logger) error {
	fs := newFlagSet("replay", replayHelp, stderr)
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
	if flt.Since, err = parseWhen(*since, now); err != nil {
		return fmt.Errorf("%w: replay: --since: %w", errUsage, err)
	}
	if flt.Until, err = parseWhen(*until, now); err != nil {
		return fmt.Errorf("%w: replay: --until: %w", errUsage, err)
	}
	if *partition >= 0 {
		flt.Offsets, flt.Partition, flt.FromOffset, flt.ToOffset = true, int32(*partition), *from, *to
	} else if *from != 0 || *to != 0 {
		return fmt.Errorf("%w: replay: --from-offset and --to-offset need --partition", errUsage)
	}
	ins, err := newInspector(c, kafkaConfig(c, log), nil, log)
	if err != nil {
		return err
	}
	defer ins.Close()
	res, err := ins.ReplayMatching(ctx, flt, inspect.ReplayOptions{DryRun: *dryRun, Force: *force, Wait: *wait})
	if err != nil {
		return err
	}
	return printReplay(stdout, res, *dryRun)
}

// printReplay writes what a replay did and came to; an error (exit status
// 1) when some replays failed again.
func printReplay(w io.Writer, res inspect.ReplayResult, dryRun bool) error {
	if dryRun {
		fmt.Fprintf(w, "would replay %d EventErrors, skipped %d\n", res.Replayed, res.Skipped)
	} else {
		fmt.Fprintf(w, "replayed %d EventErrors, skipped %d: %d valid, %d failed again, %d without an outcome yet\n",
			res.Replayed, res.Skipped, res.Valid, len(res.Failed), len(res.Pending))
	}
	for _, r := range res.Reasons {
		fmt.Fprintln(w, "  skipped", r)
	}
	for _, f := range res.Failed {
		fmt.Fprintf(w, "  failed again %s: %s: %s\n", f.UUID, f.Code, f.Message)
	}
	for _, u := range res.Pending {
		fmt.Fprintf(w, "  no outcome yet %s (still replayable; is a processor running?)\n", u)
	}
	if res.Forced {
		fmt.Fprintln(w, "  forced: every replayed EventError is recorded as replayed")
	}
	if len(res.Failed) > 0 && !res.Forced {
		return fmt.Errorf("%w: replay: %d EventErrors failed again; they stay replayable", errFindings, len(res.Failed))
	}
	return nil
}

// parseWhen reads an RFC 3339 time or a duration back from now; "" is zero.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(n, 0), nil
	}
	return time.Parse(time.RFC3339, s)
}
