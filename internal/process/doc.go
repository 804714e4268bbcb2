// Package process turns raw events into validated capsules routed to their
// output topics: the one processing function of the pipeline, plus its two
// drivers — a Kafka consumer group and an offline file/stdin mode.
package process
