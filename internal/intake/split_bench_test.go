package intake

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/process"
)

// BenchmarkPostBatch10 is the synchronous POST's work per request without
// Kafka: split a 10-event body into events and process each (decode,
// validate, capsule), as handlePost does. Small hand-written events (the
// Generic schema), not the standard workload.
func BenchmarkPostBatch10(b *testing.B) {
	ti := newTestIntake(b, Config{})
	body := []byte("[" + strings.TrimSuffix(strings.Repeat(genericCapsule+",", 10), ",") + "]")
	ctx := context.Background()
	meta := process.Meta{RecvFrom: "bench", Received: time.Unix(1764496800, 0)}
	var outs []process.Output
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		events, status, msg := ti.srv.split(body)
		if status != 0 {
			b.Fatal(msg)
		}
		outs = outs[:0]
		for i, ev := range events {
			meta.SeqID = int64(i)
			var res process.Result
			outs, res = ti.proc.ProcessEvent(ctx, ev, meta, outs)
			if !res.Valid() {
				b.Fatal(res.Message)
			}
		}
	}
	b.ReportMetric(float64(b.N*10)/b.Elapsed().Seconds(), "events/s")
}
