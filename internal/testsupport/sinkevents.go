package testsupport

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/kafka"
)

// The fixtures of the sinks' tests (filesink, icebergsink): records of a
// legacy EventLogging schema and of an Event Platform stream, with their
// schemas, a logger and a clock.

// EventUUID is the deterministic uuid of the test record at offset of a
// topic's partition.
func EventUUID(topic string, partition int32, offset int64) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/%d/%d", topic, partition, offset))
	return hex.EncodeToString(sum[:16])
}

// CapsuleRecord builds an EventLogging capsule record of schema Test/1
// (CapsuleSchemaDoc) received at dt, its values derived from the offset,
// its uuid EventUUID's; the Kafka timestamp is a second after dt.
func CapsuleRecord(topic string, partition int32, offset int64, dt time.Time) kafka.Record {
	v := fmt.Appendf(nil, `{"event":{"action":"click","count":%d,"ratio":%d.5,"ok":%t,"nested":{"label":"n%d","depth":{"level":%d}},"tags":["a","b"]},`+
		`"schema":"Test","revision":1,"wiki":"enwiki","webHost":"en.wikipedia.org","recvFrom":"host%d","seqId":%d,"timestamp":%d,"dt":%q,"uuid":%q,"userAgent":"UA","topic":%q}`,
		offset, offset, offset%2 == 0, offset, offset%7, partition, offset, dt.Unix(), dt.UTC().Format(time.RFC3339), EventUUID(topic, partition, offset), topic)
	return kafka.Record{Topic: topic, Partition: partition, Offset: offset, Value: v, Timestamp: dt.Add(time.Second)}
}

// CapsuleSchemaDoc is the draft-3 EventLogging schema Test/1 of
// CapsuleRecord's events.
const CapsuleSchemaDoc = `{
  "description": "test events",
  "properties": {
    "action": {"type": "string", "required": true},
    "count": {"type": "integer"},
    "ratio": {"type": "number"},
    "ok": {"type": "boolean"},
    "nested": {"type": "object", "properties": {
      "label": {"type": "string"},
      "depth": {"type": "object", "properties": {"level": {"type": "integer"}}}
    }},
    "tags": {"type": "array", "items": {"type": "string"}},
    "free": {"type": "object"}
  }
}`

// ButtonClickSchemaDoc is the Event Platform schema
// /analytics/button_click/1.0.0.
const ButtonClickSchemaDoc = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "analytics/button_click",
  "type": "object",
  "properties": {
    "$schema": {"type": "string"},
    "dt": {"type": "string", "format": "date-time"},
    "button": {"type": "string"},
    "clicks": {"type": "integer"},
    "meta": {"type": "object", "properties": {
      "id": {"type": "string"}, "dt": {"type": "string"}, "stream": {"type": "string"}
    }}
  }
}`

// Logger returns a logger that logs warnings and up through t.Log.
func Logger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tbWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// tbWriter writes each line to a test's log.
type tbWriter struct{ t testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// Clock is a settable test clock, safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock set to t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set sets the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// Add moves the clock on by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
