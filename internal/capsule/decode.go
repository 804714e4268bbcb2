package capsule

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// MaxDecodeDepth is the deepest nesting of objects and arrays Decode accepts.
const MaxDecodeDepth = 512

// DecodeError reports why Decode rejected its input.
type DecodeError struct {
	Offset int    // byte offset into the input of the offending byte; the input length for a truncated input
	Msg    string // what is wrong, e.g. "invalid character 'x' looking for beginning of value"
}

// Error returns Msg followed by the offset, e.g.
// "invalid character 'x' looking for beginning of value at offset 17".
func (e *DecodeError) Error() string {
	return e.Msg + " at offset " + strconv.Itoa(e.Offset)
}

// Decode parses one JSON value from b (surrounding whitespace allowed,
// anything else after the value is an error) into map[string]any, []any,
// string, json.Number (number text kept verbatim, e.g. "1.0", "1e3", "-0"),
// bool and nil: exactly the values encoding/json.Decoder with UseNumber
// produces. Of duplicate object keys the last wins, as in encoding/json.
//
// The grammar is RFC 8259's, with encoding/json's acceptance (json.Valid),
// except that invalid UTF-8 is an error rather than replaced, and nesting
// deeper than MaxDecodeDepth is an error. Escaped unpaired surrogates become
// U+FFFD, as in encoding/json. Errors are *DecodeError.
//
// Strings and numbers in the result share one copy of b (b itself is not
// retained and may be reused): holding any of them keeps that copy alive.
func Decode(b []byte) (any, error) {
	var (
		kvBuf  [32]keyValue
		valBuf [32]any
	)
	st := stacks{kvs: kvBuf[:0], vals: valBuf[:0]}
	d := decoder{s: string(b)}
	v, err := d.value(&st)
	if err != nil {
		return nil, err
	}
	d.skipSpace()
	if d.i < len(d.s) {
		return nil, d.charError(d.i, "after top-level value")
	}
	return v, nil
}

// decoder is the state of one Decode call.
type decoder struct {
	s     string // the input
	i     int    // offset of the next byte to read
	depth int
}

// stacks hold the members and elements of the open objects and arrays, so
// that each map and slice is allocated once, at its final size, when it
// closes. They are kept apart from decoder so that the compiler can keep
// their first blocks on Decode's stack.
type stacks struct {
	kvs  []keyValue
	vals []any
}

// keyValue is an object member waiting for its object to close.
type keyValue struct {
	key string
	val any
}

// pushKV appends kv to st.kvs without append, whose result assigned back
// would move the stack's first block to the heap.
func (st *stacks) pushKV(kv keyValue) {
	n := len(st.kvs)
	if n == cap(st.kvs) {
		grown := make([]keyValue, n, 2*n+16)
		copy(grown, st.kvs)
		st.kvs = grown
	}
	st.kvs = st.kvs[:n+1]
	st.kvs[n] = kv
}

// pushVal is pushKV for st.vals.
func (st *stacks) pushVal(v any) {
	n := len(st.vals)
	if n == cap(st.vals) {
		grown := make([]any, n, 2*n+16)
		copy(grown, st.vals)
		st.vals = grown
	}
	st.vals = st.vals[:n+1]
	st.vals[n] = v
}

// SafeASCII reports, at index c, whether byte c stands for itself inside a JSON
// string: ASCII, not a control character, quote or backslash. The JSON
// scanners of the intake and the schema walker use it too.
var SafeASCII = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func (d *decoder) skipSpace() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// value parses the value at d.i, after optional whitespace.
func (d *decoder) value(st *stacks) (any, error) {
	d.skipSpace()
	if d.i >= len(d.s) {
		return nil, d.eofError()
	}
	switch c := d.s[d.i]; c {
	case '{':
		return d.object(st)
	case '[':
		return d.array(st)
	case '"':
		s, err := d.str()
		if err != nil {
			return nil, err
		}
		return s, nil
	case 't':
		if err := d.literal("true"); err != nil {
			return nil, err
		}
		return true, nil
	case 'f':
		if err := d.literal("false"); err != nil {
			return nil, err
		}
		return false, nil
	case 'n':
		return nil, d.literal("null")
	default:
		if c == '-' || '0' <= c && c <= '9' {
			return d.number()
		}
		return nil, d.charError(d.i, "looking for beginning of value")
	}
}

