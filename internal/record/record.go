// Package record holds the one shape of a record every stage passes along:
// the processor's outputs, the Kafka producer's messages and the intake
// spool's entries are all a [Message]. It depends on nothing, so every
// package of the pipeline can share it without importing Kafka.
package record

// Message is one record to produce: its topic, key, value and headers.
// Leaders and partitions are left to the producer.
type Message struct {
	Topic string
	// Key is nil for almost every record (replay outcomes are keyed by
	// the EventError's uuid).
	Key   []byte
	Value []byte
	// Headers, if any, are produced with the record.
	Headers []Header
}

// Header is one record header.
type Header struct {
	Key   string
	Value []byte
}
