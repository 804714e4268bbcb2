// Package testsupport holds what tests of several packages need alike: a
// size-limited tmpfs to fill up, a checker of JSON log lines, a reader of
// the Parquet files a sink wrote. It is imported by tests only.
package testsupport
