// Package intake is the HTTP front door of the pipeline: the legacy beacon
// (GET /beacon/event?<json>;), the EventGate-style POST /v1/events, health
// and readiness, and the Writer that gets what it accepts into Kafka — or,
// while Kafka is unreachable, into a local spool replayed later in order.
//
// Delivery contract: a 204 (beacon) or 202 (hasty POST) means the raw record
// is in the producer's bounded buffer or fsync'd in the spool; a 201/207/400
// (synchronous POST) means every output record was acknowledged by all
// in-sync replicas, or fsync'd in the spool. When neither is possible the
// answer is 503 with Retry-After; success is never answered for an event
// that is nowhere.
package intake
