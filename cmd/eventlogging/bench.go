package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/loadgen"
)

const benchHelp = `Usage:
  eventlogging bench [flags]

Drives a running pipeline over HTTP the way Wikimedia's 2015 load test did
(ab against the beacon), with events generated from the schemas, then
follows them through Kafka into the per-schema topics and the error topic,
and reports: requests/s, events/s accepted, HTTP status counts, intake
latency percentiles, end-to-end events/s and latency, events lost,
duplicates, and invalid events routed to the error topic.

Events: legacy capsules of the schemas in --schemas (<Name>/<revision>.json
or .yaml, the folder the pipeline was started with), newest revision of each,
equally mixed unless --schema-mix says otherwise. Values are random but
valid: types, enums, formats, lengths, bounds and nested objects are
honoured. --invalid sets the share of events with one controlled violation
(a value of the wrong type, a string outside an enum, or an undeclared
property); those must end up in the error topic. Every event carries a
marker in the capsule's webHost, "bench-<run id>-<sequence>-<send time>",
which the processor keeps in the output capsule and the EventError quotes:
that is how each output record is matched to the event sent.

Modes:
  beacon  GET /beacon/event?<url-encoded capsule>;   one event a request, 204
  post    POST /v1/events, a JSON array of --batch events, validated at once:
          201 / 207 / 400 with a result per event (checked against what was
          generated)
  hasty   POST /v1/events?hasty=true, --batch events, 202
  mix     each request one of the three, at random

Bounds: the run stops after --events events or --duration, whichever comes
first. Without --events it lasts --duration (default 10s); with --events and
no --duration it stops after 1h at the latest. Hard caps: 100,000,000 events,
24h. Memory stays bounded: per-event state is 4 bits, latencies go to
fixed-size histograms.

Following: before the first request bench fixes the end offsets of the
output topics (topics created during the run are read from their start),
then waits up to --follow-timeout after the last answer for every accepted
event to appear. The broker is --kafka-brokers; with --config, the
configuration's kafka section (brokers, TLS, SASL; --kafka-brokers still
overrides the addresses); otherwise the local standalone's found through
--data-dir (as tail finds it). --no-follow skips following.

Only loopback targets are allowed unless --allow-remote: a load generator
pointed at the wrong host is a denial of service.

Exit status: 0; 1 when events were lost or misrouted (a valid event in the
error topic, an invalid one in a schema topic, a synchronous answer
contradicting what was generated); 2 for usage errors.

Examples:
  # 20 s of beacons from 32 clients as fast as they go, against a standalone
  # started with --data-dir /tmp/benchdata
  eventlogging bench --url http://127.0.0.1:18181 --data-dir /tmp/benchdata --concurrency 32 --duration 20s

  # synchronous batches of 50 at 20,000 events/s, 5% invalid, JSON report
  eventlogging bench --mode post --batch 50 --rate 20000 --invalid 0.05 --json

  # exactly 100,000 events of two schemas (3:1), 1 KB each, no Kafka access
  eventlogging bench --events 100000 --schema-mix NavigationTiming:3,Generic:1 --event-size 1000 --no-follow
`

type benchFlags struct {
	url, mode, schemas, mix, brokers, dataDir string
	config                                    string
	topicTemplate, errorTopic                 string
	batch, concurrency, eventSize             int
	events                                    int64
	rate, invalid                             float64
	duration, timeout, followTimeout          time.Duration
	seed                                      uint64
	allowRemote, noFollow, json, progress     bool
}

