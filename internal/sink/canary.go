package sink

import (
	"bytes"
	"time"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/kafka"
)

// canaryMarker appears in every canary record (webHost or meta.domain).
var canaryMarker = []byte(`"` + capsule.CanaryDomain + `"`)

// dropCanaries removes the canary events from batch (they are measured, not
// stored) and records when each stream's canary was seen. It reuses batch's
// array.
func (c *Config) dropCanaries(sink string, batch []kafka.Record) []kafka.Record {
	out := batch[:0]
	for _, r := range batch {
		if bytes.Contains(r.Value, canaryMarker) {
			if stream, ok := capsule.CanaryStream(r.Value); ok {
				c.Metrics.sawCanary(sink, stream, time.Now())
				continue
			}
		}
		out = append(out, r)
	}
	return out
}
