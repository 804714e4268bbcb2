package inspect

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/kafka"
)

// FuzzDecodeError reads arbitrary records of the error topic, as the
// dashboard, status and replay do: a record is an EventError or skipped,
// never a panic, and every EventError read encodes as JSON (the dashboard's
// /api/errors answers it), whatever its timestamp or raw event.
func FuzzDecodeError(f *testing.F) {
	f.Add([]byte(`{"event":{"rawEvent":"?%7B%22schema%22%3A%22Generic%22%7D;\tcp1\t1\t2026-11-30T10:00:00\t-\tUA","message":"m","code":"validation","schema":"Generic","revision":13,"errors":[{"pointer":"/event","reason":"r"}],"source":{"topic":"raw","partition":0,"offset":1}},"schema":"EventError","revision":1,"timestamp":1764496800,"dt":"2026-11-30T10:00:00Z","uuid":"e394ddc00919539da1cd6b529f3dd4ab","topic":"eventlogging_EventError"}`))
	f.Add([]byte(`{"event":{"rawEvent":"{\"schema\":\"x'; DROP TABLE y; --\"}","code":"processor"},"uuid":"u","timestamp":999999999999999}`))
	f.Add([]byte(`{"event":{"rawEvent":"{}","rawEventBytes":9},"uuid":"u","timestamp":-99999999999999}`))
	f.Add([]byte(`{"uuid":"u","event":{"source":{},"rawEvent":"?%zz;"}}`))
	f.Add([]byte(`{"uuid":"u","uuid":"v","timestamp":1e400}`))
	f.Add([]byte(`null`))
	// The replay log is read as it is: a time past year 9999 too.
	replayLog := map[string]capsule.ReplayOutcome{"u": {Status: capsule.ReplayValid, Time: time.Date(12026, 12, 4, 10, 3, 0, 0, time.UTC)}}
	f.Fuzz(func(t *testing.T, value []byte) {
		e, ok := decodeError(kafka.Record{Topic: "eventlogging_EventError", Partition: 1, Offset: 7, Value: value}, replayLog)
		if !ok {
			return
		}
		if e.rec.UUID == "" {
			t.Fatalf("%q: EventError without a uuid", value)
		}
		if _, err := json.Marshal(e.rec); err != nil {
			t.Fatalf("%q: the record does not encode: %v", value, err)
		}
	})
}

// TestDecodeErrorTimestampOutOfRange: an EventError whose capsule
// timestamp is past year 9999 (a server-side event may carry any
// timestamp) is listed at the time its record was written.
func TestDecodeErrorTimestampOutOfRange(t *testing.T) {
	written := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	for _, ts := range []string{"999999999999999", "-99999999999999"} {
		e, ok := decodeError(kafka.Record{Timestamp: written, Value: []byte(`{"uuid":"u","timestamp":` + ts + `}`)}, nil)
		if !ok || !e.rec.Time.Equal(written) {
			t.Errorf("timestamp %s: listed at %v (ok %v), want %v", ts, e.rec.Time, ok, written)
		}
		if _, err := json.Marshal(e.rec); err != nil {
			t.Errorf("timestamp %s: %v", ts, err)
		}
	}
}
