// Package loadgen is the `eventlogging bench` load generator: it drives a
// running pipeline over HTTP (beacons, synchronous and hasty POSTs) with
// events generated from the registered schemas, follows them into the
// per-schema and error topics, and reports throughput, latency percentiles,
// loss and duplicates — the `ab` run of Wikimedia's 2015 load test, built
// for this product.
//
// Every event carries a marker in the capsule's webHost field,
// "bench-<run id>-<sequence>-<send time in µs since the run started>":
// webHost is a free string the processor copies into the output capsule, and
// it is part of the raw event an EventError quotes, so each output record
// names the event it came from and when that event was sent. Per-event state
// (accepted, seen, generated invalid) lives in a bitmap indexed by the
// sequence number: memory grows with the number of events (4 bits each,
// 50 MB at the 100 million cap), never with maps of ids.
package loadgen
