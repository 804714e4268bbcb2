package lineformat

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// str and num build expected named fields.
func str(name, v string) Field { return Field{Name: name, Str: v} }
func num(name, digits string, v int64) Field {
	return Field{Name: name, Str: digits, Int: v, IsInt: true}
}

// want is the expected result of one Parse; capsule nil means none.
type want struct {
	capsule  *string
	ts       int64
	hasTS    bool
	dt       string
	ip       string
	hasIP    bool
	named    []Field
	err      error  // a sentinel the error must wrap; nil for success
	spec     string // ParseError.Spec
	off      int    // ParseError.Offset
	contains string // a substring of the error message
}

func capsule(s string) *string { return &s }

// checkParse compares a Parse result with w.
func checkParse(t *testing.T, got *Fields, err error, w want) {
	t.Helper()
	if w.err != nil {
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Fatalf("error = %v, want a *ParseError wrapping %v", err, w.err)
		}
		if !errors.Is(err, w.err) {
			t.Errorf("error = %v, want it to wrap %v", err, w.err)
		}
		if pe.Spec != w.spec || pe.Offset != w.off {
			t.Errorf("error at %s byte %d, want %s byte %d (%v)", pe.Spec, pe.Offset, w.spec, w.off, err)
		}
		if len(pe.Excerpt) > MaxExcerpt {
			t.Errorf("excerpt is %d bytes", len(pe.Excerpt))
		}
		if !strings.Contains(err.Error(), w.contains) {
			t.Errorf("error %q does not contain %q", err, w.contains)
		}
		return
	}
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	switch {
	case w.capsule == nil && got.Capsule != nil:
		t.Errorf("capsule = %q, want nil", got.Capsule)
	case w.capsule != nil && (got.Capsule == nil || string(got.Capsule) != *w.capsule):
		t.Errorf("capsule = %q (nil %v), want %q", got.Capsule, got.Capsule == nil, *w.capsule)
	}
	if got.Timestamp != w.ts || got.HasTimestamp != w.hasTS {
		t.Errorf("timestamp = %d, %v; want %d, %v", got.Timestamp, got.HasTimestamp, w.ts, w.hasTS)
	}
	if got.DT != w.dt {
		t.Errorf("dt = %q, want %q", got.DT, w.dt)
	}
	if got.ClientIP != w.ip || got.HasClientIP != w.hasIP {
		t.Errorf("clientIp = %q, %v; want %q, %v", got.ClientIP, got.HasClientIP, w.ip, w.hasIP)
	}
	if len(got.Named) != len(w.named) {
		t.Fatalf("named = %+v, want %+v", got.Named, w.named)
	}
	for i := range w.named {
		if got.Named[i] != w.named[i] {
			t.Errorf("named[%d] = %+v, want %+v", i, got.Named[i], w.named[i])
		}
	}
}

