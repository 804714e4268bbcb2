package schema

import (
	"bytes"
	"unicode/utf8"

	"github.com/eventlogging/eventlogging/internal/capsule"
)

// The grammar of the JSON text the byte walker reads (fastjson.go): compact
// RFC 8259 text in UTF-8, without escaped or duplicate object keys.

// CompactValueEnd returns the length of the JSON value at the start of b
// when it is compact text ValidJSON can judge (RFC 8259 grammar, UTF-8, no
// whitespace outside strings, no escaped or duplicate object key, nesting
// at most 128 deep), or -1. What follows the value is not read.
func CompactValueEnd(b []byte) int {
	var stack [32]span
	sc := jsonScanner{b: b, keys: stack[:0]}
	return sc.value(0, 0)
}

// ScanString reads the JSON string whose opening quote is b[i], as the
// walker does: it returns the offset after the closing quote (or -1 when
// the string is not valid JSON in UTF-8) and whether it holds an escape.
// Other one-pass readers of compact JSON (the file sink's) use it.
func ScanString(b []byte, i int) (end int, escaped bool) { return scanString(b, i) }

// ScanNumber reads the JSON number at b[i] and returns where it ends, or -1.
func ScanNumber(b []byte, i int) int { return scanNumber(b, i) }

// SkipCompact returns where the JSON value at b[i] ends when it is compact
// text (RFC 8259 grammar, UTF-8, no whitespace outside strings, nesting at
// most 128 deep, counting depth levels above it), or -1. Unlike
// CompactValueEnd it takes escaped and repeated object keys: for readers
// that skip a value whole.
func SkipCompact(b []byte, i, depth int) int {
	sc := jsonScanner{b: b, anyKeys: true}
	return sc.value(i, depth)
}

// span is b[start:end].
type span struct{ start, end int }

// jsonScanner checks the grammar of compact JSON text; keys holds the keys
// of the objects being read, for the duplicate check. With anyKeys, keys
// are not checked (escapes and duplicates are taken).
type jsonScanner struct {
	b       []byte
	keys    []span
	anyKeys bool
}

// value reads the value at b[i] and returns where it ends, or -1.
func (sc *jsonScanner) value(i, depth int) int {
	b := sc.b
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; c {
	case '{':
		if depth >= maxJSONDepth {
			return -1
		}
		return sc.object(i, depth+1)
	case '[':
		if depth >= maxJSONDepth {
			return -1
		}
		i++
		if i < len(b) && b[i] == ']' {
			return i + 1
		}
		for {
			if i = sc.value(i, depth+1); i < 0 || i >= len(b) {
				return -1
			}
			switch b[i] {
			case ',':
				i++
			case ']':
				return i + 1
			default:
				return -1
			}
		}
	case '"':
		end, _ := scanString(b, i)
		return end
	case 't':
		return literal(b, i, "true")
	case 'f':
		return literal(b, i, "false")
	case 'n':
		return literal(b, i, "null")
	default:
		return scanNumber(b, i)
	}
}

func (sc *jsonScanner) object(i, depth int) int {
	b := sc.b
	i++
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	first := len(sc.keys)
	defer func() { sc.keys = sc.keys[:first] }()
	var seen [4]uint64 // a 256-bit filter of the key hashes
	for {
		if i >= len(b) || b[i] != '"' {
			return -1
		}
		end, escaped := scanString(b, i)
		if end < 0 || end >= len(b) || b[end] != ':' {
			return -1
		}
		if !sc.anyKeys {
			if escaped {
				return -1
			}
			key := b[i+1 : end-1]
			h := keyHash(key)
			if seen[h>>6]&(1<<(h&63)) != 0 {
				for _, k := range sc.keys[first:] {
					if bytes.Equal(b[k.start:k.end], key) {
						return -1 // a duplicate key: the decoder keeps the last
					}
				}
			}
			seen[h>>6] |= 1 << (h & 63)
			sc.push(span{i + 1, end - 1})
		}
		if i = sc.value(end+1, depth); i < 0 || i >= len(b) {
			return -1
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			return i + 1
		default:
			return -1
		}
	}
}

// push appends k to sc.keys without append, whose result assigned back
// would move the first block (on CompactValueEnd's stack) to the heap.
func (sc *jsonScanner) push(k span) {
	n := len(sc.keys)
	if n == cap(sc.keys) {
		grown := make([]span, n, 2*n+16)
		copy(grown, sc.keys)
		sc.keys = grown
	}
	sc.keys = sc.keys[:n+1]
	sc.keys[n] = k
}

// keyHash is a byte of a cheap hash of key.
func keyHash(key []byte) uint8 {
	h := uint32(len(key)) * 0x9e3779b1
	for _, c := range key {
		h = (h ^ uint32(c)) * 0x01000193
	}
	return uint8(h >> 24)
}

func literal(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// scanString reads the string whose opening quote is b[i]; it returns the
// offset after the closing quote (or -1 when the string is not valid JSON
// in UTF-8) and whether it contains an escape.
func scanString(b []byte, i int) (end int, escaped bool) {
	i++
	for i < len(b) {
		// Plain bytes (printable ASCII but '"' and '\\') by a table: the
		// strings of events are mostly short, where it beat a test of
		// eight bytes at a time (BenchmarkProcessPlatform/fast 2,088-2,130 ns
		// with it, 1,972-1,988 without).
		for i < len(b) && capsule.SafeASCII[b[i]] {
			i++
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1, escaped
		case c == '\\':
			escaped = true
			if i+1 >= len(b) {
				return -1, escaped
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(b)-i < 6 {
					return -1, escaped
				}
				for _, h := range b[i+2 : i+6] {
					if !isHex(h) {
						return -1, escaped
					}
				}
				i += 6
			default:
				return -1, escaped
			}
		case c < 0x20:
			return -1, escaped
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return -1, escaped
			}
			i += size
		}
	}
	return -1, escaped
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// scanNumber reads the JSON number at b[i] and returns where it ends, or -1.
func scanNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = digits(b, i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}
