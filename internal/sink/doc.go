// Package sink runs the sinks: the Sink contract (write a batch of Kafka
// records, report the records that can never be stored, close), and Run,
// the one consume → batch → write → commit loop every sink runs in its own
// consumer group: batching by size and time, retries, canaries (measured,
// not stored), metrics, and the sink-error topic, which receives each
// poison record with the reason before the batch's offsets are committed.
//
// The sinks implement Sink in their own packages: sqlsink (SQL tables) and
// filesink (hour-partitioned files, published exactly once with the
// offsets they hold: a Resumer and a Maintainer). This package imports
// neither; they import it for Poison and ErrFatal, and for what they read
// from a record alike: the Schemas and AvroDecoder they are given, the
// decoding of a record value (DecodeJSON, DecodeAvro) and its receive time
// (ReceiveTime).
package sink
