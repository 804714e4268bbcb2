// Package schemalog is the schema registry's storage: a compacted,
// single-partition Kafka topic that every registry instance replays into
// memory, written by one elected leader through a transactional producer
// (fenced when another takes over), as Confluent's registry does. The
// registry (internal/registry) applies its records; Watch there follows it
// for processors and intakes.
package schemalog