func (d *decoder) object(st *stacks) (any, error) {
	if d.depth++; d.depth > MaxDecodeDepth {
		return nil, d.depthError()
	}
	d.i++ // '{'
	d.skipSpace()
	if d.i >= len(d.s) {
		return nil, d.eofError()
	}
	if d.s[d.i] == '}' {
		d.i++
		d.depth--
		return map[string]any{}, nil
	}
	base := len(st.kvs)
	for {
		if d.s[d.i] != '"' {
			return nil, d.charError(d.i, "looking for beginning of object key string")
		}
		key, err := d.str()
		if err != nil {
			return nil, err
		}
		d.skipSpace()
		if d.i >= len(d.s) {
			return nil, d.eofError()
		}
		if d.s[d.i] != ':' {
			return nil, d.charError(d.i, "after object key")
		}
		d.i++
		val, err := d.value(st)
		if err != nil {
			return nil, err
		}
		st.pushKV(keyValue{key, val})
		d.skipSpace()
		if d.i >= len(d.s) {
			return nil, d.eofError()
		}
		if c := d.s[d.i]; c == ',' {
			d.i++
			d.skipSpace()
			if d.i >= len(d.s) {
				return nil, d.eofError()
			}
			continue
		} else if c != '}' {
			return nil, d.charError(d.i, "after object key:value pair")
		}
		d.i++
		break
	}
	m := make(map[string]any, len(st.kvs)-base)
	for _, kv := range st.kvs[base:] {
		m[kv.key] = kv.val
	}
	clear(st.kvs[base:])
	st.kvs = st.kvs[:base]
	d.depth--
	return m, nil
}

func (d *decoder) array(st *stacks) (any, error) {
	if d.depth++; d.depth > MaxDecodeDepth {
		return nil, d.depthError()
	}
	d.i++ // '['
	d.skipSpace()
	if d.i >= len(d.s) {
		return nil, d.eofError()
	}
	if d.s[d.i] == ']' {
		d.i++
		d.depth--
		return []any{}, nil
	}
	base := len(st.vals)
	for {
		val, err := d.value(st)
		if err != nil {
			return nil, err
		}
		st.pushVal(val)
		d.skipSpace()
		if d.i >= len(d.s) {
			return nil, d.eofError()
		}
		if c := d.s[d.i]; c == ',' {
			d.i++
			continue
		} else if c != ']' {
			return nil, d.charError(d.i, "after array element")
		}
		d.i++
		break
	}
	a := make([]any, len(st.vals)-base)
	copy(a, st.vals[base:])
	clear(st.vals[base:])
	st.vals = st.vals[:base]
	d.depth--
	return a, nil
}

// literal consumes word (true, false or null), whose first byte is at d.i.
func (d *decoder) literal(word string) error {
	if len(d.s)-d.i >= len(word) && d.s[d.i:d.i+len(word)] == word {
		d.i += len(word)
		return nil
	}
	j := d.i + 1
	for j < len(d.s) && j-d.i < len(word) && d.s[j] == word[j-d.i] {
		j++
	}
	if j >= len(d.s) {
		return d.eofError()
	}
	return d.charError(j, "in literal "+word+" (expecting "+strconv.QuoteRune(rune(word[j-d.i]))+")")
}

