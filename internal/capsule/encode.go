package capsule

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// AppendValue appends v, a value decoded by encoding/json (with or without
// UseNumber), as compact JSON. Object keys are written in sorted order, as
// encoding/json does, so outputs are reproducible. Values of other types are
// written with encoding/json.
func AppendValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, x)
	case string:
		return AppendString(b, x)
	case json.Number:
		return append(b, x...)
	case float64:
		return appendFloat(b, x)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case map[string]any:
		return appendObject(b, x)
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendValue(b, e)
		}
		return append(b, ']')
	default:
		enc, err := json.Marshal(x)
		if err != nil {
			return append(b, "null"...)
		}
		return append(b, enc...)
	}
}

func appendObject(b []byte, m map[string]any) []byte {
	var stack [16]string
	keys := stack[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, k)
		b = append(b, ':')
		b = AppendValue(b, m[k])
	}
	return append(b, '}')
}

func appendFloat(b []byte, f float64) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return append(b, "null"...)
	}
	// Same choice as encoding/json: plain notation unless very small or large.
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// Clean up e-09 to e-9, as encoding/json does.
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// special8 reports whether some byte of s (eight bytes) is a quote, a
// backslash, a control character or not ASCII.
func special8(s string) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	x := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
	zero := func(v uint64) uint64 { return (v - ones) &^ v & highs }
	return (zero(x^(ones*'"')) | zero(x^(ones*'\\')) | (x-ones*0x20)&^x&highs | x&highs) != 0
}

// AppendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD;
// '<', '>' and '&' are not escaped (the output is not for HTML).
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes at a time while none needs a look: no quote,
		// backslash, control character or non-ASCII byte.
		for i+8 <= len(s) && !special8(s[i:i+8]) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