func TestParse(t *testing.T) {
	const beaconFormat = "%q %{recvFrom}s %{seqId}d %t %o %{userAgent}i"
	tests := []struct {
		name, format, line string
		want               want
	}{
		// %q
		{"q", "%q", `?%7B%22a%22%3A1%7D;`, want{capsule: capsule(`{"a":1}`)}},
		{"q lower hex", "%q", `?%7b%22%c3%a9%22%7d;`, want{capsule: capsule(`{"é"}`)}},
		{"q plus is space, %2B is plus", "%q", `?a+b%2Bc;`, want{capsule: capsule(`a b+c`)}},
		{"q strips every leading ? ; and trailing ; ?", "%q", `??;x;y;;?`, want{capsule: capsule(`x;y`)}},
		{"q encoded ; kept", "%q", `?x%3B;`, want{capsule: capsule(`x;`)}},
		{"q empty after strip", "%q", `?;`, want{capsule: capsule(``)}},
		{"q stops at whitespace", "%q x", "?a\tx", want{capsule: capsule(`a`)}},
		{"q needs ?", "%q", `%7B%7D`, want{err: ErrNoMatch, spec: "%q", off: 0, contains: `want "?" then non-space text`}},
		{"q needs text after ?", "%q", `? x`, want{err: ErrNoMatch, spec: "%q", off: 0}},
		{"q bad escape", "%q x", `?%7Bab%zz%7D x`, want{err: ErrBadEscape, spec: "%q", off: 6, contains: `bad value for %q at byte 6: invalid percent escape in query, have "%zz%7D"`}},
		{"q truncated escape", "%q x", `?abc%4 x`, want{err: ErrBadEscape, spec: "%q", off: 4}},
		{"q truncated escape before ;", "%q", `?abc%4;`, want{err: ErrBadEscape, spec: "%q", off: 4}},
		{"q lone %", "%q", `?%`, want{err: ErrBadEscape, spec: "%q", off: 1}},
		{"q invalid UTF-8", "%q", `?%22%C3%28%22;`, want{err: ErrInvalidUTF8, spec: "%q", off: 4, contains: "invalid UTF-8 in decoded query"}},
		{"q raw invalid UTF-8", "%q", "?ab\xff;", want{err: ErrInvalidUTF8, spec: "%q", off: 3}},
		{"q raw UTF-8 kept", "%q", "?\"é\";", want{capsule: capsule(`"é"`)}},

		// %j
		{"j kept as is", "%j", `{"a":"%7B+"}`, want{capsule: capsule(`{"a":"%7B+"}`)}},
		{"j stops at space", "%{n}d EventLogging %j", `99 EventLogging {"a":1} trailing`, want{capsule: capsule(`{"a":1}`), named: []Field{num("n", "99", 99)}}},
		{"j literal mismatch", "%{n}d EventLogging %j", `99 EventLoging {}`, want{err: ErrNoMatch, spec: `"EventLogging"`, off: 3, contains: `at "EventLogging" (byte 3): want "EventLogging", have "EventLoging {}"`}},

		// %t
		{"t", "%t", "2013-01-19T23:16:38", want{ts: 1358637398, hasTS: true}},
		{"t epoch", "%t", "1970-01-01T00:00:00", want{ts: 0, hasTS: true}},
		{"t before epoch", "%t", "0001-01-01T00:00:00", want{ts: -62135596800, hasTS: true}},
		{"t max", "%t", "9999-12-31T23:59:59", want{ts: 253402300799, hasTS: true}},
		{"t leap day", "%t", "2016-02-29T12:00:00", want{ts: 1456747200, hasTS: true}},
		{"t 2000 leap day", "%t", "2000-02-29T00:00:00", want{ts: 951782400, hasTS: true}},
		{"t leap second counts on", "%t", "2016-12-31T23:59:60", want{ts: 1483228800, hasTS: true}},
		{"t trailing text ignored", "%t", "2013-01-19T23:16:38.123Z", want{ts: 1358637398, hasTS: true}},
		{"t short", "%t", "2013-1-19T23:16:38", want{err: ErrNoMatch, spec: "%t", off: 0, contains: "want YYYY-MM-DDTHH:MM:SS"}},
		{"t space separator", "%t", "2013-01-19 23:16:38", want{err: ErrNoMatch, spec: "%t", off: 0}},
		{"t truncated", "%t", "2013-01-19T23:16", want{err: ErrNoMatch, spec: "%t", off: 0}},
		{"t month 13", "%t", "2013-13-19T23:16:38", want{err: ErrBadTimestamp, spec: "%t", off: 0, contains: "month 13"}},
		{"t day 0", "%t", "2013-01-00T23:16:38", want{err: ErrBadTimestamp, spec: "%t", off: 0}},
		{"t Feb 29 2015", "%t", "2015-02-29T00:00:00", want{err: ErrBadTimestamp, spec: "%t", off: 0}},
		{"t Feb 29 1900", "%t", "1900-02-29T00:00:00", want{err: ErrBadTimestamp, spec: "%t", off: 0}},
		{"t Apr 31", "%t", "2015-04-31T00:00:00", want{err: ErrBadTimestamp, spec: "%t", off: 0}},
		{"t hour 24", "%t", "2015-04-01T24:00:00", want{err: ErrBadTimestamp, spec: "%t", off: 0}},
		{"t minute 60", "%t", "2015-04-01T00:60:00", want{err: ErrBadTimestamp, spec: "%t", off: 0}},
		{"t second 62", "%t", "2015-04-01T00:00:62", want{err: ErrBadTimestamp, spec: "%t", off: 0}},
		{"t year 0", "%t", "0000-01-01T00:00:00", want{err: ErrBadTimestamp, spec: "%t", off: 0}},

		// %D
		{"D", "%D", "2013-01-19T23:16:38Z", want{dt: "2013-01-19T23:16:38Z"}},
		{"D offset and fraction kept as given", "%D %{a}s", "2013-01-19T23:16:38.5+01:00 x", want{dt: "2013-01-19T23:16:38.5+01:00", named: []Field{str("a", "x")}}},
		{"D without zone", "%D", "2013-01-19T23:16:38", want{err: ErrBadTimestamp, spec: "%D", off: 0, contains: "not RFC 3339"}},
		{"D garbage", "%{a}s %D", "x yesterday", want{err: ErrBadTimestamp, spec: "%D", off: 2}},
		{"D missing", "%{a}s %D", "x ", want{err: ErrNoMatch, spec: "%D", off: 2, contains: "have end of line"}},

		// %h, %o
		{"h", "%h %{a}s", "2001:db8::1 x", want{ip: "2001:db8::1", hasIP: true, named: []Field{str("a", "x")}}},
		{"h is not validated", "%h", "-", want{ip: "-", hasIP: true}},
		{"o ignored", "%o %o %{a}s", "skip me x", want{named: []Field{str("a", "x")}}},
		{"o needs text", "%o %{a}s", " x", want{err: ErrNoMatch, spec: "%o", off: 0}},

		// named
		{"s", "%{a}s", "héllo wörld", want{named: []Field{str("a", "héllo")}}},
		{"d", "%{n}d", "007", want{named: []Field{num("n", "007", 7)}}},
		{"d max int64", "%{n}d", "9223372036854775807", want{named: []Field{num("n", "9223372036854775807", 1<<63-1)}}},
		{"d overflow", "%{a}s %{n}d", "x 9223372036854775808", want{err: ErrIntRange, spec: "%{n}d", off: 2, contains: "bad value for %{n}d at byte 2: integer out of range"}},
		{"d huge", "%{n}d", strings.Repeat("9", 100), want{err: ErrIntRange, spec: "%{n}d", off: 0}},
		{"d no sign", "%{n}d", "-1", want{err: ErrNoMatch, spec: "%{n}d", off: 0, contains: "want digits"}},
		{"d trailing text ignored", "%{n}d", "12abc", want{named: []Field{num("n", "12", 12)}}},
		{"d then space needs space", "%{n}d %{a}s", "12abc x", want{err: ErrNoMatch, spec: `" "`, off: 2, contains: `at " " (byte 2): want whitespace, have "abc x"`}},
		{"i to TAB, quotes kept", "%{ua}i", "\"Mozilla/5.0 (X11)\"\tnext", want{named: []Field{str("ua", `"Mozilla/5.0 (X11)"`)}}},
		{"i to end", "%{ua}i", "a b  c \r\n", want{named: []Field{str("ua", "a b  c \r\n")}}},
		{"i empty", "%{ua}i", "\tx", want{err: ErrNoMatch, spec: "%{ua}i", off: 0, contains: "want text before a TAB"}},

		// %% and literals
		{"percent literal", "100%% %{a}s", "100% x", want{named: []Field{str("a", "x")}}},
		{"percent literal mismatch", "100%% %{a}s", "100 x", want{err: ErrNoMatch, spec: `"100%"`, off: 0}},
		{"percent before spec", "%%%{a}s", "%x", want{named: []Field{str("a", "x")}}},
		{"literal TAB in format", "%{a}s\t%{b}s", "x\ty", want{named: []Field{str("a", "x"), str("b", "y")}}},
		{"literal TAB in format is one TAB", "%{a}s\t%{b}s", "x y", want{err: ErrNoMatch, spec: `"\t"`, off: 1}},

		// whitespace
		{"space matches TAB", "%{a}s %{b}s", "x\ty", want{named: []Field{str("a", "x"), str("b", "y")}}},
		{"space matches a run", "%{a}s %{b}s", "x \t\r\n\v\f y", want{named: []Field{str("a", "x"), str("b", "y")}}},
		{"two spaces need two", "%{a}s  %{b}s", "x y", want{err: ErrNoMatch, spec: `"  "`, off: 1, contains: "want 2 or more whitespace bytes"}},
		{"two spaces match a run", "%{a}s  %{b}s", "x\t \ty", want{named: []Field{str("a", "x"), str("b", "y")}}},
		{"leading space in format", " %{a}s", "\t x", want{named: []Field{str("a", "x")}}},
		{"trailing space in format", "%{a}s ", "x", want{err: ErrNoMatch, spec: `" "`, off: 1}},
		{"trailing space in format matched", "%{a}s ", "x  more", want{named: []Field{str("a", "x")}}},
		{"NUL is not whitespace", "%{a}s %{b}s", "x\x00 y", want{named: []Field{str("a", "x\x00"), str("b", "y")}}},
		{"NBSP is not whitespace", "%{a}s", "x\u00a0y z", want{named: []Field{str("a", "x\u00a0y")}}},

		// whitespace before a final %{name}i gives bytes back, as the
		// regexp backtracks
		{"i after trailing spaces", "%{a}s %{ua}i", "x  ", want{named: []Field{str("a", "x"), str("ua", " ")}}},
		{"i after one trailing space", "%{a}s %{ua}i", "x ", want{err: ErrNoMatch, spec: "%{ua}i", off: 2}},
		{"i after space TAB", "%{a}s %{ua}i", "x \t", want{err: ErrNoMatch, spec: "%{ua}i", off: 3}},
		{"i after space space TAB", "%{a}s %{ua}i", "x  \t", want{named: []Field{str("a", "x"), str("ua", " ")}}},
		{"i after mixed run", "%{a}s %{ua}i", "x \t \t\t", want{named: []Field{str("a", "x"), str("ua", " ")}}},
		{"i after run then text", "%{a}s %{ua}i", "x \t  UA 1", want{named: []Field{str("a", "x"), str("ua", "UA 1")}}},

		// anchoring
		{"anchored at start", "%{a}d", " 12", want{err: ErrNoMatch, spec: "%{a}d", off: 0}},
		{"not anchored at end", "%{a}s %{b}s", "x y z\tw", want{named: []Field{str("a", "x"), str("b", "y")}}},
		{"empty line", "%{a}s", "", want{err: ErrNoMatch, spec: "%{a}s", off: 0, contains: "have end of line"}},
		{"empty line literal", "x", "", want{err: ErrNoMatch, spec: `"x"`, off: 0}},

		// whole formats
		{"beacon", beaconFormat, "?%7B%7D; cp1 12 2015-10-01T00:00:00 - Mozilla/5.0 (X)", want{
			capsule: capsule("{}"), ts: 1443657600, hasTS: true,
			named: []Field{str("recvFrom", "cp1"), num("seqId", "12", 12), str("userAgent", "Mozilla/5.0 (X)")},
		}},
		{"beacon short", beaconFormat, "?%7B%7D; cp1 12", want{err: ErrNoMatch, spec: `" "`, off: 15}},
		{"beacon bad seqId", beaconFormat, "?%7B%7D; cp1 x12 2015-10-01T00:00:00 - UA", want{err: ErrNoMatch, spec: "%{seqId}d", off: 13}},
		{"mismatch wins over an earlier bad value", beaconFormat, "?%zz cp1 12 2015-10-01T00:00:00", want{err: ErrNoMatch, spec: `" "`, off: 31}},
		{"first bad value in format order", "%{n}d %q %t", "99999999999999999999 ?%zz 2015-13-01T00:00:00", want{err: ErrIntRange, spec: "%{n}d", off: 0}},

		// regexp fallback formats
		{"fallback s then literal", "%{a}sX", "fooX bar", want{named: []Field{str("a", "foo")}}},
		{"fallback s then literal, last X", "%{a}sX", "aXbX", want{named: []Field{str("a", "aXb")}}},
		{"fallback d then d", "%{a}d%{b}d", "12345", want{named: []Field{num("a", "1234", 1234), num("b", "5", 5)}}},
		{"fallback i then space", "%{ua}i %{b}s", "foo bar\t", want{named: []Field{str("ua", "foo"), str("b", "bar")}}},
		{"fallback i then space, greedy", "%{ua}i %{b}s", "foo bar\tbaz", want{named: []Field{str("ua", "foo bar"), str("b", "baz")}}},
		{"fallback mismatch", "%{a}sX", "foo bar", want{err: ErrNoMatch, spec: `"X"`, off: 3}},
		{"fallback bad value", "%{a}dX", "99999999999999999999X", want{err: ErrIntRange, spec: "%{a}d", off: 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Compile(tc.format)
			if err != nil {
				t.Fatalf("Compile(%q): %v", tc.format, err)
			}
			var out Fields
			err = f.Parse([]byte(tc.line), &out)
			checkParse(t, &out, err, tc.want)
			if tc.want.err != nil {
				return
			}
			// A Fields reused from another format and line gives
			// the same result.
			other, _ := Compile("%j %h %t %D %{x}s %{y}d %{z}i")
			reused := Fields{}
			if err := other.Parse([]byte(`{} 1.2.3.4 2015-10-01T00:00:00 2015-10-01T00:00:00Z a 1 b`), &reused); err != nil {
				t.Fatal(err)
			}
			err = f.Parse([]byte(tc.line), &reused)
			checkParse(t, &reused, err, tc.want)
		})
	}
}

