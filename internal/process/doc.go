// Package process turns raw events into validated capsules routed to their
// output topics: the one processing function of the pipeline, plus its two
// drivers — a Kafka consumer group and an offline file/stdin mode.
//
// Output contract: a capsule is one compact JSON object. The order of keys
// inside "event" is not part of it: a record the fast path accepts (see
// fastpath.go) keeps the client's bytes and key order, one that takes the
// general path is re-encoded with sorted keys; both hold the same event,
// equal as JSON. The capsule's own fields (schema, revision, uuid, dt,
// timestamp, recvFrom, seqId, userAgent, clientIp, topic, wiki, webHost)
// are written by the processor, in a fixed order, identically on both
// paths.
package process
