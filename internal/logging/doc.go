// Package logging builds the process's log handler — text or JSON lines on
// one writer, each key at most once per line — and the sampled HTTP request
// log. Only main constructs the handler; packages receive a *slog.Logger.
//
// The keys every line may carry, in both formats:
//
//	time       when (RFC 3339 with nanoseconds in JSON)
//	level      DEBUG, INFO, WARN or ERROR
//	msg        a constant message
//	component  the package or role that wrote the line (registry, sqlsink, …)
//	err        the error, when there is one
//
// and then the line's own attributes (topic, partition, path, …). A logger
// that is given "component" (or any key) twice keeps the innermost value:
// logger.With("component", "sink").With("component", "sqlsink") writes
// component=sqlsink once.
package logging
