// Package role builds the pipeline's roles — intake, processor, registry,
// sinks, dashboard — from a config.Config, and runs them: each is built by
// its New… function (which starts nothing) and runs with Run(ctx), which
// starts the role's goroutines, owns its shutdown and returns only after
// they ended. Standalone runs them all in one process, in the order and
// stop order written once in standalone.go.
package role