// TestFastPathChoice pins which formats use the hand-written matcher.
func TestFastPathChoice(t *testing.T) {
	tests := []struct {
		format string
		fast   bool
	}{
		{"%q %{recvFrom}s %{seqId}d %t %h %{userAgent}i", true},
		{"%q %{recvFrom}s %{seqId}d %t %o %{userAgent}i", true},
		{"%{seqId}d EventLogging %j", true},
		{"%q %{recvFrom}s %{seqId}d %D %o %{userAgent}i", true},
		{"%{a}s\t%{b}i\t%{c}d", true}, // literal TAB after %i: disjoint
		{"%t%{a}s", true},             // %t is fixed length
		{"%{a}d-%{b}d", true},         // '-' is not a digit
		{"%{a}i", true},
		{" %{a}i", true},
		{"%{a}s %{b}i", true},
		{"%{a}s  %{b}i", true},
		{"%{a}sX", false},
		{"%{a}d%{b}d", false},
		{"%{a}s%t", false},
		{"%{ua}i %{b}s", false},       // [^\t]+ could give back a space
		{"%{a}s %{ua}i %{b}s", false}, // whitespace before a non-final %i
		{"%{a}s \tx", false},          // whitespace then a literal TAB
		{"%{a}i\n%{b}s", false},       // %i then a literal LF it could match
	}
	for _, tc := range tests {
		f, err := Compile(tc.format)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tc.format, err)
		}
		if got := f.re == nil; got != tc.fast {
			t.Errorf("Compile(%q): fast = %v, want %v", tc.format, got, tc.fast)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct{ format, contains string }{
		{"", "format is empty"},
		{"%x", `unknown specifier "%x" at byte 0`},
		{"%q %é", `unknown specifier "%é" at byte 3`},
		{"%u", `unknown specifier "%u"`},
		{"%d", `unknown specifier "%d"`},
		{"%q %", `"%" at the end of the format`},
		{"%{", `unterminated "%{"`},
		{"%q %{abc", `unterminated "%{" at byte 3`},
		{"%{}s", `empty name`},
		{"%{a-b}s", `invalid name "a-b"`},
		{"%{a b}s", `invalid name "a b"`},
		{"%{a}", `"%{a}" at the end of the format`},
		{"%{a}x", `unknown specifier "%{a}x"`},
		{"%{a}q", `unknown specifier "%{a}q"`},
		{"%q %j", "second capsule specifier %j"},
		{"%q %q", "second capsule specifier %q"},
		{"%t %t", `field "timestamp" appears twice (%t and %t) at byte 3`},
		{"%D %D", `field "dt" appears twice`},
		{"%h %h", `field "clientIp" appears twice`},
		{"%{a}s %{a}d", `field "a" appears twice (%{a}s and %{a}d)`},
		{"%{capsule}s %j", `field "capsule" appears twice (%{capsule}s and %j)`},
		{"%t %{timestamp}d", `field "timestamp" appears twice`},
		{"%q %{capsule}s", `field "capsule" appears twice`},
		{"%{x}s \xff", "not valid UTF-8"},
		{"%{x}s \uFFFD", "contains U+FFFD"},
		{strings.Repeat("%o ", MaxFormatLen), "more than 4096"},
	}
	for _, tc := range tests {
		f, err := Compile(tc.format)
		if err == nil {
			t.Errorf("Compile(%q) = %v, want an error", tc.format, f)
			continue
		}
		if !strings.Contains(err.Error(), tc.contains) {
			t.Errorf("Compile(%q) error %q does not contain %q", tc.format, err, tc.contains)
		}
	}
}

