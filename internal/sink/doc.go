// Package sink runs the sinks: each its own consumer group over the valid
// topics, batching by size and time, writing durably (SQL rows, or files
// published exactly once), committing after the write, and sending records
// that can never be written to a sink-error topic with the reason.
package sink
