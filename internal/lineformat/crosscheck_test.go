package lineformat

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// withRegexp returns a copy of f that always uses the regexp matcher.
func withRegexp(f *Format) (*Format, error) {
	g := *f
	g.re, g.reGroup = nil, nil
	if err := g.buildRegexp(); err != nil {
		return nil, err
	}
	return &g, nil
}

// diffResults describes how two Parse results differ, or returns "".
// Mismatch errors are compared by kind only: the regexp matcher reports
// where the greedy matcher would have failed, so positions may differ.
func diffResults(a *Fields, errA error, b *Fields, errB error) string {
	if (errA == nil) != (errB == nil) {
		return fmt.Sprintf("errors differ: %v / %v", errA, errB)
	}
	if errA != nil {
		if errors.Is(errA, ErrNoMatch) != errors.Is(errB, ErrNoMatch) {
			return fmt.Sprintf("errors differ: %v / %v", errA, errB)
		}
		if !errors.Is(errA, ErrNoMatch) && errA.Error() != errB.Error() {
			return fmt.Sprintf("value errors differ: %v / %v", errA, errB)
		}
		return ""
	}
	switch {
	case (a.Capsule == nil) != (b.Capsule == nil) || string(a.Capsule) != string(b.Capsule):
		return fmt.Sprintf("capsule %q / %q", a.Capsule, b.Capsule)
	case a.Timestamp != b.Timestamp || a.HasTimestamp != b.HasTimestamp:
		return fmt.Sprintf("timestamp %d / %d", a.Timestamp, b.Timestamp)
	case a.DT != b.DT:
		return fmt.Sprintf("dt %q / %q", a.DT, b.DT)
	case a.ClientIP != b.ClientIP || a.HasClientIP != b.HasClientIP:
		return fmt.Sprintf("clientIp %q / %q", a.ClientIP, b.ClientIP)
	case len(a.Named) != len(b.Named):
		return fmt.Sprintf("named %+v / %+v", a.Named, b.Named)
	}
	for i := range a.Named {
		if a.Named[i] != b.Named[i] {
			return fmt.Sprintf("named[%d] %+v / %+v", i, a.Named[i], b.Named[i])
		}
	}
	return ""
}

// crossCheck parses line with f's fast matcher and with the regexp
// matcher and reports any difference; it returns whether the line parsed.
// f must use the fast matcher.
func crossCheck(t *testing.T, f, re *Format, line []byte) bool {
	t.Helper()
	var a, b Fields
	errA := f.Parse(line, &a)
	errB := re.Parse(line, &b)
	if d := diffResults(&a, errA, &b, errB); d != "" {
		t.Fatalf("format %q line %q: fast / regexp: %s", f, line, d)
	}
	return errA == nil
}

// lineTokens are the pieces random lines are made of: whitespace of every
// kind, the text each specifier wants, and near misses.
var lineTokens = []string{
	" ", " ", "\t", "\t", "\n", "\r", "\v", "\f", "x", "ab", "1", "42", "?", "?%7B%22a%22%3A1%7D;",
	"%zz", "%4", "%C3%28", "+", "2015-10-01T00:00:00", "2015-13-01T00:00:00", "2015-10-01T00:00:00Z",
	"EventLogging", "-", "X", "%", "é", "\xff", "\x00", "99999999999999999999", `"UA 1.0"`,
}

func randomLine(r *rand.Rand) []byte {
	var b strings.Builder
	for n := r.IntN(12); n > 0; n-- {
		b.WriteString(lineTokens[r.IntN(len(lineTokens))])
	}
	return []byte(b.String())
}

// formatTokens are the pieces random formats are made of.
var formatTokens = []string{
	"%q", "%j", "%t", "%D", "%h", "%o", "%o", "%{a}s", "%{b}d", "%{c}i", "%{d}s", "%{e}d", "%{f}i",
	" ", " ", " ", "  ", "X", "EventLogging", "\t", "\n", "%%", "-", "?", "1",
}

func randomFormat(r *rand.Rand) string {
	var b strings.Builder
	for n := 1 + r.IntN(6); n > 0; n-- {
		b.WriteString(formatTokens[r.IntN(len(formatTokens))])
	}
	return b.String()
}

// TestFastMatchesRegexp checks that, wherever the fast matcher is used, it
// gives the regexp matcher's result.
func TestFastMatchesRegexp(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	formats := []string{
		"%q %{recvFrom}s %{seqId}d %t %h %{userAgent}i",
		"%q %{recvFrom}s %{seqId}d %t %o %{userAgent}i",
		"%{seqId}d EventLogging %j",
		"%q %{recvFrom}s %{seqId}d %D %o %{userAgent}i",
		"%{a}s\t%{b}i\t%{c}d",
		"%t%{a}s", "%{a}d-%{b}d", "%{a}i", " %{a}i", "%{a}s %{b}i", "%{a}s  %{b}i", "%{a}s ",
		"%q", "%j", "%{a}s %{b}s", "100%% %{a}s",
	}
	checked, parsed := 0, 0
	for len(formats) < 3000 {
		formats = append(formats, randomFormat(r))
	}
	for _, format := range formats {
		f, err := Compile(format)
		if err != nil || f.re != nil {
			continue
		}
		re, err := withRegexp(f)
		if err != nil {
			t.Fatalf("format %q: regexp: %v", format, err)
		}
		for range 100 {
			crossCheck(t, f, re, randomLine(r))
			if crossCheck(t, f, re, lineFor(r, f)) {
				parsed++
			}
		}
		checked++
	}
	// Most random lines do not match; enough must, or the check is idle.
	if checked < 1000 || parsed < 20*checked {
		t.Fatalf("only %d fast formats checked, %d lines parsed", checked, parsed)
	}
	t.Logf("%d fast formats checked, %d generated lines parsed", checked, parsed)
}

// elemTokens are plausible texts for each kind of element.
var elemTokens = map[kind][]string{
	kindSpace:    {" ", "\t", "  ", " \t ", "\t\t", "\n"},
	kindQuery:    {"?%7B%22a%22%3A1%7D;", "?a+b", "?;", "?%zz", "?%C3%28", "?x\xff"},
	kindJSON:     {`{"a":1}`, "{}", "x"},
	kindTime:     {"2015-10-01T00:00:00", "2015-02-30T00:00:00", "2015-10-01T00:00:0"},
	kindDT:       {"2015-10-01T00:00:00Z", "2015-10-01T00:00:00+01:00", "2015-10-01"},
	kindClientIP: {"1.2.3.4", "::1", "-"},
	kindOmit:     {"-", "x"},
	kindString:   {"cp1.example", "x", "é"},
	kindInt:      {"42", "0", "99999999999999999999", "1x"},
	kindTab:      {"Mozilla/5.0 (X)", `"UA"`, " ", "a\tb"},
}

// lineFor builds a line that mostly matches f, with some noise.
func lineFor(r *rand.Rand, f *Format) []byte {
	var b strings.Builder
	for _, e := range f.elems {
		switch {
		case r.IntN(10) == 0:
			b.WriteString(lineTokens[r.IntN(len(lineTokens))])
		case e.kind == kindLiteral:
			b.WriteString(e.lit)
		default:
			toks := elemTokens[e.kind]
			b.WriteString(toks[r.IntN(len(toks))])
		}
	}
	if r.IntN(2) == 0 {
		b.WriteString(lineTokens[r.IntN(len(lineTokens))])
	}
	return []byte(b.String())
}