func TestFormatAccessors(t *testing.T) {
	const format = "%q %{recvFrom}s %{seqId}d %t %h %D %{userAgent}i"
	f, err := Compile(format)
	if err != nil {
		t.Fatal(err)
	}
	if f.String() != format || !f.HasCapsule() || !f.HasTimestamp() || !f.HasClientIP() || !f.HasDT() {
		t.Errorf("accessors of %q: %q %v %v %v %v", format, f, f.HasCapsule(), f.HasTimestamp(), f.HasClientIP(), f.HasDT())
	}
	names := f.Names()
	if strings.Join(names, ",") != "recvFrom,seqId,userAgent" {
		t.Errorf("Names = %q", names)
	}
	names[0] = "changed"
	if f.Names()[0] != "recvFrom" || f.NamedIndex("seqId") != 1 || f.NamedIndex("nope") != -1 {
		t.Error("Names or NamedIndex wrong")
	}
	g, _ := Compile("%{a}s")
	if g.HasCapsule() || g.HasTimestamp() || g.HasClientIP() || g.HasDT() {
		t.Error("%{a}s claims fields it does not have")
	}
}

// TestLongLine parses 1 MB lines with the fast and the regexp matcher.
func TestLongLine(t *testing.T) {
	const size = 1 << 20
	big := strings.Repeat("%7B", size/3)
	tests := []struct {
		name, format, line string
		check              func(t *testing.T, out *Fields, err error)
	}{
		{"capsule", "%q %{a}s", "?" + big + " x", func(t *testing.T, out *Fields, err error) {
			if err != nil || len(out.Capsule) != size/3 || out.Named[0].Str != "x" {
				t.Errorf("err %v, capsule %d bytes", err, len(out.Capsule))
			}
		}},
		{"bad escape at the end", "%q", "?" + big + "%4", func(t *testing.T, out *Fields, err error) {
			var pe *ParseError
			if !errors.As(err, &pe) || !errors.Is(err, ErrBadEscape) || pe.Offset != 1+len(big) || pe.Excerpt != "%4" {
				t.Errorf("err %v", err)
			}
		}},
		{"user agent", "%{a}s %{ua}i", "x " + strings.Repeat("a ", size/2), func(t *testing.T, out *Fields, err error) {
			if err != nil || len(out.Named[1].Str) != size {
				t.Errorf("err %v", err)
			}
		}},
		{"whitespace", "%{a}s %{ua}i", "x" + strings.Repeat(" \t", size/2), func(t *testing.T, out *Fields, err error) {
			if err != nil || out.Named[1].Str != " " {
				t.Errorf("err %v, %+v", err, out.Named)
			}
		}},
		{"digits overflow", "%{n}d", strings.Repeat("1", size), func(t *testing.T, _ *Fields, err error) {
			var pe *ParseError
			if !errors.Is(err, ErrIntRange) || !errors.As(err, &pe) || len(pe.Excerpt) != MaxExcerpt {
				t.Errorf("err %v", err)
			}
		}},
		{"no match at the end", "%{a}s %{b}s", strings.Repeat("x", size), func(t *testing.T, _ *Fields, err error) {
			if !errors.Is(err, ErrNoMatch) {
				t.Errorf("err %v", err)
			}
		}},
		{"regexp fallback", "%{ua}i %{b}s", strings.Repeat("a ", size/2) + "\t", func(t *testing.T, out *Fields, err error) {
			if err != nil || out.Named[1].Str != "a" {
				t.Errorf("err %v", err)
			}
		}},
		{"regexp fallback no match", "%{a}sX", strings.Repeat("x", size), func(t *testing.T, _ *Fields, err error) {
			if !errors.Is(err, ErrNoMatch) {
				t.Errorf("err %v", err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Compile(tc.format)
			if err != nil {
				t.Fatal(err)
			}
			var out Fields
			err = f.Parse([]byte(tc.line), &out)
			tc.check(t, &out, err)
		})
	}
}

func TestExcerptCutsAtRuneBoundary(t *testing.T) {
	line := []byte(strings.Repeat("é", 100)) // 2 bytes each
	for off := 0; off < 4; off++ {
		e := excerpt(line, off)
		if len(e) > MaxExcerpt || len(e) < MaxExcerpt-3 {
			t.Errorf("excerpt at %d is %d bytes", off, len(e))
		}
		if !bytes.HasPrefix(line[off:], []byte(e)) {
			t.Errorf("excerpt at %d is not a prefix", off)
		}
		if off%2 == 0 && !strings.HasSuffix(e, "é") {
			t.Errorf("excerpt at %d = %q cuts a rune", off, e)
		}
	}
}

func TestParseErrorMessage(t *testing.T) {
	f, err := Compile("%q %{recvFrom}s %t %h")
	if err != nil {
		t.Fatal(err)
	}
	err = f.Parse([]byte("?x host Fails to parse."), &Fields{})
	const msg = `line does not match format at %t (byte 8): want YYYY-MM-DDTHH:MM:SS, have "Fails to parse."`
	if err == nil || err.Error() != msg {
		t.Errorf("error = %v\nwant    %s", err, msg)
	}
	err = fmt.Errorf("parse raw line: %w", err)
	if !errors.Is(err, ErrNoMatch) {
		t.Error("wrapped ParseError does not wrap ErrNoMatch")
	}
}

// TestParseAllocs checks that the steady state allocates nothing beyond
// the strings of changed field values.
func TestParseAllocs(t *testing.T) {
	f, err := Compile("%q %{recvFrom}s %{seqId}d %t %h %{userAgent}i")
	if err != nil {
		t.Fatal(err)
	}
	line := []byte("?%7B%22a%22%3A1%7D; cp1.example 42 2015-10-01T00:00:00 1.2.3.4 Mozilla/5.0 (X)")
	var out Fields
	if err := f.Parse(line, &out); err != nil {
		t.Fatal(err)
	}
	// The same line again: every string value is reused.
	if n := testing.AllocsPerRun(100, func() { _ = f.Parse(line, &out) }); n != 0 {
		t.Errorf("re-parsing the same line: %v allocs, want 0", n)
	}
	// Fast-path formats without named or string fields allocate nothing.
	g, _ := Compile("%q %t")
	line = []byte("?%7B%7D 2015-10-01T00:00:00")
	if n := testing.AllocsPerRun(100, func() { _ = g.Parse(line, &out) }); n != 0 {
		t.Errorf("%%q %%t: %v allocs, want 0", n)
	}
}

// TestScanNonWS checks the eight-bytes-at-a-time scan against the plain one.
func TestScanNonWS(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte{' ', '\t', '\n', '\v', '\f', '\r', 0, 0x08, 0x0e, 0x1f, 0x20, 0x21, 'a', '%', 0x7f, 0x80, 0xa0, 0xff}
	for range 2000 {
		line := make([]byte, r.IntN(40))
		for i := range line {
			if r.IntN(4) == 0 {
				line[i] = alphabet[r.IntN(len(alphabet))]
			} else {
				line[i] = 'x'
			}
		}
		for p := 0; p <= len(line); p++ {
			if got, want := scanNonWS(line, p), scan(line, p, &nonWSSet); got != want {
				t.Fatalf("scanNonWS(%q, %d) = %d, want %d", line, p, got, want)
			}
		}
	}
}
