// Package testsupport holds what tests of several packages need alike: a
// size-limited tmpfs to fill up, a checker of JSON log lines, a reader of
// the Parquet files a sink wrote, an in-process schema registry with the
// Avro schemas the tests register, a headless browser, the original
// implementation's reference vectors, files written with their folders, a
// buffer safe for concurrent writers, polling with a deadline, and the
// object stores of scripts/s3.sh and scripts/hdfs.sh. It is imported by
// tests only.
package testsupport
