package intake

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/eventlogging/eventlogging/internal/capsule"
)

// TestAppendPostResponse: the hand-built answer is byte for byte what
// json.Encoder writes, for accepted and invalid entries, strings that need
// escaping, and empty or nil event lists.
func TestAppendPostResponse(t *testing.T) {
	cases := map[string]PostResponse{
		"nil events":   {},
		"empty events": {Events: []EventResult{}},
		"accepted": {Accepted: 2, Events: []EventResult{
			{Index: 0, Status: "accepted", UUID: "6c4a9a5e-8e1b-4f7e-9a3c-0d2f1b3c4d5e", Topic: "eventlogging_Generic"},
			{Index: 1, Status: "accepted", UUID: "1b2c3d4e-0000-4000-8000-000000000001", Topic: "mediawiki.page-create"},
		}},
		"mixed": {Accepted: 1, Invalid: 2, Events: []EventResult{
			{Index: 0, Status: "invalid", Code: "validation", Message: `"x" <b> & é`, Errors: []capsule.Violation{{Pointer: "/event/a", Reason: "want integer"}}},
			{Index: 1, Status: "accepted", UUID: "u", Topic: "t"},
			{Index: 2, Status: "invalid", Code: "malformed", Message: "unexpected end of JSON input"},
		}},
		"odd strings": {Accepted: 3, Events: []EventResult{
			{Index: 0, Status: "accepted", UUID: "a\"b\\c\u2028", Topic: "t<>&"},
			{Index: 1, Status: "accepted", UUID: "\x01\x7f", Topic: "é"},
			{Index: 2, Status: "accepted"},
		}},
	}
	for name, resp := range cases {
		t.Run(name, func(t *testing.T) { checkLikeEncoder(t, resp) })
	}
}

// checkLikeEncoder fails t unless appendPostResponse gives for resp what
// json.Encoder writes.
func checkLikeEncoder(t *testing.T, resp PostResponse) {
	t.Helper()
	var want bytes.Buffer
	if err := json.NewEncoder(&want).Encode(resp); err != nil {
		t.Fatal(err)
	}
	if got := appendPostResponse(nil, &resp); !bytes.Equal(got, want.Bytes()) {
		t.Errorf("got  %s\nwant %s", got, want.Bytes())
	}
}

// FuzzAppendPostResponse: for any strings, the hand-built entry matches
// encoding/json.
func FuzzAppendPostResponse(f *testing.F) {
	f.Add(3, "accepted", "6c4a9a5e-8e1b-4f7e-9a3c-0d2f1b3c4d5e", "eventlogging_Generic", "")
	f.Add(0, "invalid", "", "", "bad <json>")
	f.Fuzz(func(t *testing.T, index int, status, uuid, topic, msg string) {
		checkLikeEncoder(t, PostResponse{Accepted: 1, Events: []EventResult{{Index: index, Status: status, UUID: uuid, Topic: topic, Message: msg}}})
	})
}

// BenchmarkPostResponse: the answer to a 10-event batch, all accepted,
// built by hand (hand) and by json.Encoder (encoder), as the intake wrote
// it before.
func BenchmarkPostResponse(b *testing.B) {
	resp := PostResponse{Accepted: 10, Events: make([]EventResult, 10)}
	for i := range resp.Events {
		resp.Events[i] = EventResult{Index: i, Status: "accepted", UUID: "6c4a9a5e-8e1b-4f7e-9a3c-0d2f1b3c4d5e", Topic: "eventlogging_Generic"}
	}
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = appendPostResponse(make([]byte, 0, 64+len(resp.Events)*128), &resp)
		}
	})
	b.Run("encoder", func(b *testing.B) {
		b.ReportAllocs()
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			_ = json.NewEncoder(&buf).Encode(resp)
		}
	})
}