// benchDefaultDuration bounds a run without --events; benchEventsDuration
// one with --events but no --duration.
const (
	benchDefaultURL      = "http://127.0.0.1:8080"
	benchDefaultDuration = 10 * time.Second
	benchEventsDuration  = time.Hour
)

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer, logger *slog.Logger) error {
	fs := newFlagSet("bench", benchHelp, stderr)
	var f benchFlags
	fs.StringVar(&f.url, "url", benchDefaultURL, "intake base `URL`; when not given and --data-dir holds a running standalone's standalone.json, that standalone's")
	fs.BoolVar(&f.allowRemote, "allow-remote", false, "allow a --url that is not a loopback address (localhost, 127.0.0.0/8, ::1)")
	fs.StringVar(&f.mode, "mode", "beacon", "`MODE` of requests: beacon (GET /beacon/event), post (synchronous POST /v1/events), hasty (POST ?hasty=true) or mix")
	fs.IntVar(&f.batch, "batch", 50, "events per POST in modes post, hasty and mix, `N` from 1 to 1000 (the intake's intake.max_batch_events)")
	fs.Float64Var(&f.rate, "rate", 0, "target `EVENTS_PER_SECOND`, paced evenly across the clients (0: as fast as the clients go), e.g. --rate 20000")
	fs.IntVar(&f.concurrency, "concurrency", 8, "`N` clients, each on its own keep-alive connection with one request in flight")
	fs.DurationVar(&f.duration, "duration", benchDefaultDuration, "stop sending after `D`, e.g. 20s or 5m (at most 24h); with --events and no --duration the limit is 1h")
	fs.Int64Var(&f.events, "events", 0, "stop after `N` events (at most 100,000,000; 0: only --duration)")
	fs.StringVar(&f.schemas, "schemas", "examples/schemas", "schema folder `DIR` (<Name>/<revision>.json|yaml), the one the pipeline serves")
	fs.StringVar(&f.mix, "schema-mix", "", "schemas and weights `Name[/revision][:weight],...`, e.g. NavigationTiming:3,Generic:1 (default: every schema of --schemas, newest revision, equally)")
	fs.Float64Var(&f.invalid, "invalid", 0.05, "`SHARE` of events, 0 to 1, generated with one violation (wrong type, value outside an enum, undeclared property)")
	fs.IntVar(&f.eventSize, "event-size", 0, "approximate size in `BYTES` of each capsule's JSON, padded through a free string property of the schema (schemas without one keep their size; the report says which); 0: natural size")
	fs.Uint64Var(&f.seed, "seed", 0, "random `SEED` for the generated values (0: a random one)")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "per-request timeout `D`")
	fs.BoolVar(&f.noFollow, "no-follow", false, "do not follow the events into Kafka: report the HTTP side only")
	fs.DurationVar(&f.followTimeout, "follow-timeout", time.Minute, "how long to wait after the last answer for accepted events to appear in the topics, `D`")
	fs.StringVar(&f.brokers, "kafka-brokers", "", "Kafka bootstrap addresses `host:port,...` to follow the output topics; default: the local standalone broker of --data-dir")
	fs.StringVar(&f.config, "config", "", "configuration `FILE` whose kafka section (brokers, TLS, SASL) to follow the output topics with")
	fs.StringVar(&f.dataDir, "data-dir", "data", "data directory `DIR` of a local standalone, searched for its broker (and, without --url, its HTTP address)")
	fs.StringVar(&f.topicTemplate, "topic-template", capsule.DefaultTopicTmpl, "per-schema topic `TEMPLATE` of the pipeline (process.topic_template)")
	fs.StringVar(&f.errorTopic, "error-topic", capsule.TopicEventError, "EventError `TOPIC` of the pipeline (process.error_topic)")
	fs.BoolVar(&f.json, "json", false, "print the report as JSON")
	fs.BoolVar(&f.progress, "progress", false, "print a progress line on stderr every second (default: only when stderr is a terminal)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	log := logger.With("component", "bench")

	mode, err := loadgen.ParseMode(f.mode)
	if err != nil {
		return fmt.Errorf("%w: bench: --%w", errUsage, err)
	}
	switch {
	case f.batch < 1 || f.batch > loadgen.MaxBatch:
		return fmt.Errorf("%w: bench: --batch %d: must be within 1 and %d", errUsage, f.batch, loadgen.MaxBatch)
	case f.concurrency < 1 || f.concurrency > 10_000:
		return fmt.Errorf("%w: bench: --concurrency %d: must be within 1 and 10000", errUsage, f.concurrency)
	case f.rate < 0:
		return fmt.Errorf("%w: bench: --rate %v: must be 0 or more", errUsage, f.rate)
	case f.events < 0 || f.events > loadgen.MaxEvents:
		return fmt.Errorf("%w: bench: --events %d: must be within 0 and %d", errUsage, f.events, loadgen.MaxEvents)
	case f.duration <= 0 || f.duration > loadgen.MaxDuration:
		return fmt.Errorf("%w: bench: --duration %v: must be above 0 and at most %v", errUsage, f.duration, loadgen.MaxDuration)
	case !(f.invalid >= 0 && f.invalid <= 1):
		return fmt.Errorf("%w: bench: --invalid %v: must be within 0 and 1", errUsage, f.invalid)
	case f.eventSize < 0:
		return fmt.Errorf("%w: bench: --event-size %d: must be 0 or more", errUsage, f.eventSize)
	case f.timeout <= 0 || f.followTimeout <= 0:
		return fmt.Errorf("%w: bench: --timeout and --follow-timeout must be above 0", errUsage)
	}
	if f.events > 0 && !set["duration"] {
		f.duration = benchEventsDuration
	}
	if !set["url"] {
		if info := localStandalone(f.dataDir); info.HTTP != "" {
			f.url = info.HTTP
		}
	}
	if err := checkBenchTarget(f.url, f.allowRemote); err != nil {
		return err
	}
	mix, err := loadgen.ParseMix(f.mix)
	if err != nil {
		return fmt.Errorf("%w: bench: --schema-mix: %w", errUsage, err)
	}

	schemaSet, err := loadgen.LoadSchemas(ctx, f.schemas)
	if err != nil {
		return fmt.Errorf("bench: --schemas %s: %w", f.schemas, err)
	}
	schemas, weights, notes, err := schemaSet.Mix(mix)
	if err != nil {
		return fmt.Errorf("%w: bench: %w", errUsage, err)
	}
	runID := loadgen.NewRunID()
	gen, err := loadgen.NewGenerator(schemas, weights, loadgen.GenConfig{RunID: runID, Invalid: f.invalid, EventSize: f.eventSize})
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	notes = append(notes, gen.Notes()...)
	if f.eventSize > 1000 && (mode == loadgen.ModeBeacon || mode == loadgen.ModeMix) {
		notes = append(notes, fmt.Sprintf("--event-size %d: beacon URLs longer than intake.max_url_length (default 2,000 characters) are answered 414", f.eventSize))
	}

	cfg := loadgen.Config{
		URL: f.url, Mode: mode, Batch: f.batch, Rate: f.rate, Concurrency: f.concurrency,
		Events: f.events, Duration: f.duration, Generator: gen, RunID: runID,
		RequestTimeout: f.timeout, Seed: f.seed, Logger: log, Notes: notes,
	}
	if !f.noFollow {
		kc, _, _, err := clusterFromFlags(f.config, f.brokers, f.dataDir, log)
		if err != nil {
			return fmt.Errorf("bench: following the output topics needs Kafka (--kafka-brokers, --config, or --no-follow): %w", err)
		}
		cfg.Follow = &loadgen.FollowConfig{
			Kafka:         kc,
			TopicTemplate: f.topicTemplate, ErrorTopic: f.errorTopic, Timeout: f.followTimeout,
		}
	}
	if f.progress || isTerminal(stderr) {
		cfg.Progress = stderr
	}
	log.Info("bench starting", "run", runID, "url", f.url, "mode", string(mode), "concurrency", f.concurrency,
		"rate", f.rate, "events", f.events, "duration", f.duration.String(), "schemas", len(schemas), "follow", !f.noFollow)
	rep, err := loadgen.Run(ctx, cfg)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if f.json {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteText(stdout)
	}
	if err != nil {
		return err
	}
	return benchFindings(rep)
}

