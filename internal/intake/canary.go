package intake

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/lineformat"
)

// canaryEvent is one prepared canary: its stream and its query-escaped JSON.
type canaryEvent struct {
	stream string
	query  []byte
}

// prepareCanaries marks each event as a canary (webHost, or meta.domain
// for Event Platform events) and encodes it for the raw path.
func prepareCanaries(events []map[string]any) ([]canaryEvent, error) {
	out := make([]canaryEvent, 0, len(events))
	for i, ev := range events {
		ev = maps.Clone(ev)
		var stream string
		if _, platform := ev["$schema"]; platform {
			meta, _ := ev["meta"].(map[string]any)
			meta = maps.Clone(meta)
			if meta == nil {
				meta = map[string]any{}
			}
			stream, _ = meta["stream"].(string)
			meta["domain"] = capsule.CanaryDomain
			ev["meta"] = meta
		} else {
			stream, _ = ev["schema"].(string)
			ev["webHost"] = capsule.CanaryDomain
		}
		if stream == "" {
			return nil, fmt.Errorf("canary event %d: no schema or meta.stream", i)
		}
		b, err := json.Marshal(ev)
		if err != nil {
			return nil, fmt.Errorf("canary event %d: %w", i, err)
		}
		out = append(out, canaryEvent{stream: stream, query: lineformat.AppendQueryEscape(nil, b)})
	}
	return out, nil
}

// RunCanaries sends every event, marked as a canary, through the raw path
// each interval until ctx is done, so an end-to-end gap shows in the
// sinks' eventlogging_canary_last_seen_timestamp_seconds. A refused send
// (spool full) is logged and tried again next interval.
func (s *Server) RunCanaries(ctx context.Context, interval time.Duration, events []map[string]any) error {
	if interval <= 0 || len(events) == 0 {
		return nil
	}
	canaries, err := prepareCanaries(events)
	if err != nil {
		return err
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		now := time.Now()
		for _, c := range canaries {
			line := lineformat.AppendRawLine(make([]byte, 0, len(c.query)+128), c.query, s.cfg.RecvFrom, s.seq.Add(1), now, "", "eventlogging-canary")
			if err := s.w.Enqueue([]kafka.Message{{Topic: s.cfg.RawTopic, Value: line}}); err != nil {
				s.log.Warn("canary not sent", "stream", c.stream, "err", err)
				continue
			}
			s.cfg.Metrics.canarySent(c.stream, now)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
