// Package kafka is the pipeline's only door to Kafka: client settings, topic
// administration, the consume→transform→produce→commit loop the processor
// (and later the sinks) run, the shared IP-key store, and the embedded broker
// of standalone mode. No other package imports franz-go's client.
package kafka
