package lineformat

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// Errors that Parse wraps in a *ParseError and DecodeQuery wraps directly;
// test for them with errors.Is.
var (
	// ErrNoMatch means the line does not match the format.
	ErrNoMatch = errors.New("line does not match format")
	// ErrBadEscape means a %q capsule has a "%" not followed by two hex
	// digits, such as "%zz" or a truncated "%4".
	ErrBadEscape = errors.New("invalid percent escape in query")
	// ErrInvalidUTF8 means a %q capsule decodes to bytes that are not valid
	// UTF-8, such as "%C3%28".
	ErrInvalidUTF8 = errors.New("invalid UTF-8 in decoded query")
	// ErrIntRange means a %{name}d field does not fit in an int64.
	ErrIntRange = errors.New("integer out of range")
	// ErrBadTimestamp means a %t or %D field has the right shape but is not
	// a valid time, such as month 13 or February 30.
	ErrBadTimestamp = errors.New("invalid timestamp")
)

// MaxExcerpt is the most bytes of the line a ParseError quotes.
const MaxExcerpt = 80

// ParseError is the error Parse returns: the line does not match the format
// (Err is ErrNoMatch), or a field matched but its text is unusable (Err
// wraps ErrBadEscape, ErrInvalidUTF8, ErrIntRange or ErrBadTimestamp).
type ParseError struct {
	// Spec is the part of the format that failed, as written: a specifier
	// such as "%t" or "%{seqId}d", or literal text or spaces in quotes.
	Spec string
	// Offset is the byte offset in the line where it failed.
	Offset int
	// Excerpt is up to MaxExcerpt bytes of the line from Offset, cut at a
	// UTF-8 boundary; for a bad value it stops at the end of the field.
	Excerpt string
	// Err says what went wrong.
	Err error

	want string // what the element matches, for ErrNoMatch
}

// Error returns, for example,
//
//	line does not match format at %t (byte 16): want YYYY-MM-DDTHH:MM:SS, have "Fails to parse."
func (e *ParseError) Error() string {
	have := "end of line"
	if e.Excerpt != "" {
		have = fmt.Sprintf("%q", e.Excerpt)
	}
	if errors.Is(e.Err, ErrNoMatch) {
		if e.want == "" {
			return fmt.Sprintf("%v at %s (byte %d), have %s", e.Err, e.Spec, e.Offset, have)
		}
		return fmt.Sprintf("%v at %s (byte %d): want %s, have %s", e.Err, e.Spec, e.Offset, e.want, have)
	}
	return fmt.Sprintf("bad value for %s at byte %d: %v, have %s", e.Spec, e.Offset, e.Err, have)
}

// Unwrap returns Err.
func (e *ParseError) Unwrap() error { return e.Err }

// newParseError builds a ParseError for e at byte off of line; the excerpt
// stops at byte end (the end of the field for a bad value).
func newParseError(line []byte, e *elem, off, end int, err error) *ParseError {
	return &ParseError{
		Spec:    e.spec,
		Offset:  off,
		Excerpt: excerpt(line[:end], off),
		Err:     err,
		want:    e.want(),
	}
}

// excerpt returns up to MaxExcerpt bytes of line from off, not cutting a
// UTF-8 sequence in two.
func excerpt(line []byte, off int) string {
	if off < 0 || off >= len(line) {
		return ""
	}
	b := line[off:]
	if len(b) > MaxExcerpt {
		n := MaxExcerpt
		for k := 0; k < utf8.UTFMax-1 && n > 0 && !utf8.RuneStart(b[n]); k++ {
			n--
		}
		b = b[:n]
	}
	return string(b)
}

// want describes what an element matches, for error messages.
func (e *elem) want() string {
	switch e.kind {
	case kindLiteral:
		return e.spec
	case kindSpace:
		if e.n == 1 {
			return "whitespace"
		}
		return fmt.Sprintf("%d or more whitespace bytes", e.n)
	case kindQuery:
		return `"?" then non-space text`
	case kindTime:
		return "YYYY-MM-DDTHH:MM:SS"
	case kindInt:
		return "digits"
	case kindTab:
		return "text before a TAB"
	default:
		return "non-space text"
	}
}
