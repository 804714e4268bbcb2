package intake

import (
	"net/http"
	"testing"
)

// FuzzSplitBody: any POST body gets a status or a list of events, never a
// panic; every event returned is a JSON object or value text.
func FuzzSplitBody(f *testing.F) {
	for _, s := range []string{`{}`, `[{},{}]`, `[1,"x",null]`, `null`, `42`, ``, `[`, "{\"a\":\"\xff\"}", `[[[[[[]]]]]]`, `{"schema":"Generic","revision":13,"event":{}}`} {
		f.Add([]byte(s))
	}
	s := &Server{cfg: Config{MaxBatchEvents: 1000}}
	f.Fuzz(func(t *testing.T, body []byte) {
		events, status, msg := s.split(body)
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
	})
}
