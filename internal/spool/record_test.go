package spool

import (
	"strings"
	"testing"
)

// TestAppendRefusesKeysAndHeaders: the spool keeps topic and value only; a
// record with a key or headers is refused whole rather than spooled without
// them.
func TestAppendRefusesKeysAndHeaders(t *testing.T) {
	q, err := Open(t.TempDir(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	for _, r := range []Record{
		{Topic: "t", Key: []byte("k"), Value: []byte("v")},
		{Topic: "t", Value: []byte("v"), Headers: []Header{{Key: "h", Value: []byte("x")}}},
	} {
		err := q.Append([]Record{{Topic: "t", Value: []byte("ok")}, r})
		if err == nil || !strings.Contains(err.Error(), "keys and headers are not spooled") {
			t.Errorf("Append of %+v = %v, want a refusal", r, err)
		}
	}
	if n := q.Len(); n != 0 {
		t.Errorf("a refused batch left %d records", n)
	}
}
