package lineformat

import (
	"fmt"
	"slices"
	"unicode/utf8"
)

// DecodeQuery appends to dst the JSON text of a url-encoded capsule, as %q
// does, and returns the extended slice. Like the original's
// unquote_plus(q.strip('?;')) it
//
//   - strips every leading and trailing '?' and ';' (a beacon query is
//     "?" + encodeURIComponent(json) + ";"),
//   - turns '+' into a space, before unescaping, so "%2B" stays a '+',
//   - replaces each %XX (hex digits, either case) by its byte.
//
// Unlike the original it is strict: a '%' not followed by two hex digits
// is an error wrapping ErrBadEscape, and a result that is not valid UTF-8 is
// an error wrapping ErrInvalidUTF8; on error dst is returned unchanged. The
// JSON itself is not checked. DecodeQuery allocates only when dst lacks the
// capacity for len(q) more bytes.
func DecodeQuery(dst, q []byte) ([]byte, error) {
	out, pos, err := decodeQuery(dst, q)
	if err != nil {
		return dst, fmt.Errorf("%w at byte %d: %q", err, pos, excerpt(q, pos))
	}
	return out, nil
}

// trimQuery returns the bounds of q without its leading and trailing '?'
// and ';' bytes.
func trimQuery(q []byte) (start, end int) {
	start, end = 0, len(q)
	for start < end && (q[start] == '?' || q[start] == ';') {
		start++
	}
	for end > start && (q[end-1] == '?' || q[end-1] == ';') {
		end--
	}
	return start, end
}

// decodeQuery is DecodeQuery without the error formatting: on failure it
// returns dst, the offset in q of the offending input and ErrBadEscape or
// ErrInvalidUTF8.
func decodeQuery(dst, q []byte) (out []byte, pos int, err error) {
	start, end := trimQuery(q)
	src := q[start:end]
	n := len(dst)
	grown := slices.Grow(dst, len(src))
	buf := grown[n : n+len(src)]
	j := 0
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch c {
		case '+':
			c = ' '
		case '%':
			if i+2 >= len(src) {
				return dst, start + i, ErrBadEscape
			}
			hi, lo := unhex[src[i+1]], unhex[src[i+2]]
			if hi|lo > 0xf {
				return dst, start + i, ErrBadEscape
			}
			c = hi<<4 | lo
			i += 2
		}
		buf[j] = c
		j++
	}
	if !utf8.Valid(buf[:j]) {
		return dst, start + sourceOffset(src, firstInvalid(buf[:j])), ErrInvalidUTF8
	}
	return grown[:n+j], 0, nil
}

// firstInvalid returns the offset of the first byte of b that does not
// start a valid UTF-8 sequence.
func firstInvalid(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// sourceOffset maps an offset in the decoding of src back to the offset in
// src of the text that decoded to it.
func sourceOffset(src []byte, decoded int) int {
	i := 0
	for ; decoded > 0 && i < len(src); decoded-- {
		if src[i] == '%' {
			i += 3
		} else {
			i++
		}
	}
	return min(i, len(src))
}

// unhex maps a hex digit to its value and every other byte to 0xff.
var unhex = func() (t [256]byte) {
	for c := range 256 {
		switch {
		case '0' <= c && c <= '9':
			t[c] = byte(c - '0')
		case 'a' <= c && c <= 'f':
			t[c] = byte(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			t[c] = byte(c - 'A' + 10)
		default:
			t[c] = 0xff
		}
	}
	return t
}()
