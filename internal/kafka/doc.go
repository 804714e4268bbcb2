// Package kafka is the pipeline's door to Kafka: client settings (TLS,
// SASL), topic administration, the producer, the consume→transform→produce→
// commit loop the processor runs, the consume→write→commit loop of the
// sinks, bounded reads and tails, and lag inspection. Its subpackages hold
// the other users of franz-go's client, by audience: the schema registry's
// storage (schemalog), the shared IP-key store (keystore) and the embedded
// broker of standalone mode (embedded). No package outside internal/kafka
// imports franz-go's client.
package kafka
