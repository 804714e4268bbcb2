// Package lineformat parses raw log lines, such as those varnishkafka and
// the beacon intake write to the raw Kafka topics, by a format string of
// specifiers like "%q %{recvFrom}s %{seqId}d %t %o %{userAgent}i".
//
// The semantics are those of the original Python EventLogging, which
// compiled the format to a regular expression and matched it with re.match:
//
//   - each literal space in the format matches a run of one or more ASCII
//     whitespace bytes (space, TAB, LF, VT, FF, CR); a run of n spaces
//     matches n or more;
//   - any other literal text matches itself, byte for byte ("%%" is a
//     literal "%");
//   - matching is anchored at the start of the line only: text after the
//     last specifier is ignored.
//
// The specifiers are:
//
//	%q         "?" then non-space text: a url-encoded JSON capsule; see DecodeQuery
//	%j         non-space text: a plain JSON capsule, kept as is
//	%t         YYYY-MM-DDTHH:MM:SS in UTC, converted to epoch seconds
//	%D         non-space text that must parse as RFC 3339 (the "dt" field)
//	%h         non-space text: the client IP (hashing it is the caller's job)
//	%o         non-space text, ignored
//	%{name}s   non-space text, a named string field
//	%{name}d   ASCII digits, a named int64 field
//	%{name}i   everything up to the next TAB (or the end), a named string field
//	%%         a literal "%"
//
// Parse does not decode or validate the capsule JSON, merge capsule fields
// over line fields, hash the client IP or compute the event uuid: those are
// the processor's job.
//
// Most formats are matched by a hand-written linear-time matcher. A format
// whose matching may need backtracking (for example a specifier directly
// followed by literal text its pattern could also match, as in "%{a}sX", or
// "%{ua}i" followed by a space) is matched with package regexp instead,
// built from the same per-specifier patterns; both give the leftmost-first
// result that Python's re.match gives.
package lineformat
