package capsule

import (
	"encoding/json"
	"time"
)

// TopicReplayLog is the default compacted topic recording the outcome of
// each replayed EventError, keyed by the EventError's uuid.
const TopicReplayLog = "_eventlogging_replayed"

// HeaderReplayOf is the Kafka header that marks a raw record re-submitted
// by a replay; its value is the uuid of the EventError being replayed. The
// processor resolves such a record's schema afresh (never from its
// negative cache) and records the outcome in the replay log.
const HeaderReplayOf = "eventlogging-replay-of"

// Replay outcomes, the Status of a [ReplayOutcome].
const (
	ReplayValid   = "valid"   // the replay was processed and is valid
	ReplayInvalid = "invalid" // the replay failed again; still replayable
	ReplayForced  = "forced"  // the operator marked it replayed whatever the outcome
)

// ReplayOutcome is the value of a replay-log record. The latest record of
// an EventError's uuid wins (the topic is compacted). An EventError counts
// as replayed when its latest outcome is valid or forced; an invalid one
// may be replayed again.
type ReplayOutcome struct {
	Status string    `json:"status"`
	Time   time.Time `json:"time"`
	// UUID of the event the replay produced (valid) or of its new
	// EventError (invalid).
	UUID    string `json:"uuid,omitempty"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	// Processor that processed the replay.
	Processor string `json:"processor,omitempty"`
}

// Replayed reports whether the outcome closes the EventError for replays.
func (o ReplayOutcome) Replayed() bool { return o.Status == ReplayValid || o.Status == ReplayForced }

// ParseReplayOutcome reads a replay-log value. Values written before
// outcomes were recorded (a bare RFC 3339 time) count as forced, as they
// were then: replayed, whatever came of it.
func ParseReplayOutcome(b []byte) ReplayOutcome {
	var o ReplayOutcome
	if json.Unmarshal(b, &o) == nil && o.Status != "" {
		return o
	}
	o = ReplayOutcome{Status: ReplayForced}
	if t, err := time.Parse(time.RFC3339, string(b)); err == nil {
		o.Time = t
	}
	return o
}
