package process

import (
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/eventlogging/eventlogging/internal/capsule"
)

// IPPolicy says what happens to the client IP of an event.
type IPPolicy int

// IP policies. The zero value hashes.
const (
	IPHash IPPolicy = iota // HMAC with the shared key, hex
	IPDrop                 // not stored
	IPKeep                 // stored raw; only when configured
)

// ParseIPPolicy parses "hash", "drop" or "keep".
func ParseIPPolicy(s string) (IPPolicy, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "hash", "":
		return IPHash, nil
	case "drop":
		return IPDrop, nil
	case "keep":
		return IPKeep, nil
	}
	return 0, fmt.Errorf("ip policy %q: want hash, drop or keep", s)
}

func (p IPPolicy) String() string {
	switch p {
	case IPDrop:
		return "drop"
	case IPKeep:
		return "keep"
	default:
		return "hash"
	}
}

// DefaultMaxRecordBytes is Config.MaxRecordBytes' default.
const DefaultMaxRecordBytes = 1_000_000

// DefaultMaxEventBytes is Config.MaxEventBytes' default: the largest raw
// record or event processed; the intake refuses larger ones (413).
const DefaultMaxEventBytes = 512 << 10

// Config tunes a Processor. Zero values are documented per field.
type Config struct {
	// Metrics counts events by schema and outcome; nil counts nothing.
	Metrics *Metrics
	// IPPolicy: hash (default), drop or keep.
	IPPolicy IPPolicy
	// TrustClientCapsuleFields restores the 2015 behaviour: recvFrom, seqId,
	// timestamp, dt, userAgent and clientIp sent by the client override the
	// values from the raw line. Off by default: server-derived fields win
	// and client values only fill fields the line format does not carry;
	// a client's clientIp is always discarded.
	TrustClientCapsuleFields bool
	// TopicTemplate names the per-schema topic; default "eventlogging_{schema}".
	TopicTemplate string
	// MixedTopic receives every valid event too; default
	// "eventlogging-valid-mixed"; "-" disables it.
	MixedTopic string
	// MixedExclude: schemas matching it skip the mixed topic (high-volume
	// schemas). Nil excludes none.
	MixedExclude *regexp.Regexp
	// ErrorTopic receives EventErrors; default "eventlogging_EventError".
	ErrorTopic string
	// ReplayTopic is the replay log: the outcome of each raw record marked
	// as a replay (header capsule.HeaderReplayOf) is written there, keyed
	// by the replayed EventError's uuid; default "_eventlogging_replayed".
	ReplayTopic string
	// ProcessorID names this processor in EventErrors; default host-pid.
	ProcessorID string
	// MaxEventBytes rejects larger raw records as EventErrors (they would
	// not fit a Kafka message with the capsule); default 512 KiB.
	MaxEventBytes int
	// MaxRawErrorBytes cuts rawEvent in EventErrors; default 64 KiB.
	MaxRawErrorBytes int
	// MaxRecordBytes bounds every record the processor outputs: a valid
	// event whose encoding is larger becomes an EventError, and
	// EventErrors are cut to fit. Default DefaultMaxRecordBytes, below
	// Kafka's default max.message.bytes (1,048,588) and the producer's
	// batch limit (1 MiB) with room for a record's framing.
	MaxRecordBytes int
	// Streams configures Event Platform streams; nil rejects every
	// Event Platform event as "stream not configured".
	Streams *Streams
	// Avro encodes events of streams with format "avro"; nil makes such
	// events EventErrors ("no Avro encoder configured").
	Avro AvroEncoder
	// Now is the clock, for tests; default time.Now.
	Now func() time.Time
	// Logger receives the processor's rare warnings (fields an Avro
	// schema drops); nil discards.
	Logger *slog.Logger
}

func (c *Config) setDefaults() error {
	if c.TopicTemplate == "" {
		c.TopicTemplate = capsule.DefaultTopicTmpl
	}
	switch c.MixedTopic {
	case "":
		c.MixedTopic = capsule.TopicValidMixed
	case "-":
		c.MixedTopic = ""
	}
	if c.ErrorTopic == "" {
		c.ErrorTopic = capsule.TopicEventError
	}
	if c.ReplayTopic == "" {
		c.ReplayTopic = capsule.TopicReplayLog
	}
	if c.ProcessorID == "" {
		host, _ := os.Hostname()
		c.ProcessorID = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if c.MaxEventBytes <= 0 {
		c.MaxEventBytes = DefaultMaxEventBytes
	}
	if c.MaxRawErrorBytes <= 0 {
		c.MaxRawErrorBytes = 64 << 10
	}
	if c.MaxRecordBytes <= 0 {
		c.MaxRecordBytes = DefaultMaxRecordBytes
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	for _, t := range []string{c.MixedTopic, c.ErrorTopic, c.ReplayTopic} {
		if t != "" && !capsule.ValidTopicName(t) {
			return fmt.Errorf("process config: invalid topic name %q", t)
		}
	}
	return nil
}
