package lineformat

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// MaxFormatLen is the longest format string Compile accepts, in bytes.
const MaxFormatLen = 4096

// kind is what one element of a compiled format matches.
type kind uint8

const (
	kindLiteral  kind = iota // literal text, byte for byte
	kindSpace                // n spaces in the format: n or more whitespace bytes
	kindQuery                // %q
	kindJSON                 // %j
	kindTime                 // %t
	kindDT                   // %D
	kindClientIP             // %h
	kindOmit                 // %o
	kindString               // %{name}s
	kindInt                  // %{name}d
	kindTab                  // %{name}i
)

// ncsaLen is the length of a %t timestamp, YYYY-MM-DDTHH:MM:SS.
const ncsaLen = len("2006-01-02T15:04:05")

// elem is one element of a compiled format.
type elem struct {
	kind kind
	spec string // the element as written in the format, for errors: "%t", "%{seqId}d", `"EventLogging"`
	lit  string // kindLiteral: the text to match
	n    int    // kindSpace: the minimum number of whitespace bytes
	slot int    // named kinds: index in Fields.Named
	// spaceBeforeLastTab marks a kindSpace directly followed by a
	// kindTab that ends the format. The regexp would backtrack the
	// whitespace run to leave one non-TAB byte for the [^\t]+ when the
	// run reaches the end of the line; the fast matcher does the same.
	spaceBeforeLastTab bool
}

// Format is a compiled line format. It is immutable and safe for concurrent
// use; each goroutine needs its own Fields.
type Format struct {
	format string
	elems  []elem
	names  []string // Named field names in format order

	hasCapsule, hasTime, hasDT, hasClientIP bool
	captures                                int // elements that produce a value (all but literals, spaces and %o)

	// re is the fallback matcher, nil when the fast matcher is exact for
	// this format. reGroup[i] is the capture group of elems[i], or 0.
	re      *regexp.Regexp
	reGroup []int
}

// Compile parses a format string such as
// "%q %{recvFrom}s %{seqId}d %t %o %{userAgent}i".
//
// It rejects an empty format, a format longer than MaxFormatLen or not valid
// UTF-8, an unknown specifier, a "%" at the end, an unterminated or empty
// "%{name}", a name that is not ASCII letters, digits and underscores, a
// "%{name}" not followed by s, d or i, a named field that appears twice or
// clashes with a field another specifier fills (capsule, timestamp, dt,
// clientIp), more than one of %q and %j, and a repeated %t, %D or %h.
func Compile(format string) (*Format, error) {
	f, err := parseFormat(format)
	if err != nil {
		return nil, err
	}
	if !f.fastExact() {
		if err := f.buildRegexp(); err != nil {
			return nil, fmt.Errorf("format %q: %w", format, err)
		}
	}
	return f, nil
}

// String returns the format string that was compiled.
func (f *Format) String() string { return f.format }

// HasCapsule reports whether the format has %q or %j, so that Parse fills
// Fields.Capsule.
func (f *Format) HasCapsule() bool { return f.hasCapsule }

// HasTimestamp reports whether the format has %t, so that Parse fills
// Fields.Timestamp.
func (f *Format) HasTimestamp() bool { return f.hasTime }

// HasDT reports whether the format has %D, so that Parse fills Fields.DT.
func (f *Format) HasDT() bool { return f.hasDT }

// HasClientIP reports whether the format has %h, so that Parse fills
// Fields.ClientIP.
func (f *Format) HasClientIP() bool { return f.hasClientIP }

// Names returns the names of the %{name}s, %{name}d and %{name}i fields in
// format order: Fields.Named[i].Name == Names()[i] after a successful Parse.
// The caller may modify the returned slice.
func (f *Format) Names() []string { return append([]string(nil), f.names...) }

// NamedIndex returns the index in Fields.Named of the named field name, or
// -1 when the format has no such field. Callers on a hot path look the
// index up once and then read Fields.Named[i] directly.
func (f *Format) NamedIndex(name string) int {
	for i, n := range f.names {
		if n == name {
			return i
		}
	}
	return -1
}

// errCompile builds a Compile error.
func errCompile(format, msg string, pos int) error {
	return fmt.Errorf("format %q: %s at byte %d", format, msg, pos)
}

