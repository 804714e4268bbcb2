package sink

import (
	"context"

	"github.com/eventlogging/eventlogging/internal/kafka"
)

// Sink is a storage target Run feeds: the SQL tables (sqlsink.Writer), the
// hour-partitioned files (filesink.Sink), or any other that stores a batch
// of Kafka records.
//
// Run calls WriteRecords from one goroutine, one batch at a time, and
// Close once, after the last WriteRecords (and the last Maintain) returned
// and the consumer left its group. A Sink may also be a Resumer and a
// Maintainer.
type Sink interface {
	// WriteRecords stores a batch of records of the consumed topics,
	// in offset order per partition (canaries already removed). ctx
	// bounds the work; Run does not cancel it at shutdown, but gives up
	// retrying after 30 seconds.
	//
	// A nil error means the batch's offsets may be committed: the records
	// are durable, or — for a Resumer — the Sink's own offsets decide
	// where consumption resumes. Records that can never be stored are
	// returned as poison with the reason, and Run sends them to the error
	// topic before committing; the next WriteRecords call means they were
	// acknowledged (and, for an Acknowledger, so does AcknowledgePoison).
	// Any other failure is an error, and the same batch is written again
	// (so WriteRecords must absorb records it already stored, and report
	// their poison again); an error wrapping ErrFatal stops Run instead.
	WriteRecords(ctx context.Context, batch []kafka.Record) (poison []Poison, err error)
	// Close flushes what the Sink holds and releases it (the file sink
	// publishes its open files). Run calls it; whoever handed the Sink to
	// Run does not.
	Close() error
}

// Resumer is a Sink that records the offsets it stored and resumes from
// them rather than from the group's committed offsets (the file sink: a
// committed record may sit in a temp file a crash discarded).
type Resumer interface {
	// StartOffsets is called on every assignment, between batches, with
	// the partitions assigned, and returns the offset each resumes from;
	// a partition it leaves out resumes from the committed offset. An
	// error stops Run (resuming elsewhere could leave a gap).
	StartOffsets(ctx context.Context, assigned map[string][]int32) (map[string]map[int32]int64, error)
}

// Revoker is a Sink told when partitions are taken from it (the file sink
// on a shared store publishes a revoked partition's open files, and drops
// a lost one's: its new owner consumes those records again from the last
// checkpoint).
type Revoker interface {
	// Revoked is called between batches with the partitions revoked by a
	// rebalance or as the member leaves the group (lost false: nobody
	// consumes them before Revoked returns), or lost with the session
	// (lost true: another member may own them already).
	Revoked(ctx context.Context, revoked map[string][]int32, lost bool)
}

// Maintainer is a Sink with work to do on a timer besides writing (the
// file sink publishes old files and closes hours).
type Maintainer interface {
	// Maintain is called every Config.MaintainEvery from a goroutine of
	// Run's, concurrently with WriteRecords; ctx ends when Run stops. An
	// error wrapping ErrFatal stops Run; any other is logged.
	Maintain(ctx context.Context) error
}

// Acknowledger is a Sink told as soon as the error topic acknowledged its
// poison, rather than at the next WriteRecords, which an idle partition
// may never bring (the file sink publishes the files around the poison
// only once it is acknowledged).
type Acknowledger interface {
	// AcknowledgePoison is called with the poison the last WriteRecords
	// returned once the error topic acknowledged every record of it, and
	// before the batch's offsets are committed; never when sending it
	// failed (the batch is written again instead). Run calls it from the
	// goroutine that calls WriteRecords, possibly concurrently with
	// Maintain.
	AcknowledgePoison(poison []Poison)
}

// Poison is a record a Sink can never store, with the reason. Run sends it
// to the error topic as an ErrorRecord.
type Poison struct {
	Record kafka.Record
	Reason string
}

// ErrFatal stops Run at once when an error of WriteRecords or Maintain
// wraps it, without committing the batch in hand: the Sink cannot go on in
// this process, and a restart resumes it. It is kafka.ErrFatalBatch.
var ErrFatal = kafka.ErrFatalBatch
