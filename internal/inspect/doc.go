// Package inspect reads the running pipeline from Kafka and the registry —
// throughput, consumer lag, recent EventErrors, live records — and replays
// EventErrors to the raw topic; the dashboard and `eventlogging status` and
// `replay` are its front ends.
package inspect
