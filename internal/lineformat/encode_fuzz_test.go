package lineformat

import (
	"bytes"
	"errors"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzRawLine: whatever the query and User-Agent, the raw record is one line
// that the processor's format parses back to the same fields.
func FuzzRawLine(f *testing.F) {
	f.Add([]byte("%7B%7D;"), "Mozilla/5.0", "198.51.100.7")
	f.Add([]byte("a"), "tab\there", "")
	f.Add([]byte(""), "\r\n", "::1")
	format, err := Compile(RawFormat)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, query []byte, ua, ip string) {
		if len(query) == 0 || bytes.ContainsAny(query, " \t\r\n\v\f") || len(ip) == 0 || bytes.ContainsAny([]byte(ip), " \t\r\n\v\f") {
			return // not producible by net/http: the URL and the socket address hold no whitespace
		}
		line := AppendRawLine(nil, AppendQueryEscape(nil, query), "intake1", 7, time.Unix(1764496800, 0), ip, ua)
		if bytes.ContainsAny(line, "\n\r") {
			t.Fatalf("raw line holds a line break: %q", line)
		}
		var fl Fields
		err := format.Parse(line, &fl)
		if !utf8.Valid(query) {
			// The processor turns it into an EventError; the line itself is intact.
			if !errors.Is(err, ErrInvalidUTF8) {
				t.Fatalf("invalid UTF-8 query: got %v", err)
			}
			return
		}
		if err != nil {
			t.Fatalf("raw line %q does not parse: %v", line, err)
		}
		if !bytes.Equal(fl.Capsule, query) || fl.ClientIP != ip {
			t.Fatalf("round trip: capsule %q ip %q, want %q %q", fl.Capsule, fl.ClientIP, query, ip)
		}
	})
}
