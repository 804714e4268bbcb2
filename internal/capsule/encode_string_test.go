package capsule

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// appendStringPerByte is AppendString as it was before it read eight bytes
// at a time, the reference it is checked against: s as a JSON string,
// invalid UTF-8 as U+FFFD;
// '<', '>' and '&' are not escaped (the output is not for HTML).
func appendStringPerByte(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
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

// TestAppendStringMatchesReference: AppendString writes exactly what the
// byte-at-a-time version wrote, on random strings mixing plain runs with
// every byte that needs a look.
func TestAppendStringMatchesReference(t *testing.T) {
	pieces := []string{"plain text run", "a", "\"", "\\", "\n", "\x01", "\x7f", "é", "日本", "\u2028", "\u2029", "\xff", "\xe2\x80", "😀", "<&>", "12345678"}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 20000 {
		var s []byte
		for range rng.IntN(12) {
			s = append(s, pieces[rng.IntN(len(pieces))]...)
		}
		if got, want := AppendString(nil, string(s)), appendStringPerByte(nil, string(s)); !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("Mozilla/5.0 (X11; Linux x86_64) \"quoted\" \\ \u2028 \xff")
	f.Fuzz(func(t *testing.T, s string) {
		got := AppendString(nil, s)
		if want := appendStringPerByte(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
		if !utf8.Valid(got) {
			t.Fatalf("AppendString(%q) = %q: not UTF-8", s, got)
		}
	})
}

// BenchmarkAppendStringUserAgent writes a user agent of the standard
// workload (126 bytes), the longest string a capsule usually holds; the
// PerByte variant is the reference implementation, for comparison.
func BenchmarkAppendStringUserAgent(b *testing.B) {
	const ua = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_14_6) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/77.0.3865.120 Safari/537.36"
	buf := make([]byte, 0, 256)
	b.Run("AppendString", func(b *testing.B) {
		for b.Loop() {
			buf = AppendString(buf[:0], ua)
		}
	})
	b.Run("PerByte", func(b *testing.B) {
		for b.Loop() {
			buf = appendStringPerByte(buf[:0], ua)
		}
	})
}
