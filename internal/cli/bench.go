package cli

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"time"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/loadgen"
	"github.com/eventlogging/eventlogging/internal/role"
)

const benchDefaultURL = "http://127.0.0.1:8080"

func runBench(ctx context.Context, args []string, e env) error {
	stdout, stderr, logger := e.stdout, e.stderr, e.log
	fs := newFlagSet("bench", helpText("bench"), stderr)
	var b loadgen.Bench
	var dataDir string
	var noFollow, progress bool
	fs.StringVar(&b.URL, "url", benchDefaultURL, "intake base `URL`; when not given and --data-dir holds a running standalone's standalone.json, that standalone's")
	fs.BoolVar(&b.AllowRemote, "allow-remote", false, "allow a --url that is not a loopback address (localhost, 127.0.0.0/8, ::1)")
	fs.StringVar(&b.Mode, "mode", "beacon", "`MODE` of requests: beacon (GET /beacon/event), post (synchronous POST /v1/events), hasty (POST ?hasty=true) or mix")
	fs.IntVar(&b.Batch, "batch", 50, "events per POST in modes post, hasty and mix, `N` from 1 to 1000 (the intake's intake.max_batch_events)")
	fs.Float64Var(&b.Rate, "rate", 0, "target `EVENTS_PER_SECOND`, paced evenly across the clients (0: as fast as the clients go), e.g. --rate 20000")
	fs.IntVar(&b.Concurrency, "concurrency", 8, "`N` clients, each on its own keep-alive connection with one request in flight")
	fs.DurationVar(&b.Duration, "duration", 10*time.Second, "stop sending after `D`, e.g. 20s or 5m (at most 24h); with --events and no --duration the limit is 1h")
	fs.Int64Var(&b.Events, "events", 0, "stop after `N` events (at most 100,000,000; 0: only --duration)")
	fs.StringVar(&b.Schemas, "schemas", "examples/schemas", "schema folder `DIR` (<Name>/<revision>.json|yaml), the one the pipeline serves")
	fs.StringVar(&b.Mix, "schema-mix", "", "schemas and weights `Name[/revision][:weight],...`, e.g. NavigationTiming:3,Generic:1 (default: every schema of --schemas, newest revision, equally)")
	fs.Float64Var(&b.Invalid, "invalid", 0.05, "`SHARE` of events, 0 to 1, generated with one violation (wrong type, value outside an enum, undeclared property)")
	fs.IntVar(&b.EventSize, "event-size", 0, "approximate size in `BYTES` of each capsule's JSON, padded through a free string property of the schema (schemas without one keep their size; the report says which); 0: natural size")
	fs.Uint64Var(&b.Seed, "seed", 0, "random `SEED` for the generated values (0: a random one)")
	fs.DurationVar(&b.Timeout, "timeout", 30*time.Second, "per-request timeout `D`")
	fs.BoolVar(&noFollow, "no-follow", false, "do not follow the events into Kafka: report the HTTP side only")
	fs.DurationVar(&b.FollowTimeout, "follow-timeout", time.Minute, "how long to wait after the last answer for accepted events to appear in the topics, `D`")
	o := newOverlay(fs, "configuration `FILE` whose kafka section (brokers, TLS, SASL) to follow the output topics with",
		flagBrokers.withUsage("Kafka bootstrap addresses `host:port,...` to follow the output topics; default: the local standalone broker of --data-dir"))
	fs.StringVar(&dataDir, "data-dir", "data", "data directory `DIR` of a local standalone, searched for its broker (and, without --url, its HTTP address)")
	fs.StringVar(&b.TopicTemplate, "topic-template", capsule.DefaultTopicTmpl, "per-schema topic `TEMPLATE` of the pipeline (process.topic_template)")
	fs.StringVar(&b.ErrorTopic, "error-topic", capsule.TopicEventError, "EventError `TOPIC` of the pipeline (process.error_topic)")
	fs.BoolVar(&b.JSON, "json", false, "print the report as JSON")
	fs.BoolVar(&progress, "progress", false, "print a progress line on stderr every second (default: only when stderr is a terminal)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	b.Logger = logger.With("component", "bench")
	b.DurationSet = set["duration"]
	if !set["url"] {
		if info, _ := role.ReadStandaloneInfo(dataDir); info.HTTP != "" {
			b.URL = info.HTTP
		}
	}
	if !noFollow {
		b.Kafka = func() (kafka.Config, error) {
			kc, _, _, err := clusterFromFlags(o.config, o.value(flagBrokers.name), dataDir, b.Logger)
			return kc, err
		}
	}
	if progress || isTerminal(stderr) {
		b.Progress = stderr
	}
	err := b.Run(ctx, stdout)
	switch {
	case errors.Is(err, loadgen.ErrUsage):
		return exitAs{err, errUsage}
	case errors.Is(err, loadgen.ErrFindings):
		return exitAs{err, errFindings}
	}
	return err
}

// exitAs is err, given the exit status of kind (errUsage, errFindings).
type exitAs struct{ err, kind error }

func (e exitAs) Error() string   { return e.err.Error() }
func (e exitAs) Unwrap() []error { return []error{e.err, e.kind} }

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
