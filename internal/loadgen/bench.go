package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/eventlogging/eventlogging/internal/kafka"
)

// ErrUsage marks a bench setting out of bounds (the command's exit status
// 2); ErrFindings a run that lost or misrouted events (exit status 1).
var (
	ErrUsage    = errors.New("usage")
	ErrFindings = errors.New("findings")
)

// BenchEventsDuration bounds a run with Events but no Duration given.
const BenchEventsDuration = time.Hour

// Bench is a run of `eventlogging bench`, its settings named as the
// command's flags.
type Bench struct {
	URL         string
	AllowRemote bool
	Mode        string
	Batch       int
	Rate        float64
	Concurrency int
	// Duration; with Events and DurationSet false, BenchEventsDuration.
	Duration    time.Duration
	DurationSet bool
	Events      int64
	Schemas     string // the schema folder
	Mix         string // Name[/revision][:weight],...
	Invalid     float64
	EventSize   int
	Seed        uint64
	Timeout     time.Duration
	// Kafka finds the cluster to follow the events in; nil: not followed.
	Kafka         func() (kafka.Config, error)
	FollowTimeout time.Duration
	TopicTemplate string
	ErrorTopic    string
	JSON          bool
	// Progress receives a progress line every second; nil: none.
	Progress io.Writer
	Logger   *slog.Logger
}

// Run checks the settings, generates the events from the schemas, sends
// them, follows them through Kafka and writes the report to w. The error
// wraps ErrUsage for a setting out of bounds and ErrFindings for lost or
// misrouted events.
func (b Bench) Run(ctx context.Context, w io.Writer) error {
	log := b.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	mode, err := ParseMode(b.Mode)
	if err != nil {
		return fmt.Errorf("%w: bench: --%w", ErrUsage, err)
	}
	switch {
	case b.Batch < 1 || b.Batch > MaxBatch:
		return fmt.Errorf("%w: bench: --batch %d: must be within 1 and %d", ErrUsage, b.Batch, MaxBatch)
	case b.Concurrency < 1 || b.Concurrency > 10_000:
		return fmt.Errorf("%w: bench: --concurrency %d: must be within 1 and 10000", ErrUsage, b.Concurrency)
	case b.Rate < 0:
		return fmt.Errorf("%w: bench: --rate %v: must be 0 or more", ErrUsage, b.Rate)
	case b.Events < 0 || b.Events > MaxEvents:
		return fmt.Errorf("%w: bench: --events %d: must be within 0 and %d", ErrUsage, b.Events, MaxEvents)
	case b.Duration <= 0 || b.Duration > MaxDuration:
		return fmt.Errorf("%w: bench: --duration %v: must be above 0 and at most %v", ErrUsage, b.Duration, MaxDuration)
	case !(b.Invalid >= 0 && b.Invalid <= 1):
		return fmt.Errorf("%w: bench: --invalid %v: must be within 0 and 1", ErrUsage, b.Invalid)
	case b.EventSize < 0:
		return fmt.Errorf("%w: bench: --event-size %d: must be 0 or more", ErrUsage, b.EventSize)
	case b.Timeout <= 0 || b.FollowTimeout <= 0:
		return fmt.Errorf("%w: bench: --timeout and --follow-timeout must be above 0", ErrUsage)
	}
	if b.Events > 0 && !b.DurationSet {
		b.Duration = BenchEventsDuration
	}
	if err := CheckTarget(b.URL, b.AllowRemote); err != nil {
		return err
	}
	mix, err := ParseMix(b.Mix)
	if err != nil {
		return fmt.Errorf("%w: bench: --schema-mix: %w", ErrUsage, err)
	}

	schemaSet, err := LoadSchemas(ctx, b.Schemas)
	if err != nil {
		return fmt.Errorf("bench: --schemas %s: %w", b.Schemas, err)
	}
	schemas, weights, notes, err := schemaSet.Mix(mix)
	if err != nil {
		return fmt.Errorf("%w: bench: %w", ErrUsage, err)
	}
	runID := NewRunID()
	gen, err := NewGenerator(schemas, weights, GenConfig{RunID: runID, Invalid: b.Invalid, EventSize: b.EventSize})
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	notes = append(notes, gen.Notes()...)
	if b.EventSize > 1000 && (mode == ModeBeacon || mode == ModeMix) {
		notes = append(notes, fmt.Sprintf("--event-size %d: beacon URLs longer than intake.max_url_length (default 2,000 characters) are answered 414", b.EventSize))
	}

	cfg := Config{
		URL: b.URL, Mode: mode, Batch: b.Batch, Rate: b.Rate, Concurrency: b.Concurrency,
		Events: b.Events, Duration: b.Duration, Generator: gen, RunID: runID,
		RequestTimeout: b.Timeout, Seed: b.Seed, Logger: log, Notes: notes, Progress: b.Progress,
	}
	if b.Kafka != nil {
		kc, err := b.Kafka()
		if err != nil {
			return fmt.Errorf("bench: following the output topics needs Kafka (--kafka-brokers, --config, or --no-follow): %w", err)
		}
		cfg.Follow = &FollowConfig{
			Kafka:         kc,
			TopicTemplate: b.TopicTemplate, ErrorTopic: b.ErrorTopic, Timeout: b.FollowTimeout,
		}
	}
	log.Info("bench starting", "run", runID, "url", b.URL, "mode", string(mode), "concurrency", b.Concurrency,
		"rate", b.Rate, "events", b.Events, "duration", b.Duration.String(), "schemas", len(schemas), "follow", b.Kafka != nil)
	rep, err := Run(ctx, cfg)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if b.JSON {
		err = rep.WriteJSON(w)
	} else {
		err = rep.WriteText(w)
	}
	if err != nil {
		return err
	}
	return Findings(rep)
}

// Findings turns loss and misrouting into an error wrapping ErrFindings.
func Findings(rep *Report) error {
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
	return fmt.Errorf("%w: bench: %s", ErrFindings, strings.Join(problems, "; "))
}

// CheckTarget refuses a target URL that is not a loopback address unless
// allowRemote: a load generator pointed at the wrong host is a denial of
// service.
func CheckTarget(raw string, allowRemote bool) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: bench: --url %q: want http://host:port", ErrUsage, raw)
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
	return fmt.Errorf("%w: bench: --url %s is not a loopback address; pass --allow-remote to load another host", ErrUsage, raw)
}
