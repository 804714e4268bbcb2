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

// ValidTopicName reports whether Kafka accepts name as a topic name: 1 to
// 249 of [a-zA-Z0-9._-], and neither "." nor "..".
func ValidTopicName(name string) bool {
	if len(name) == 0 || len(name) > 249 || name == "." || name == ".." {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}
