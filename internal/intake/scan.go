package intake

import (
	"unicode/utf8"

	"github.com/eventlogging/eventlogging/internal/capsule"
)

// isHex[c] says that c is a hexadecimal digit.
var isHex = func() (t [256]bool) {
	for _, c := range []byte("0123456789abcdefABCDEF") {
		t[c] = true
	}
	return t
}()

// jsonLiterals are JSON's literals by their first byte.
var jsonLiterals = [...]string{'f': "false", 'n': "null", 't': "true"}

// The states of scanBody.
const (
	scanValue = iota // a value is expected at i
	scanKey          // an object's key is expected at i
	scanAfter        // a value ended just before i
)

// scanBody checks b in one pass, reading each byte once: that it is valid
// UTF-8, valid JSON (what json.Valid takes), and nested no deeper than
// maxDepth (what nesting counts). When it is, ok is true, top is its first
// byte that is not white space, and, when that is '[', count is the
// number of the array's elements and elems is out with the first
// maxElems of them appended: sub-slices of b, no copies, with no white
// space around them, as json.Unmarshal into []json.RawMessage has them.
// Past maxElems they are only counted, so that a body of millions of tiny
// elements costs no more memory than the body. When it is not, ok is
// false and the caller learns why from whyRefused, whose separate checks
// are slower but say what is wrong.
//
// It replaces four scans of every body (utf8.Valid, nesting, json.Valid,
// and a split of the array), 15 % of the intake's CPU on 10-event POSTs
// of the standard workload (docs/performance.md).
//
// Its token scanners repeat those of internal/schema (jsontext.go) on
// purpose: scanBody on schema's exported ones was measured at 19,982–
// 20,027 ns a body against 13,598–13,950 (BenchmarkSplitWorkload,
// interleaved).
func scanBody(b []byte, maxDepth, maxElems int, out [][]byte) (top byte, elems [][]byte, count int, ok bool) {
	n := len(b)
	i := skipSpace(b, 0)
	if i == n {
		return 0, out, 0, false
	}
	top = b[i]
	var stackArr [64]byte // the open containers, '{' or '['
	stack := stackArr[:0]
	start := 0 // where the current element of a top-level array began
	state := scanValue
	for {
		switch state {
		case scanValue:
			i = skipSpace(b, i)
			if i == n {
				return top, out, count, false
			}
			if len(stack) == 1 {
				start = i
			}
			switch c := b[i]; c {
			case '{', '[':
				if len(stack) == maxDepth {
					return top, out, count, false
				}
				stack = append(stack, c)
				i = skipSpace(b, i+1)
				switch {
				case i == n:
					return top, out, count, false
				case b[i] == c+2: // '}' is '{'+2, ']' is '['+2
					i++
					stack = stack[:len(stack)-1]
					state = scanAfter
				case c == '{':
					state = scanKey
				}
			case '"':
				if i, ok = scanString(b, i); !ok {
					return top, out, count, false
				}
				state = scanAfter
			case 't', 'f', 'n':
				if i, ok = scanLiteral(b, i, jsonLiterals[c]); !ok {
					return top, out, count, false
				}
				state = scanAfter
			default:
				if i, ok = scanNumber(b, i); !ok {
					return top, out, count, false
				}
				state = scanAfter
			}
		case scanKey:
			i = skipSpace(b, i)
			if i == n || b[i] != '"' {
				return top, out, count, false
			}
			if i, ok = scanString(b, i); !ok {
				return top, out, count, false
			}
			i = skipSpace(b, i)
			if i == n || b[i] != ':' {
				return top, out, count, false
			}
			i++
			state = scanValue
		case scanAfter:
			// A value ended at i: at depth 1 of an array, it is one of
			// the body's events.
			if len(stack) == 0 {
				return top, out, count, skipSpace(b, i) == n
			}
			if len(stack) == 1 && top == '[' {
				if count < maxElems {
					if out == nil { // room for the 10-event batches clients send
						out = make([][]byte, 0, min(maxElems, 16))
					}
					out = append(out, b[start:i])
				}
				count++
			}
			i = skipSpace(b, i)
			if i == n {
				return top, out, count, false
			}
			open := stack[len(stack)-1]
			switch b[i] {
			case ',':
				i++
				if open == '{' {
					state = scanKey
				} else {
					state = scanValue
				}
			case open + 2:
				i++
				stack = stack[:len(stack)-1]
			default:
				return top, out, count, false
			}
		}
	}
}

// skipSpace returns the index of the first byte of b from i on that is not
// JSON white space; len(b) if none.
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// scanString checks the JSON string that opens at b[i] and returns the
// index after its closing quote; its text must be valid UTF-8.
func scanString(b []byte, i int) (int, bool) {
	n := len(b)
	for i++; i < n; {
		c := b[i]
		if capsule.SafeASCII[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			return i + 1, true
		case c == '\\':
			if i+1 == n {
				return i, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > n || !isHex[b[i+2]] || !isHex[b[i+3]] || !isHex[b[i+4]] || !isHex[b[i+5]] {
					return i, false
				}
				i += 6
			default:
				return i, false
			}
		case c < 0x20:
			return i, false
		default: // the first byte of a multi-byte UTF-8 sequence
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return i, false
			}
			i += size
		}
	}
	return i, false
}

// scanLiteral checks that the literal lit (true, false or null) is at b[i]
// and returns the index after it.
func scanLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// scanNumber checks the JSON number at b[i] and returns the index after
// it: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(b []byte, i int) (int, bool) {
	n := len(b)
	if b[i] == '-' {
		i++
	}
	switch {
	case i == n:
		return i, false
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = skipDigits(b, i+1)
	default:
		return i, false
	}
	if i < n && b[i] == '.' {
		j := skipDigits(b, i+1)
		if j == i+1 {
			return i, false
		}
		i = j
	}
	if i < n && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < n && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := skipDigits(b, i)
		if j == i {
			return i, false
		}
		i = j
	}
	return i, true
}

// skipDigits returns the index of the first byte of b from i on that is
// not a decimal digit.
func skipDigits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}
