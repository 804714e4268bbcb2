package schema

import (
	"regexp"
	"regexp/syntax"
	"unicode/utf8"
)

// fixedPattern is a pattern anchored at both ends that matches strings of
// a fixed number of characters, each from a set, such as
// ^[a-f0-9]{20}$ or ^[a-fA-F0-9]{8}(-[a-fA-F0-9]{4}){3}-[a-fA-F0-9]{12}$
// (ids, tokens and hashes in Event Platform schemas). Its match walks the
// string once, where regexp's onepass matcher costs about a
// microsecond for a 36-character uuid. It answers as regexp.MatchString
// does: the same parse of the pattern, the same character sets (as
// ranges, as regexp's compiled program has them), runes decoded as
// regexp decodes them. pattern_test.go holds it to regexp.
type fixedPattern [][]rune // per character: its set, as sorted lo-hi pairs

// maxFixedPattern bounds the characters of a fixedPattern.
const maxFixedPattern = 256

var (
	anyRuneNotNL = []rune{0, '\n' - 1, '\n' + 1, utf8.MaxRune}
	anyRune      = []rune{0, utf8.MaxRune}
)

// fixedPatternOf returns re as a fixedPattern, or nil when it is not one
// (or not a Go regexp, the library's default engine).
func fixedPatternOf(re any) fixedPattern {
	r, ok := re.(*regexp.Regexp)
	if !ok {
		return nil
	}
	tree, err := syntax.Parse(r.String(), syntax.Perl) // as regexp.Compile parses it
	if err != nil || tree.Op != syntax.OpConcat || len(tree.Sub) < 3 {
		return nil
	}
	subs := tree.Sub
	if subs[0].Op != syntax.OpBeginText || subs[len(subs)-1].Op != syntax.OpEndText {
		return nil
	}
	var p fixedPattern
	for _, s := range subs[1 : len(subs)-1] {
		if !p.add(s) {
			return nil
		}
	}
	return p
}

// add appends the characters re matches, false when re is not a fixed
// sequence of character sets.
func (p *fixedPattern) add(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return false
		}
		for _, r := range re.Rune {
			*p = append(*p, []rune{r, r})
		}
	case syntax.OpCharClass:
		*p = append(*p, re.Rune)
	case syntax.OpAnyCharNotNL:
		*p = append(*p, anyRuneNotNL)
	case syntax.OpAnyChar:
		*p = append(*p, anyRune)
	case syntax.OpCapture:
		return p.add(re.Sub[0])
	case syntax.OpConcat:
		for _, s := range re.Sub {
			if !p.add(s) {
				return false
			}
		}
	case syntax.OpRepeat:
		if re.Min != re.Max || re.Min > maxFixedPattern {
			return false
		}
		for range re.Min {
			if !p.add(re.Sub[0]) {
				return false
			}
		}
	default:
		return false
	}
	return len(*p) <= maxFixedPattern
}

// match reports whether s matches p.
func (p fixedPattern) match(s string) bool {
	i := 0
	for _, set := range p {
		if i >= len(s) {
			return false
		}
		r, w := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, w = utf8.DecodeRuneInString(s[i:])
		}
		if !inSet(set, r) {
			return false
		}
		i += w
	}
	return i == len(s)
}

// inSet reports whether r is in the sorted lo-hi pairs of set.
func inSet(set []rune, r rune) bool {
	for j := 0; j+1 < len(set); j += 2 {
		if r < set[j] {
			return false
		}
		if r <= set[j+1] {
			return true
		}
	}
	return false
}
