// Package capsule defines the EventCapsule and EventError records the
// pipeline writes, the deterministic event uuid, output topic names, and the
// fast JSON decoding and encoding of event values. It is pure: no I/O.
package capsule
