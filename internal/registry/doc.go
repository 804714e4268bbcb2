// Package registry serves the schema registry: a Confluent Schema
// Registry–compatible REST API over schemas (JSON Schema and Avro) whose
// state is rebuilt by replaying a log.
//
// # State
//
// Every instance replays the same log (a compacted, single-partition Kafka
// topic in production, see [Log]) into memory, so every instance answers
// reads alike. Only the leader writes: a follower forwards each mutating
// request to the leader's URL. The records (keys and JSON values) are
// described in state.go; the state is a pure function of them.
//
// Schemas are named by subject and version and carry a global integer id.
// Registering text already registered anywhere (same type, same text up to
// JSON whitespace — and, for Avro, key order — same references and
// metadata) reuses its id; otherwise the leader allocates the highest id
// ever seen plus one, so ids are never reused, even after a permanent
// delete. In IMPORT mode a client chooses the id and version, which is how
// a legacy EventLogging schema (name, revision) becomes subject name with
// global id revision ([Registry.ImportDir] does this for a schema folder).
//
// # API
//
// The REST API follows Confluent's: the same paths, bodies, status codes
// and {"error_code", "message"} errors, so its clients (franz-go's sr,
// Confluent's serializers) work unchanged. It also serves Event Platform
// $schema URIs, GET /<title>/<version>, for schemas registered under
// subject <title> with metadata property "version". [Registry.Handler]
// handles paths relative to where it is mounted.
//
// [Client] reads this API (or Confluent's) as a [schema.Source] and
// [schema.URISource], so the processor resolves schemas through the
// registry.
package registry
