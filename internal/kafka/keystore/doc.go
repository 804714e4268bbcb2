// Package keystore keeps the shared client-IP hashing keys in a compacted,
// single-partition Kafka topic, so every processor hashes with the same key
// (the original's bug T112688 was one random key per process): first
// writer of a period wins. It implements iphash.KeyStore.
package keystore
