package intake

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
)

// FuzzSplitBody: any POST body gets a status or a list of events, never a
// panic; every event returned is a JSON object or value text; the events
// of an array are exactly what json.Unmarshal into []json.RawMessage finds.
func FuzzSplitBody(f *testing.F) {
	for _, s := range []string{`{}`, `[{},{}]`, `[1,"x",null]`, `null`, `42`, ``, `[`, "{\"a\":\"\xff\"}", `[[[[[[]]]]]]`, `{"schema":"Generic","revision":13,"event":{}}`,
		` [ {"a":"]\\\"," } , [1,[2]] ,"x\\\\", 3.5e1 ,{} ] `, `[ ]`, `[[],{}]`} {
		f.Add([]byte(s))
	}
	s := &Server{cfg: Config{MaxBatchEvents: 1000}}
	f.Fuzz(func(t *testing.T, body []byte) {
		events, status, msg := s.split(body, nil)
		switch {
		case status != 0:
			if status != http.StatusBadRequest && status != http.StatusRequestEntityTooLarge {
				t.Fatalf("status %d", status)
			}
			if msg == "" {
				t.Fatal("error without a message")
			}
		case len(events) == 0:
			t.Fatal("no events and no error")
		}
		var want []json.RawMessage
		if err := json.Unmarshal(body, &want); err == nil && len(want) > 0 && len(want) <= s.cfg.MaxBatchEvents && status == 0 {
			if len(events) != len(want) {
				t.Fatalf("%d events, json.Unmarshal finds %d", len(events), len(want))
			}
			for i := range want {
				if !bytes.Equal(events[i], want[i]) {
					t.Fatalf("event %d: %q, json.Unmarshal finds %q", i, events[i], want[i])
				}
			}
		}
	})
}