// benchFindings turns loss and misrouting into exit status 1.
func benchFindings(rep *loadgen.Report) error {
	var problems []string
	if rep.Events.Misjudged > 0 {
		problems = append(problems, fmt.Sprintf("%d synchronous answers contradict the generated validity", rep.Events.Misjudged))
	}
	if fs := rep.Follow; fs != nil && rep.StoppedBy != "interrupted" {
		if fs.Lost > 0 {
			problems = append(problems, fmt.Sprintf("%d accepted events not found in the topics within --follow-timeout", fs.Lost))
		}
		if n := fs.UnexpectedErrors + fs.UnexpectedValid; n > 0 {
			problems = append(problems, fmt.Sprintf("%d events misrouted", n))
		}
		if len(fs.Errors) > 0 {
			problems = append(problems, "following failed: "+strings.Join(fs.Errors, "; "))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: bench: %s", errFindings, strings.Join(problems, "; "))
}

// checkBenchTarget refuses non-loopback targets unless allowed.
func checkBenchTarget(raw string, allowRemote bool) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: bench: --url %q: want http://host:port", errUsage, raw)
	}
	if allowRemote {
		return nil
	}
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%w: bench: --url %s is not a loopback address; pass --allow-remote to load another host", errUsage, raw)
}

// localStandalone reads the standalone.json of a data directory; the zero
// value when there is none.
func localStandalone(dataDir string) standaloneInfo {
	var info standaloneInfo
	if b, err := os.ReadFile(filepath.Join(dataDir, standaloneFile)); err == nil {
		_ = json.Unmarshal(b, &info) // unreadable: the zero value
	}
	return info
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
