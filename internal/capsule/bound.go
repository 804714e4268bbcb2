package capsule

import (
	"strconv"
	"unicode/utf8"
)

// Limits of the texts an EventError quotes, whatever the input: a reason
// or a pointer quotes at most a short prefix of a bad value or a property
// name, and at most MaxViolations violations are listed (the last one then
// says how many more there were). With RawEvent cut by the processor and
// then by [ErrorCapsule.Fit], an EventError always fits a Kafka record.
const (
	MaxViolations   = 50   // violations listed in an EventError or a POST answer
	MaxPointerBytes = 200  // bytes of a violation's JSON pointer
	MaxReasonBytes  = 300  // bytes of a violation's reason
	MaxMessageBytes = 1024 // bytes of an EventError's message
	MaxFieldBytes   = 256  // bytes of the schema, recvFrom and the like in an EventError
	MaxAgentBytes   = 1024 // bytes of a user agent in an EventError
)

// Truncate returns s cut to at most n bytes on a UTF-8 boundary, ending in
// "…" (counted in the n) when it was cut; n below 4 cuts to nothing.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ell = "…" // 3 bytes
	if n < len(ell)+1 {
		return ""
	}
	cut := n - len(ell)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ell
}

// cutUTF8 returns s cut to at most n bytes on a UTF-8 boundary (for raw
// events, which are cut without a mark: RawEventBytes says they were).
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// BoundViolations returns v with every pointer and reason cut to its limit
// and at most MaxViolations entries: when there are more, the last listed
// one says how many were left out ("and 9950 more violations", pointer "").
// It returns v itself when nothing needed cutting.
func BoundViolations(v []Violation) []Violation {
	if !violationsNeedBound(v) {
		return v
	}
	n := min(len(v), MaxViolations)
	more := 0
	if len(v) > MaxViolations {
		n, more = MaxViolations-1, len(v)-(MaxViolations-1)
	}
	out := make([]Violation, n, n+1)
	for i := range n {
		out[i] = Violation{Pointer: Truncate(v[i].Pointer, MaxPointerBytes), Reason: Truncate(v[i].Reason, MaxReasonBytes)}
	}
	if more > 0 {
		out = append(out, Violation{Reason: "and " + strconv.Itoa(more) + " more violations"})
	}
	return out
}

func violationsNeedBound(v []Violation) bool {
	if len(v) > MaxViolations {
		return true
	}
	for _, x := range v {
		if len(x.Pointer) > MaxPointerBytes || len(x.Reason) > MaxReasonBytes {
			return true
		}
	}
	return false
}

// Fit makes the error capsule's JSON at most limit bytes: every text but
// the raw event is cut to its limit (see the constants above), then the
// raw event is cut further until the whole record fits, and RawEventBytes
// records the size it had. It returns the JSON appended to b. limit must
// leave room for the capped fields (about 200 KB at worst, with every
// character escaped); below that the raw event is dropped and the record
// is as small as the other fields allow.
func (c *ErrorCapsule) Fit(b []byte, limit int) []byte {
	e := &c.Event
	e.Errors = BoundViolations(e.Errors)
	e.Message = Truncate(e.Message, MaxMessageBytes)
	e.Schema = Truncate(e.Schema, MaxFieldBytes)
	e.Code = Truncate(e.Code, MaxFieldBytes)
	e.ProcessorID = Truncate(e.ProcessorID, MaxFieldBytes)
	if e.Source != nil {
		src := *e.Source
		src.Topic = Truncate(src.Topic, MaxFieldBytes)
		e.Source = &src
	}
	c.RecvFrom = Truncate(c.RecvFrom, MaxFieldBytes)
	c.UserAgent = Truncate(c.UserAgent, MaxAgentBytes)
	c.UUID = Truncate(c.UUID, MaxFieldBytes)
	c.DT = Truncate(c.DT, MaxFieldBytes)
	c.Topic = Truncate(c.Topic, MaxFieldBytes)
	start := len(b)
	rawLen := max(e.RawEventBytes, len(e.RawEvent), len(e.RawEventBase64))
	for {
		b = c.AppendJSON(b[:start])
		if len(b)-start <= limit || (e.RawEvent == "" && len(e.RawEventBase64) == 0) {
			return b
		}
		// Cut the raw event by what is over, and by a quarter more:
		// escapes make a byte of it up to six in the record.
		over := len(b) - start - limit
		keep := max(len(e.RawEvent), len(e.RawEventBase64)) - over - over/4 - 16
		if keep < 0 {
			keep = 0
		}
		e.RawEvent = cutUTF8(e.RawEvent, keep)
		if len(e.RawEventBase64) > keep {
			e.RawEventBase64 = e.RawEventBase64[:keep]
		}
		e.RawEventBytes = rawLen
	}
}
