package lineformat

import (
	"bytes"
	"errors"
	"net/url"
	"testing"
	"unicode/utf8"
)

// FuzzParse compiles a format and parses a line with it: no panic, errors
// well formed, results consistent with the format, and, where the fast
// matcher is used, the same result as the regexp matcher. Seeds are added
// here and in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	const beacon = "%q %{recvFrom}s %{seqId}d %t %o %{userAgent}i"
	seeds := []struct{ format, line string }{
		{beacon, "?%7B%22event%22%3A%7B%7D%7D;\tcp1052.eqiad.wmnet\t4724275\t2015-09-21T21:55:27\t-\t\"Mozilla/5.0 (X11)\""},
		{"%q %{recvFrom}s %{seqId}d %t %h %{userAgent}i", "?%7B%7D; cp1 1 2013-01-19T23:16:38 86.149.229.149 Mozilla/5.0"},
		{"%{seqId}d EventLogging %j", `99 EventLogging {"a":"save\u0020page"}`},
		{"%q %{recvFrom}s %D %o %{userAgent}i", "?a+b%2B; h 2013-01-19T23:16:38Z - UA"},
		{"%q %{recvFrom}s %t %h", "Fails to parse."},
		{"%q", "?%C3%28;"},
		{"%q", "?%zz"},
		{"%q", "?abc%4"},
		{"%{n}d", "9223372036854775808"},
		{"%t", "2015-02-29T00:00:00"},
		{"%{a}s %{ua}i", "x \t \t\t"},
		{"%{a}s  %{ua}i", "x   "},
		{"%{a}sX", "aXbX"},
		{"%{ua}i %{b}s", "foo bar\t"},
		{"100%% %{a}d-%{b}d", "100%\t1-2"},
		{"%{a}i\t%{b}s", "x y\tz"},
		{"%{", ""},
		{"", ""},
	}
	for _, s := range seeds {
		f.Add(s.format, []byte(s.line))
	}
	f.Fuzz(func(t *testing.T, format string, line []byte) {
		if len(format) > 512 {
			// Long formats only slow the fuzzer down (each run compiles
			// a regexp); TestCompileErrors covers MaxFormatLen.
			return
		}
		fm, err := Compile(format)
		if err != nil {
			if fm != nil {
				t.Fatalf("Compile(%q) returned a Format and an error", format)
			}
			return
		}
		if fm.String() != format {
			t.Fatalf("String() = %q, want %q", fm, format)
		}
		var out Fields
		err = fm.Parse(line, &out)
		checkInvariants(t, fm, line, &out, err)

		// A Fields that held another result gives the same result.
		var used Fields
		_ = fm.Parse(line[:len(line)/2], &used)
		errUsed := fm.Parse(line, &used)
		if d := diffResults(&out, err, &used, errUsed); d != "" {
			t.Fatalf("format %q line %q: fresh / reused Fields: %s", format, line, d)
		}

		if fm.re == nil {
			re, err := withRegexp(fm)
			if err != nil {
				return // too large for package regexp
			}
			crossCheck(t, fm, re, line)
		}
	})
}

// checkInvariants checks what must hold for any Parse result.
func checkInvariants(t *testing.T, fm *Format, line []byte, out *Fields, err error) {
	t.Helper()
	if err != nil {
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Fatalf("error %v (%T) is not a *ParseError", err, err)
		}
		known := false
		for _, s := range []error{ErrNoMatch, ErrBadEscape, ErrInvalidUTF8, ErrIntRange, ErrBadTimestamp} {
			known = known || errors.Is(err, s)
		}
		if !known {
			t.Fatalf("error %v wraps no sentinel", err)
		}
		if pe.Offset < 0 || pe.Offset > len(line) || len(pe.Excerpt) > MaxExcerpt ||
			!bytes.HasPrefix(line[pe.Offset:], []byte(pe.Excerpt)) || pe.Spec == "" || pe.Error() == "" {
			t.Fatalf("malformed error %+v for line of %d bytes", pe, len(line))
		}
		return
	}
	if (out.Capsule != nil) != fm.HasCapsule() || out.HasTimestamp != fm.HasTimestamp() || out.HasClientIP != fm.HasClientIP() {
		t.Fatalf("fields %+v do not fit format %q", out, fm)
	}
	if fm.HasDT() == (out.DT == "") {
		t.Fatalf("dt %q for format %q", out.DT, fm)
	}
	names := fm.Names()
	if len(out.Named) != len(names) {
		t.Fatalf("named %+v, want names %q", out.Named, names)
	}
	for i, fl := range out.Named {
		if fl.Name != names[i] || fl.Str == "" || !bytes.Contains(line, []byte(fl.Str)) {
			t.Fatalf("named[%d] = %+v, want name %q and text from the line", i, fl, names[i])
		}
	}
	for _, e := range fm.elems {
		if e.kind == kindQuery && !utf8.Valid(out.Capsule) {
			t.Fatalf("decoded capsule %q is not UTF-8", out.Capsule)
		}
	}
}

// FuzzDecodeQuery checks DecodeQuery against net/url's QueryUnescape, which
// decodes '+' and %XX the same way, plus the strip and UTF-8 rules.
func FuzzDecodeQuery(f *testing.F) {
	for _, s := range []string{
		"?%7B%22a%22%3A1%7D;", "?a+b%2Bc;", "??;x;;?", "?;", "", "%", "%4", "%zz", "%C3%28", "%c3%a9",
		"?%7B%22event%22%3A%7B%7D%2C%22webHost%22%3A%12345terfdit%22%7D;", "\xff", "+%2B+", "%00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, q []byte) {
		prefix := []byte("prefix")
		got, err := DecodeQuery(prefix, q)
		if !bytes.HasPrefix(got, []byte("prefix")) {
			t.Fatalf("dst prefix lost: %q", got)
		}

		start, end := trimQuery(q)
		want, wantErr := url.QueryUnescape(string(q[start:end]))
		if wantErr == nil && !utf8.ValidString(want) {
			wantErr = ErrInvalidUTF8
		}
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("DecodeQuery(%q): %v, want error %v", q, err, wantErr)
		}
		if err != nil {
			if !errors.Is(err, ErrBadEscape) && !errors.Is(err, ErrInvalidUTF8) {
				t.Fatalf("DecodeQuery(%q): error %v wraps no sentinel", q, err)
			}
			if errors.Is(err, ErrInvalidUTF8) != errors.Is(wantErr, ErrInvalidUTF8) {
				t.Fatalf("DecodeQuery(%q): error %v, want %v", q, err, wantErr)
			}
			if string(got) != "prefix" {
				t.Fatalf("DecodeQuery(%q) changed dst on error: %q", q, got)
			}
			return
		}
		if string(got[len("prefix"):]) != want {
			t.Fatalf("DecodeQuery(%q) = %q, want %q", q, got[len("prefix"):], want)
		}
	})
}