// number consumes the number at d.i:
// -? (0 | [1-9][0-9]*) (\.[0-9]+)? ([eE][+-]?[0-9]+)?
func (d *decoder) number() (any, error) {
	s := d.s
	start, i := d.i, d.i
	if s[i] == '-' {
		i++
		if i >= len(s) {
			return nil, d.eofError()
		}
	}
	switch c := s[i]; {
	case c == '0':
		i++
	case '1' <= c && c <= '9':
		i++
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	default:
		return nil, d.charError(i, "in numeric literal")
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) {
			return nil, d.eofError()
		}
		if !isDigit(s[i]) {
			return nil, d.charError(i, "after decimal point in numeric literal")
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) {
			return nil, d.eofError()
		}
		if !isDigit(s[i]) {
			return nil, d.charError(i, "in exponent of numeric literal")
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	d.i = i
	return json.Number(s[start:i]), nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// str consumes the string whose opening quote is at d.i and returns its
// value. Without escapes the value is a substring of the input.
func (d *decoder) str() (string, error) {
	s := d.s
	start := d.i + 1
	i := start
	for {
		for i < len(s) && SafeASCII[s[i]] {
			i++
		}
		if i >= len(s) {
			return "", d.eofError()
		}
		switch c := s[i]; {
		case c == '"':
			d.i = i + 1
			return s[start:i], nil
		case c == '\\':
			return d.strEscaped(start, i)
		case c < 0x20:
			return "", d.charError(i, "in string literal")
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return "", d.utf8Error(i)
			}
			i += size
		}
	}
}

// strEscaped continues str from the first backslash, at i, building the
// value in a buffer.
func (d *decoder) strEscaped(start, i int) (string, error) {
	s := d.s
	var scratch [128]byte
	buf := append(scratch[:0], s[start:i]...)
	for {
		j := i
		for i < len(s) && SafeASCII[s[i]] {
			i++
		}
		buf = append(buf, s[j:i]...)
		if i >= len(s) {
			return "", d.eofError()
		}
		switch c := s[i]; {
		case c == '"':
			d.i = i + 1
			return string(buf), nil
		case c == '\\':
			i++
			if i >= len(s) {
				return "", d.eofError()
			}
			switch e := s[i]; e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, err := d.hex4(i + 1)
				if err != nil {
					return "", err
				}
				i += 4
				if 0xD800 <= r && r < 0xE000 {
					// A high surrogate pairs with an immediately following
					// escaped low one; anything else is unpaired and becomes
					// U+FFFD, as in encoding/json. What follows is then read
					// on its own.
					r2 := rune(-1)
					if r < 0xDC00 && i+6 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
						r2 = hexRune(s[i+3 : i+7])
					}
					if 0xDC00 <= r2 && r2 < 0xE000 {
						r = 0x10000 + (r-0xD800)<<10 + (r2 - 0xDC00)
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				buf = utf8.AppendRune(buf, r)
			default:
				return "", d.charError(i, "in string escape code")
			}
			i++
		case c < 0x20:
			return "", d.charError(i, "in string literal")
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return "", d.utf8Error(i)
			}
			buf = append(buf, s[i:i+size]...)
			i += size
		}
	}
}

// hex4 reads the four hex digits of a \u escape starting at i.
func (d *decoder) hex4(i int) (rune, error) {
	if i+4 <= len(d.s) {
		if r := hexRune(d.s[i : i+4]); r >= 0 {
			return r, nil
		}
	}
	for j := i; j < i+4; j++ {
		if j >= len(d.s) {
			return -1, d.eofError()
		}
		if hexRune(d.s[j:j+1]) < 0 {
			return -1, d.charError(j, `in \u hexadecimal character escape`)
		}
	}
	return -1, d.charError(i, `in \u hexadecimal character escape`) // not reached
}

// hexRune returns the value of the hex digits h, or -1 if one is not a hex
// digit.
func hexRune(h string) rune {
	var r rune
	for k := 0; k < len(h); k++ {
		c := h[k]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

func (d *decoder) eofError() error {
	return &DecodeError{Offset: len(d.s), Msg: "unexpected end of JSON input"}
}

func (d *decoder) depthError() error {
	return &DecodeError{Offset: d.i, Msg: "exceeded maximum nesting depth of " + strconv.Itoa(MaxDecodeDepth)}
}

func (d *decoder) utf8Error(i int) error {
	return &DecodeError{Offset: i, Msg: "invalid UTF-8 byte " + quoteByte(d.s[i]) + " in string literal"}
}

// charError reports the unexpected character at i; context says what was
// expected, e.g. "looking for beginning of value".
func (d *decoder) charError(i int, context string) error {
	var q string
	if r, size := utf8.DecodeRuneInString(d.s[i:]); r == utf8.RuneError && size == 1 {
		q = quoteByte(d.s[i])
	} else {
		q = strconv.QuoteRune(r)
	}
	return &DecodeError{Offset: i, Msg: "invalid character " + q + " " + context}
}

// quoteByte quotes a byte that is not valid UTF-8 on its own, e.g. '\xff'.
func quoteByte(c byte) string {
	return `'\x` + string(hexDigits[c>>4]) + string(hexDigits[c&0xf]) + `'`
}
