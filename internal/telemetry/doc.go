// Package telemetry builds the Prometheus registry every role exports at
// /metrics, serves it, and instruments HTTP handlers by route and status.
// Metric names and labels are listed in docs/metrics.md.
package telemetry
