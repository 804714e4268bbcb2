// Package embedded runs the Kafka-protocol broker of standalone mode:
// franz-go's kfake persisting to a data directory, with a retention on
// every topic it creates, and the broker.json through which other commands
// on the same machine find it (LocalBrokers).
package embedded
