// Package iphash hashes client IP addresses with a secret key that every
// processor shares and that rotates on a fixed period.
//
// The original EventLogging gave each process its own random key, so the same
// IP hashed differently depending on which process handled the event (bug
// T112688). Here the key of each period lives in a [KeyStore] (in production a
// compacted Kafka topic, see internal/kafka): the first processor that finds
// no key for a period appends a fresh random one, every processor then takes
// the entry with the lowest log offset for that period, so all of them agree
// without any further coordination.
//
// Periods are aligned to the Unix epoch: the period of an instant t is
// floor(t.Unix() / period-in-seconds). A [Rotator] keeps the current period's
// [Hasher] and swaps in the next one at each boundary; [Rotator.Current] is a
// single atomic load, safe on the hot path.
//
// Keys are secrets: nothing in this package logs them, and [Entry] and
// [Hasher] redact them when formatted or logged.
//
// This package does no I/O of its own and imports no Kafka client.
package iphash
