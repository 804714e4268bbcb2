package inspect

import (
	"encoding/json"
	"time"

	"github.com/eventlogging/eventlogging/internal/capsule"
)

// Overview is the pipeline at a glance: what the dashboard's first page and
// `eventlogging status` show.
type Overview struct {
	Time    time.Time     `json:"time"`
	Streams []StreamStats `json:"streams"` // one per output topic, sorted by topic
	Groups  []GroupStats  `json:"groups"`  // processor and sink consumer groups
	Roles   []RoleHealth  `json:"roles"`
	// Totals over every stream, events per second over the last window.
	ValidRate   float64 `json:"validRate"`
	InvalidRate float64 `json:"invalidRate"`
}

// StreamStats is one output topic: a schema's topic, the raw topic or the
// error topic.
type StreamStats struct {
	Topic  string    `json:"topic"`
	Kind   string    `json:"kind"`   // "raw", "schema", "error", "mixed", "other"
	Total  int64     `json:"total"`  // records in the topic (sum of high watermarks)
	Rate   float64   `json:"rate"`   // records/s over the last window
	Recent []float64 `json:"recent"` // records/s per interval, oldest first (sparkline), at most 60
}

// GroupStats is one consumer group.
type GroupStats struct {
	Group   string          `json:"group"`
	State   string          `json:"state"` // Kafka's group state: Stable, Empty, Dead (never joined), …
	Members int             `json:"members"`
	Lag     int64           `json:"lag"` // total
	Topics  []TopicGroupLag `json:"topics"`
	// Error is why the group could not be described (e.g. it does not
	// exist); empty when it was.
	Error string `json:"error,omitempty"`
}

// TopicGroupLag is a group's lag on one topic.
type TopicGroupLag struct {
	Topic string `json:"topic"`
	Lag   int64  `json:"lag"`
}

// RoleHealth is whether a role is running.
type RoleHealth struct {
	Role    string `json:"role"` // intake, processor, sink-sql, sink-files, registry
	Healthy bool   `json:"healthy"`
	Detail  string `json:"detail"` // e.g. "2 members, lag 0", "200 OK", the error
	// Expected: the configuration expects the role (Config.Expect, or a
	// Config.Health URL); false for a consumer group merely found on the
	// cluster.
	Expected bool `json:"expected"`
	// Group is the role's consumer group (processors, sinks), URL its
	// health URL (intake, registry, …).
	Group string `json:"group,omitempty"`
	URL   string `json:"url,omitempty"`
}

// ExpectedGroup is a role the configuration runs as a consumer group.
type ExpectedGroup struct {
	Role  string // processor, sink-sql, sink-files
	Group string // e.g. eventlogging-processor
}

// Down returns the roles that are not healthy, in Overview order.
func (o Overview) Down() []RoleHealth {
	var out []RoleHealth
	for _, r := range o.Roles {
		if !r.Healthy {
			out = append(out, r)
		}
	}
	return out
}

// SchemaSummary is one registry subject.
type SchemaSummary struct {
	Name     string `json:"name"`
	Type     string `json:"type"`     // JSON or AVRO
	Versions []int  `json:"versions"` // the registry's version numbers, ascending
	Latest   int    `json:"latest"`
	// LatestLabel is the latest version as users name it (see
	// SchemaVersion.Label): "7", "1.1.0".
	LatestLabel   string `json:"latestLabel"`
	Compatibility string `json:"compatibility"`
}

// SchemaVersion is one registered version of a subject.
type SchemaVersion struct {
	Version int `json:"version"`
	ID      int `json:"id"` // global id (= legacy revision)
	// Label is the version as users and events name it: an Event Platform
	// schema's version ("1.1.0", the registry metadata property
	// "version"), else the legacy revision, its global id ("7").
	Label  string          `json:"label"`
	Schema json.RawMessage `json:"schema"`
	// Example is an event that validates against it, when the schema
	// has one (its "examples" keyword); nil otherwise.
	Example json.RawMessage `json:"example,omitempty"`
}

// SchemaDetail is a subject with every version.
type SchemaDetail struct {
	SchemaSummary
	Versions []SchemaVersion `json:"versionList"`
}

