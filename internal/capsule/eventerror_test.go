package capsule

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzErrorCapsuleJSON: ErrorCapsule.AppendJSON writes the bytes
// encoding/json's Marshal writes, whatever the strings hold (escapes,
// HTML characters, invalid UTF-8, U+2028) and whichever optional fields
// are set.
//
//	go test -run '^$' -fuzz '^FuzzErrorCapsuleJSON$' -fuzztime 60s ./internal/capsule
func FuzzErrorCapsuleJSON(f *testing.F) {
	f.Add("%7B%22schema%22%3A", "missing required property", "/event/a", "<b> & </b>", []byte{}, int64(3), uint8(0))
	f.Add("{\"schema\":\"Edit\"}\n", "\b\f\t\r\x00\x1f", "\u2028\u2029", "\"\\", []byte("raw"), int64(-1), uint8(255))
	f.Add("\xff\xfe ok \xc3", "é ☆ 彡", "", "ab\x7fc", []byte{0, 1, 2}, int64(1<<62), uint8(0x55))
	f.Fuzz(func(t *testing.T, raw, message, pointer, reason string, rawBytes []byte, n int64, flags uint8) {
		seq := n / 3
		c := ErrorCapsule{
			Event: EventError{
				RawEvent: raw, Message: message, Code: pointer + reason, Schema: reason, Revision: n,
			},
			Schema: pointer, Revision: -n,
			Timestamp: n, DT: message, UUID: pointer, Topic: raw,
		}
		if flags&1 != 0 {
			c.Event.RawEventBase64 = rawBytes
		}
		if flags&2 != 0 {
			c.Event.RawEventBytes = int(n % (1 << 31))
		}
		switch {
		case flags&4 != 0:
			c.Event.Errors = []Violation{{Pointer: pointer, Reason: reason}, {Pointer: reason, Reason: message}}
			if flags&8 != 0 {
				c.Event.Errors = append(c.Event.Errors, Violation{Pointer: raw})
			}
		case flags&8 != 0:
			c.Event.Errors = []Violation{}
		}
		if flags&16 != 0 {
			c.Event.ProcessorID = reason
			c.RecvFrom = pointer
		}
		if flags&32 != 0 {
			c.Event.Source = &Source{Topic: raw, Partition: int32(n), Offset: -n}
		}
		if flags&64 != 0 {
			c.SeqID = &seq
		}
		if flags&128 != 0 {
			c.UserAgent = message + reason
		}
		want, err := json.Marshal(&c)
		if err != nil {
			t.Fatal(err)
		}
		got := c.AppendJSON([]byte("prefix"))
		if !bytes.Equal(got[len("prefix"):], want) {
			t.Fatalf("AppendJSON:\n%s\nencoding/json:\n%s", got, want)
		}
	})
}
