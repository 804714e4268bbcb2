package schema

import (
	"regexp"
	"testing"
)

var fixedPatternCases = []struct {
	pattern string
	fixed   bool
}{
	{`^[a-fA-F0-9]{8}(-[a-fA-F0-9]{4}){3}-[a-fA-F0-9]{12}$`, true},
	{`^[a-f0-9]{20}$`, true},
	{`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, true},
	{`^ab.c$`, true},
	{`^(?s)a.c$`, true},
	{`^[^a-z]{2}\d\w$`, true},
	{`^é[à-ö]{2}$`, true},
	{`^(?i)abc$`, false},
	{`^(?i)[a-c]{2}$`, true},
	{`^[a-f0-9]{20}`, false},
	{`[a-f0-9]{20}$`, false},
	{`^[a-f0-9]{2,20}$`, false},
	{`^[a-f0-9]+$`, false},
	{`^a|b$`, false},
	{`^(?m)ab$`, false},
	{`^$`, false},
	{`^a{300}$`, false},
}

var fixedPatternInputs = []string{
	"", "5f0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b", "5F0C1A2B-3C4D-4E5F-8A9B-0C1D2E3F4A5B", "5f0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5",
	"5f0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b\n", "0123456789abcdef0123", "0123456789abcdef012", "0123456789abcdef01234",
	"0123456789ABCDEF0123", "5f0c1a2b-3c4d-4e5f-cafe-0c1d2e3f4a5b", "abxc", "ab\nc", "ABC", "aBc", "A\u212aC",
	"é\u00e0\u00f6", "éaa", "\xff\xff\xff\xff", "12_x", "AB1_", "a\nc",
}

// TestFixedPattern: the patterns that are fixed sequences of sets are
// recognised, and match as regexp.MatchString does.
func TestFixedPattern(t *testing.T) {
	for _, c := range fixedPatternCases {
		re := regexp.MustCompile(c.pattern)
		p := fixedPatternOf(re)
		if (p != nil) != c.fixed {
			t.Errorf("%s: fixed = %v, want %v", c.pattern, p != nil, c.fixed)
		}
		if p == nil {
			continue
		}
		for _, s := range fixedPatternInputs {
			if got, want := p.match(s), re.MatchString(s); got != want {
				t.Errorf("%s on %q: fixed says %v, regexp %v", c.pattern, s, got, want)
			}
		}
	}
}

// FuzzFixedPattern: for any pattern regexp compiles that is a fixed
// sequence of sets, and any string, the fixed match is regexp's.
func FuzzFixedPattern(f *testing.F) {
	for i, c := range fixedPatternCases {
		f.Add(c.pattern, fixedPatternInputs[i%len(fixedPatternInputs)])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		re, err := regexp.Compile(pattern)
		if err != nil {
			return
		}
		if p := fixedPatternOf(re); p != nil && p.match(s) != re.MatchString(s) {
			t.Fatalf("%q on %q: fixed says %v, regexp %v", pattern, s, p.match(s), re.MatchString(s))
		}
	})
}
