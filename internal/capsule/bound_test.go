package capsule

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzErrorCapsuleFit: whatever the fields hold and however many
// violations there are, Fit writes valid JSON of at most the limit, every
// text within its bound, and keeps the raw event whole when it fits. The
// fuzzer's strings are repeated (reps) to reach the sizes of hostile
// events: a value of 522,000 bytes, 30,000 violations, a raw event of
// escapes only.
//
//	go test -run '^$' -fuzz '^FuzzErrorCapsuleFit$' -fuzztime 60s ./internal/capsule
func FuzzErrorCapsuleFit(f *testing.F) {
	f.Add("x", "dt", "is not valid date-time", uint16(522), uint16(1), 300_000)
	f.Add("<", "/k", "additional property not allowed", uint16(64), uint16(30_000), 1_000_000)
	f.Add("\x00\xff", "", "", uint16(4000), uint16(0), 200_000)
	f.Add("é", "~1a", "\u2028", uint16(1), uint16(51), 4096)
	f.Fuzz(func(t *testing.T, unit, pointer, reason string, reps, violations uint16, limit int) {
		limit = 200_000 + abs(limit)%1_000_000
		big := strings.Repeat(unit, int(reps)*100)
		c := ErrorCapsule{
			Event: EventError{
				RawEvent: big + big, Message: reason + big, Code: CodeValidation, Schema: big,
				Revision: 5, ProcessorID: pointer, Source: &Source{Topic: big, Partition: 1, Offset: 2},
			},
			Schema: EventErrorSchema, Revision: EventErrorRevision, RecvFrom: big, UserAgent: big,
			UUID: "0123", DT: "2026-12-04T00:00:00Z", Topic: "eventlogging_EventError",
		}
		for i := range int(violations) {
			c.Event.Errors = append(c.Event.Errors, Violation{Pointer: pointer + big[:min(len(big), i)], Reason: reason + big})
		}
		rawLen := len(c.Event.RawEvent)
		b := c.Fit(nil, limit)
		if len(b) > limit {
			t.Fatalf("%d bytes, over the %d-byte limit", len(b), limit)
		}
		var back ErrorCapsule
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("not JSON: %v", err)
		}
		e := back.Event
		// Counted in runes: an invalid byte comes back as U+FFFD.
		runes := utf8.RuneCountInString
		if len(e.Errors) > MaxViolations || runes(e.Message) > MaxMessageBytes || runes(e.Schema) > MaxFieldBytes || runes(back.UserAgent) > MaxAgentBytes {
			t.Fatalf("%d violations, message %d, schema %d, user agent %d runes: over the bounds", len(e.Errors), runes(e.Message), runes(e.Schema), runes(back.UserAgent))
		}
		for _, v := range e.Errors {
			if runes(v.Pointer) > MaxPointerBytes || runes(v.Reason) > MaxReasonBytes {
				t.Fatalf("violation of %d and %d runes: over the bounds", runes(v.Pointer), runes(v.Reason))
			}
		}
		if int(violations) > MaxViolations && !strings.Contains(e.Errors[len(e.Errors)-1].Reason, "more violations") {
			t.Fatalf("%d violations cut to %d without saying how many more", violations, len(e.Errors))
		}
		if len(e.RawEvent) < rawLen && utf8.ValidString(big) && e.RawEventBytes != rawLen {
			t.Fatalf("raw event cut from %d to %d bytes, rawEventBytes %d", rawLen, len(e.RawEvent), e.RawEventBytes)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func TestTruncate(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"hello", 5, "hello"},
		{"hello world", 8, "hello…"},
		{"ééééé", 8, "éé…"}, // 2-byte runes: never cut inside one
		{"abc", 2, ""},
	} {
		if got := Truncate(c.in, c.n); got != c.want || len(got) > c.n {
			t.Errorf("Truncate(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
