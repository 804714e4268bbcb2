package lineformat

import (
	"strconv"
	"time"
)

// RawFormat is the line format of the raw records the intake writes: the
// varnishkafka TSV layout, so Varnish deployments and the intake feed the
// same processor configuration. The encoder below writes it; Compile and
// Parse read it.
const RawFormat = "%q %{recvFrom}s %{seqId}d %t %h %{userAgent}i"

// AppendRawLine appends one raw record in RawFormat:
// "?<query>;\t<recvFrom>\t<seqId>\t<YYYY-MM-DDTHH:MM:SS>\t<ip or ->\t<user agent or ->".
// query is the url-encoded capsule without the leading '?'.
func AppendRawLine(b []byte, query []byte, recvFrom string, seq int64, t time.Time, ip, ua string) []byte {
	b = append(b, '?')
	b = append(b, query...)
	if len(query) == 0 || query[len(query)-1] != ';' {
		b = append(b, ';')
	}
	b = append(b, '\t')
	b = append(b, recvFrom...)
	b = append(b, '\t')
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, '\t')
	b = t.UTC().AppendFormat(b, "2006-01-02T15:04:05")
	b = append(b, '\t')
	if ip == "" {
		ip = "-"
	}
	b = append(b, ip...)
	b = append(b, '\t')
	b = appendField(b, ua)
	return b
}

// appendField appends s with TABs, CRs and LFs replaced by spaces (they
// would break the TSV layout); empty becomes "-".
func appendField(b []byte, s string) []byte {
	if s == "" {
		return append(b, '-')
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\t' || c == '\n' || c == '\r' {
			c = ' '
		}
		b = append(b, c)
	}
	return b
}

const upperHex = "0123456789ABCDEF"

// AppendQueryEscape percent-encodes s like JavaScript's encodeURIComponent
// (what the browser client does): everything but A-Z a-z 0-9 - _ . ! ~ * ' ( ).
func AppendQueryEscape(b, s []byte) []byte {
	for _, c := range s {
		if ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') {
			b = append(b, c)
			continue
		}
		switch c {
		case '-', '_', '.', '!', '~', '*', '\'', '(', ')':
			b = append(b, c)
		default:
			b = append(b, '%', upperHex[c>>4], upperHex[c&15])
		}
	}
	return b
}

// RawLine is the raw record an intake writes for a JSON event received at
// t: the event query-escaped like a beacon, then the intake's fields in
// the default raw format. Replays of EventErrors from the synchronous POST
// path use it, so a replayed event gets the uuid it would have had.
func RawLine(event []byte, recvFrom string, seq int64, t time.Time, ip, ua string) []byte {
	q := AppendQueryEscape(make([]byte, 0, len(event)*2), event)
	return AppendRawLine(make([]byte, 0, len(q)+128), q, recvFrom, seq, t, ip, ua)
}
