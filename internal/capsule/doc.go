// Package capsule defines the EventCapsule and EventError records the
// pipeline writes, the deterministic event uuid, output topic names and the
// compact JSON encoding of decoded event values. It is pure: no I/O.
package capsule