func parseFormat(format string) (*Format, error) {
	switch {
	case format == "":
		return nil, errors.New("format is empty")
	case len(format) > MaxFormatLen:
		return nil, fmt.Errorf("format is %d bytes long, more than %d", len(format), MaxFormatLen)
	case !utf8.ValidString(format):
		return nil, fmt.Errorf("format %q is not valid UTF-8", format)
	case strings.ContainsRune(format, utf8.RuneError):
		// The regexp matcher would let U+FFFD match any invalid byte of
		// the line; the byte matcher would not. Nobody needs it.
		return nil, fmt.Errorf("format %q contains U+FFFD", format)
	}
	f := &Format{format: format}
	var lit []byte
	flushLit := func() {
		if len(lit) > 0 {
			s := string(lit)
			f.elems = append(f.elems, elem{kind: kindLiteral, lit: s, spec: fmt.Sprintf("%q", s)})
			lit = lit[:0]
		}
	}
	seen := map[string]string{} // field filled (capsule, timestamp, dt, clientIp, names) -> its specifier
	claim := func(field, spec string, pos int) error {
		if prev, ok := seen[field]; ok {
			if field == "capsule" && (prev == "%q" || prev == "%j") && (spec == "%q" || spec == "%j") {
				return errCompile(format, "second capsule specifier "+spec+" (only one %q or %j)", pos)
			}
			return errCompile(format, fmt.Sprintf("field %q appears twice (%s and %s)", field, prev, spec), pos)
		}
		seen[field] = spec
		return nil
	}
	// The specifiers that fill one capsule field each.
	single := map[byte]struct {
		kind  kind
		field string
		has   *bool
	}{
		't': {kindTime, "timestamp", &f.hasTime},
		'D': {kindDT, "dt", &f.hasDT},
		'h': {kindClientIP, "clientIp", &f.hasClientIP},
	}
	for i := 0; i < len(format); {
		c := format[i]
		if c == ' ' {
			flushLit()
			j := i
			for j < len(format) && format[j] == ' ' {
				j++
			}
			f.elems = append(f.elems, elem{kind: kindSpace, n: j - i, spec: fmt.Sprintf("%q", format[i:j])})
			i = j
			continue
		}
		if c != '%' {
			lit = append(lit, c)
			i++
			continue
		}
		start := i
		if i+1 >= len(format) {
			return nil, errCompile(format, `"%" at the end of the format (write "%%" for a literal "%")`, start)
		}
		c = format[i+1]
		i += 2
		var e elem
		switch c {
		case '%':
			lit = append(lit, '%')
			continue
		case 'q', 'j':
			e.kind = kindJSON
			if c == 'q' {
				e.kind = kindQuery
			}
			if err := claim("capsule", "%"+string(c), start); err != nil {
				return nil, err
			}
			f.hasCapsule = true
		case 't', 'D', 'h':
			sf := single[c]
			e.kind = sf.kind
			if err := claim(sf.field, "%"+string(c), start); err != nil {
				return nil, err
			}
			*sf.has = true
		case 'o':
			e.kind = kindOmit
		case '{':
			end := strings.IndexByte(format[i:], '}')
			if end < 0 {
				return nil, errCompile(format, `unterminated "%{"`, start)
			}
			name := format[i : i+end]
			if name == "" {
				return nil, errCompile(format, `empty name in "%{}"`, start)
			}
			for k := 0; k < len(name); k++ {
				if !isNameByte(name[k]) {
					return nil, errCompile(format, fmt.Sprintf("invalid name %q (want ASCII letters, digits and _)", name), start)
				}
			}
			i += end + 1
			if i >= len(format) {
				return nil, errCompile(format, fmt.Sprintf(`"%%{%s}" at the end of the format (want %%{%s}s, d or i)`, name, name), start)
			}
			switch format[i] {
			case 's':
				e.kind = kindString
			case 'd':
				e.kind = kindInt
			case 'i':
				e.kind = kindTab
			default:
				r, _ := utf8.DecodeRuneInString(format[i:])
				return nil, errCompile(format, fmt.Sprintf("unknown specifier %q (want %%{%s}s, d or i)", format[start:i]+string(r), name), start)
			}
			i++
			if err := claim(name, format[start:i], start); err != nil {
				return nil, err
			}
			e.slot = len(f.names)
			f.names = append(f.names, name)
		default:
			r, _ := utf8.DecodeRuneInString(format[i-1:])
			return nil, errCompile(format, fmt.Sprintf("unknown specifier %q", "%"+string(r)), start)
		}
		flushLit()
		e.spec = format[start:i]
		if e.kind != kindOmit {
			f.captures++
		}
		f.elems = append(f.elems, e)
	}
	flushLit()
	if n := len(f.elems); n >= 2 && f.elems[n-1].kind == kindTab && f.elems[n-2].kind == kindSpace {
		f.elems[n-2].spaceBeforeLastTab = true
	}
	return f, nil
}

func isNameByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// fastExact reports whether the greedy, non-backtracking matcher gives the
// same result as a backtracking regexp for this format. It does when no
// element could give back part of its match to the element after it: every
// variable-length element is followed by the end of the format or by an
// element whose first byte its own pattern cannot match. The one exception
// allowed, whitespace followed by a final %{name}i, is handled by the fast
// matcher itself (see elem.spaceBeforeLastTab).
func (f *Format) fastExact() bool {
	for i, e := range f.elems {
		tail := tailSet(e.kind)
		if tail == nil || i+1 == len(f.elems) || e.spaceBeforeLastTab {
			continue
		}
		if tail.intersects(firstSet(f.elems[i+1])) {
			return false
		}
	}
	return true
}

// byteSet is a set of bytes.
type byteSet [256]bool

func (s *byteSet) intersects(t *byteSet) bool {
	for c := range s {
		if s[c] && t[c] {
			return true
		}
	}
	return false
}

// The byte classes of the patterns. Whitespace is ASCII whitespace as in
// Python 2's \s: space, \t, \n, \v, \f, \r. These are read-only tables.
var (
	wsSet     = makeSet(isWS)
	nonWSSet  = makeSet(func(c byte) bool { return !isWS(c) })
	digitSet  = makeSet(func(c byte) bool { return '0' <= c && c <= '9' })
	nonTabSet = makeSet(func(c byte) bool { return c != '\t' })
)

func isWS(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func makeSet(in func(byte) bool) byteSet {
	var s byteSet
	for c := range 256 {
		s[c] = in(byte(c))
	}
	return s
}

// tailSet returns the bytes a variable-length element keeps consuming, or
// nil for a fixed-length element.
func tailSet(k kind) *byteSet {
	switch k {
	case kindSpace:
		return &wsSet
	case kindInt:
		return &digitSet
	case kindTab:
		return &nonTabSet
	case kindLiteral, kindTime:
		return nil
	default: // %q %j %D %h %o %{name}s
		return &nonWSSet
	}
}

// firstSet returns the bytes an element can start with.
func firstSet(e elem) *byteSet {
	switch e.kind {
	case kindLiteral:
		var s byteSet
		s[e.lit[0]] = true
		return &s
	case kindSpace:
		return &wsSet
	case kindQuery:
		var s byteSet
		s['?'] = true
		return &s
	case kindInt, kindTime:
		return &digitSet
	case kindTab:
		return &nonTabSet
	default: // %j %D %h %o %{name}s
		return &nonWSSet
	}
}

// Per-element patterns of the regexp matcher. The classes are written out
// because RE2's \s does not include \v.
const (
	rxWS    = `[\t\n\v\f\r ]+`
	rxNonWS = `[^\t\n\v\f\r ]+`
)

// buildRegexp compiles the fallback matcher.
func (f *Format) buildRegexp() error {
	var b strings.Builder
	b.WriteString(`\A`)
	f.reGroup = make([]int, len(f.elems))
	group := 0
	capture := func(pattern string, i int) {
		group++
		f.reGroup[i] = group
		b.WriteString("(" + pattern + ")")
	}
	for i, e := range f.elems {
		switch e.kind {
		case kindLiteral:
			b.WriteString(regexp.QuoteMeta(e.lit))
		case kindSpace:
			b.WriteString(strings.Repeat(rxWS, e.n))
		case kindQuery:
			capture(`\?`+rxNonWS, i)
		case kindTime:
			capture(`[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}`, i)
		case kindInt:
			capture(`[0-9]+`, i)
		case kindTab:
			capture(`[^\t]+`, i)
		case kindOmit:
			b.WriteString(rxNonWS)
		default: // %j %D %h %{name}s
			capture(rxNonWS, i)
		}
	}
	re, err := regexp.Compile(b.String())
	if err != nil {
		return err
	}
	f.re = re
	return nil
}