// ErrorFilter selects EventErrors.
type ErrorFilter struct {
	Schema string    // "" for every schema
	Since  time.Time // zero: no lower bound
	Until  time.Time // zero: no upper bound
	Limit  int       // newest first; 0 means 100, -1 no limit
	// Scan bounds the records read per partition, newest first; 0 means
	// the Inspector's ScanPerPartition, -1 the whole topic.
	Scan int64
	// Offsets, when set, restricts the scan to [FromOffset, ToOffset) of
	// Partition (ToOffset 0: to the end).
	Offsets    bool
	Partition  int32
	FromOffset int64
	ToOffset   int64
}

// ErrorRecord is one EventError read from the error topic.
type ErrorRecord struct {
	UUID     string    `json:"uuid"` // the error capsule's uuid: what Replay takes
	Time     time.Time `json:"time"`
	Schema   string    `json:"schema"`   // as the event named it: a legacy name, or an Event Platform $schema
	Revision int64     `json:"revision"` // the legacy revision; -1 when unknown and for Event Platform events
	// Subject is Schema's registry subject: the legacy name, or the
	// $schema's title ("analytics/edit_funnel" for
	// "/analytics/edit_funnel/1.0.0"); "" when Schema names none.
	Subject string `json:"subject,omitempty"`
	// Label is the schema version as users name it: the legacy revision
	// ("7") or the $schema's version ("1.0.0"); "" when unknown.
	Label      string          `json:"label,omitempty"`
	Code       string          `json:"code"`
	Message    string          `json:"message"`
	RawEvent   string          `json:"rawEvent"`
	Event      json.RawMessage `json:"event,omitempty"` // the client's JSON event, when it could be extracted from the raw record
	Errors     []Violation     `json:"errors,omitempty"`
	Partition  int32           `json:"partition"`
	Offset     int64           `json:"offset"`
	Replayed   bool            `json:"replayed"`   // already re-submitted: its latest replay came out valid, or was forced
	Replayable bool            `json:"replayable"` // false when the raw event was cut to size
	// Replay is the latest outcome of its replays (the replay log's, or
	// the one a replay waited for): when, valid, failed again and why, or
	// forced; nil when it was never replayed or no outcome is known yet.
	Replay *capsule.ReplayOutcome `json:"replay,omitempty"`
}

// noteReplay records the latest outcome of rec's replays; ok false: none.
func (rec *ErrorRecord) noteReplay(o capsule.ReplayOutcome, ok bool) {
	if !ok {
		rec.Replayed, rec.Replay = false, nil
		return
	}
	if y := o.Time.Year(); y < 1 || y > 9999 {
		// Out of RFC 3339's range, the record would not encode: unknown.
		o.Time = time.Time{}
	}
	rec.Replayed, rec.Replay = o.Replayed(), &o
}

// Violation is one validation error: where and why.
type Violation struct {
	Path    string `json:"path"` // JSON pointer into the event, e.g. /event/action
	Message string `json:"message"`
}

// ReplayResult says what a replay did.
type ReplayResult struct {
	Replayed int      `json:"replayed"`          // re-submitted to the raw topic
	Skipped  int      `json:"skipped"`           // already replayed, or not replayable
	Reasons  []string `json:"reasons,omitempty"` // why each skipped one was
	// The outcomes the processors reported within the wait: Valid replays
	// are closed; Failed ones stay replayable; Pending ones had no outcome
	// yet (a processor down or behind) and stay replayable too.
	Valid   int             `json:"valid"`
	Failed  []ReplayFailure `json:"failed,omitempty"`
	Pending []string        `json:"pending,omitempty"`
	// Forced replays were recorded as replayed without waiting.
	Forced bool `json:"forced,omitempty"`
}

// ReplayFailure is a replayed EventError that failed again.
type ReplayFailure struct {
	UUID    string `json:"uuid"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ReplayOptions tune a replay.
type ReplayOptions struct {
	// DryRun counts what would be replayed and produces nothing.
	DryRun bool
	// Force replays EventErrors already replayed too, and records every
	// replayed one as done whatever its outcome.
	Force bool
	// Wait is how long to wait for the processors' outcomes; 0 does not
	// wait (every replay is then Pending).
	Wait time.Duration
}

// TailEvent is one record delivered to a live tail.
type TailEvent struct {
	Topic     string          `json:"topic"`
	Partition int32           `json:"partition"`
	Offset    int64           `json:"offset"`
	Time      time.Time       `json:"time"`
	Value     json.RawMessage `json:"value"` // the record as JSON (Avro decoded), or a JSON string when not JSON
}
