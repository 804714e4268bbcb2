package capsule

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// benchPayload is a typical event capsule as the processor receives it.
var benchPayload = []byte(`{"event":{"button":"save","page":"Main_Page","count":3,"loggedIn":true,"timing":{"firstPaint":1234.5,"domReady":2345}},"revision":1,"schema":"ButtonClick","webHost":"en.wikipedia.org","wiki":"enwiki"}`)

// decodeCases are inputs with whether Decode must accept them.
var decodeCases = []struct {
	in    string
	valid bool
}{
	// Literals and whitespace.
	{`null`, true},
	{`true`, true},
	{`false`, true},
	{" \t\r\n null \n", true},
	{``, false},
	{` `, false},
	{`nul`, false},
	{`nulL`, false},
	{`tru`, false},
	{`True`, false},
	{`fals`, false},
	{`falsE`, false},
	{`nullx`, false},
	{`NaN`, false},
	{`Infinity`, false},
	{`-Infinity`, false},
	{`undefined`, false},
	{"\xef\xbb\xbfnull", false}, // BOM
	{"null\x00", false},
	{"\vnull", false},
	{"\fnull", false},
	{"\u00a0null", false},

	// Numbers, kept verbatim.
	{`0`, true},
	{`-0`, true},
	{`1.0`, true},
	{`1e3`, true},
	{`1E+3`, true},
	{`-1.5e-10`, true},
	{`0.000`, true},
	{`0e0`, true},
	{`123456789012345678901234567890`, true},
	{`1e999999`, true},
	{`[0,-0,1.0,1e3]`, true},
	{`+1`, false},
	{`.5`, false},
	{`1.`, false},
	{`1.e3`, false},
	{`01`, false},
	{`-01`, false},
	{`00`, false},
	{`1e`, false},
	{`1e+`, false},
	{`1e+-1`, false},
	{`-`, false},
	{`--1`, false},
	{`- 1`, false},
	{`0x10`, false},
	{`1 2`, false},
	{`1_000`, false},

	// Strings.
	{`""`, true},
	{`"abc"`, true},
	{`"\"\\\/\b\f\n\r\t"`, true},
	{`"\u0000"`, true},
	{`"\u00e9\u4E2D"`, true},
	{`"\ud83d\ude00"`, true},          // surrogate pair
	{`"\uDBFF\uDFFF"`, true},          // the last pair
	{`"\ud83d"`, true},                // unpaired high: U+FFFD
	{`"\ude00"`, true},                // unpaired low: U+FFFD
	{`"\ud83dx"`, true},               // high then a plain byte
	{`"\ud83d\u0041"`, true},          // high then a non-surrogate escape
	{`"\ud83d\n"`, true},              // high then another escape
	{`"\ud83d\ud83d\ude00"`, true},    // high, then a pair
	{`"\ude00\ud83d"`, true},          // low then high
	{`"x\ud83d\ude00y\u0041z"`, true}, // mixed
	{`"\uFFFD\u2028\u2029\u007f"`, true},
	{"\"h\u00e9llo \u2606 \U0001F600\"", true}, // raw UTF-8
	{"\"\u2028\u2029\ufffd\x7f\"", true},
	{`"` + strings.Repeat(`ab\n`, 100) + `"`, true}, // escapes past the scratch size
	{`"` + strings.Repeat("é", 100) + `\t"`, true},
	{`'a'`, false},
	{`"abc`, false},
	{`"abc\"`, false},
	{`"\`, false},
	{`"\x"`, false},
	{`"\'"`, false},
	{`"\U0041"`, false},
	{`"\u12"`, false},
	{`"\u12G4"`, false},
	{`"\u`, false},
	{`"\ud83d\u12"`, false},
	{`"\ud83d\`, false},
	{`"\ud83d\x"`, false},
	{"\"a\tb\"", false},
	{"\"a\nb\"", false},
	{"\"a\x00b\"", false},
	{"\"a\x1fb\"", false},
	{"\"a\\n\x1fb\"", false},
	{"\"\xff\"", false},         // invalid UTF-8: json.Valid accepts, Decode must not
	{"\"a\\n\xff\"", false},     // same, after an escape
	{"\"\xed\xa0\x80\"", false}, // UTF-8-encoded surrogate
	{"\"\xc0\xaf\"", false},     // overlong
	{"\"\xe4\xb8\"", false},     // truncated
	{"\"\xe4\xb8", false},
	{"\"\xf4\x90\x80\x80\"", false}, // above U+10FFFF
	{"\"\x80\"", false},             // continuation byte alone
	{"{\"k\xff\":1}", false},

	// Arrays and objects.
	{`[]`, true},
	{`{}`, true},
	{` [ ] `, true},
	{` { } `, true},
	{`[1,"a",null,true,false,[],{}]`, true},
	{`{"a":1,"a":2}`, true}, // the last wins
	{`{"a":{"b":1},"a":[2]}`, true},
	{`{"a":{"b":[{"c":null}]}}`, true},
	{`{"":""}`, true},
	{`[ 1 , 2 ]`, true},
	{"{ \"a\" : 1 ,\n\t\"b\" : 2 }", true},
	{`{"a\nb":1,"\u00e9":2,"é":3}`, true},
	{`[` + strings.Repeat(`1,`, 99) + `1]`, true},
	{`[` + strings.Repeat(`[1,[2,{"a":[3]}]],`, 40) + `[]]`, true},
	{`{` + strings.Repeat(`"k":1,`, 99) + `"z":{"y":[{}]}}`, true},
	{string(benchPayload), true},
	{`[1,]`, false},
	{`[,1]`, false},
	{`[1,,2]`, false},
	{`[1 2]`, false},
	{`[`, false},
	{`[1`, false},
	{`[1,`, false},
	{`]`, false},
	{`[}`, false},
	{`{"a":1,}`, false},
	{`{,}`, false},
	{`{"a"}`, false},
	{`{"a":}`, false},
	{`{"a" 1}`, false},
	{`{"a":1 "b":2}`, false},
	{`{a:1}`, false},
	{`{'a':1}`, false},
	{`{1:1}`, false},
	{`{`, false},
	{`{"a"`, false},
	{`{"a":`, false},
	{`{"a":1`, false},
	{`{"a":1,`, false},
	{`}`, false},
	{`{]`, false},
	{`{"a":1}}`, false},
	{`[1]x`, false},
	{`[1][2]`, false},
	{`"\u00e9"garbage`, false},
}

// decodeStdlib decodes b as the processor used to: encoding/json.Decoder
// with UseNumber.
func decodeStdlib(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// nesting returns the deepest nesting of arrays and objects in b; exact for
// valid JSON.
func nesting(b []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// checkDecode checks Decode(in) against encoding/json: it succeeds exactly
// when json.Valid and utf8.Valid accept in and in nests no deeper than
// MaxDecodeDepth; then its value is encoding/json's and survives a round trip
// through AppendValue; else its error is a *DecodeError with a sane offset
// and, for ASCII input, encoding/json's message. It reports whether Decode
// succeeded.
func checkDecode(t *testing.T, in []byte) bool {
	t.Helper()
	got, err := Decode(in)
	tooDeep := nesting(in) > MaxDecodeDepth
	want := !tooDeep && json.Valid(in) && utf8.Valid(in)
	if (err == nil) != want {
		t.Fatalf("Decode(%q): error %v; want success %v (json.Valid %v, utf8.Valid %v, nesting %d)",
			in, err, want, json.Valid(in), utf8.Valid(in), nesting(in))
	}
	if err != nil {
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Fatalf("Decode(%q): error %T %v, want *DecodeError", in, err, err)
		}
		if de.Offset < 0 || de.Offset > len(in) || de.Msg == "" {
			t.Fatalf("Decode(%q): bad error %+v", in, de)
		}
		if tooDeep || !isASCII(in) {
			return false
		}
		// Same message and place as encoding/json, whose offset counts the
		// offending byte as read.
		var se *json.SyntaxError
		if serr := json.Unmarshal(in, new(any)); !errors.As(serr, &se) {
			t.Fatalf("Decode(%q): %v, but encoding/json says %v", in, err, serr)
		}
		stdMsg, stdOffset := se.Error(), int(se.Offset)-1
		if de.Offset == len(in) {
			// At the end of the input encoding/json may report a space,
			// the byte its scanner feeds itself there.
			stdOffset++
			if strings.HasPrefix(stdMsg, "invalid character ' ' ") {
				stdMsg = "unexpected end of JSON input"
			}
		}
		if de.Msg != stdMsg || de.Offset != stdOffset {
			t.Fatalf("Decode(%q): %v, encoding/json: %v at its offset %d", in, err, se, se.Offset)
		}
		return false
	}
	std, serr := decodeStdlib(in)
	if serr != nil {
		t.Fatalf("encoding/json rejects %q: %v", in, serr)
	}
	if !reflect.DeepEqual(got, std) {
		t.Fatalf("Decode(%q)\n got %#v\nwant %#v", in, got, std)
	}
	back, err := Decode(AppendValue(nil, got))
	if err != nil {
		t.Fatalf("Decode(AppendValue(Decode(%q))): %v", in, err)
	}
	if !reflect.DeepEqual(back, got) {
		t.Fatalf("round trip of %q\n got %#v\nwant %#v", in, back, got)
	}
	return true
}

func TestDecode(t *testing.T) {
	for i, c := range decodeCases {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			if ok := checkDecode(t, []byte(c.in)); ok != c.valid {
				t.Errorf("Decode(%q) succeeded %v, want %v", c.in, ok, c.valid)
			}
		})
	}
}

func TestDecodeValues(t *testing.T) {
	cases := []struct {
		in   string
		want any
	}{
		{`-0`, json.Number("-0")},
		{`1.0`, json.Number("1.0")},
		{`1E+3`, json.Number("1E+3")},
		{`{"a":1,"a":{"b":2}}`, map[string]any{"a": map[string]any{"b": json.Number("2")}}},
		{`[]`, []any{}},
		{`{}`, map[string]any{}},
		{`"\ud83d\ude00\ud83d\u0041\ude00"`, "\U0001F600\uFFFDA\uFFFD"},
		{`"\u0000\/"`, "\x00/"},
		{`[null,true,"x"]`, []any{nil, true, "x"}},
	}
	for _, c := range cases {
		got, err := Decode([]byte(c.in))
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Decode(%s) = %#v, %v; want %#v", c.in, got, err, c.want)
		}
	}
}

func TestDecodeErrorMessages(t *testing.T) {
	cases := []struct{ in, want string }{
		{``, `unexpected end of JSON input at offset 0`},
		{`{"event": x}`, `invalid character 'x' looking for beginning of value at offset 10`},
		{`{"a":1,}`, `invalid character '}' looking for beginning of object key string at offset 7`},
		{`[1,]`, `invalid character ']' looking for beginning of value at offset 3`},
		{`{"a" 1}`, `invalid character '1' after object key at offset 5`},
		{`{"a":1 "b":2}`, `invalid character '"' after object key:value pair at offset 7`},
		{`[1 2]`, `invalid character '2' after array element at offset 3`},
		{`01`, `invalid character '1' after top-level value at offset 1`},
		{`1.x`, `invalid character 'x' after decimal point in numeric literal at offset 2`},
		{`1ex`, `invalid character 'x' in exponent of numeric literal at offset 2`},
		{`-x`, `invalid character 'x' in numeric literal at offset 1`},
		{`trUe`, `invalid character 'U' in literal true (expecting 'u') at offset 2`},
		{`{"a":tru`, `unexpected end of JSON input at offset 8`},
		{"\"a\tb\"", `invalid character '\t' in string literal at offset 2`},
		{`"a\x"`, `invalid character 'x' in string escape code at offset 3`},
		{`"\u12G4"`, `invalid character 'G' in \u hexadecimal character escape at offset 5`},
		{"{\"page\":\"caf\xe9\"}", `invalid UTF-8 byte '\xe9' in string literal at offset 12`},
		{"\u00e9", `invalid character 'é' looking for beginning of value at offset 0`},
		{"[\xff]", `invalid character '\xff' looking for beginning of value at offset 1`},
		{strings.Repeat(`[`, 10000), `exceeded maximum nesting depth of 512 at offset 512`},
		{strings.Repeat(`{"a":`, 600), `exceeded maximum nesting depth of 512 at offset 2560`},
	}
	for _, c := range cases {
		_, err := Decode([]byte(c.in))
		if err == nil || err.Error() != c.want {
			t.Errorf("Decode(%.40q): error %v, want %s", c.in, err, c.want)
		}
	}
}

func TestDecodeDepth(t *testing.T) {
	for _, open := range []string{`[`, `{"k":`} {
		closing := map[string]string{`[`: `]`, `{"k":`: `}`}[open]
		for _, depth := range []int{MaxDecodeDepth - 1, MaxDecodeDepth, MaxDecodeDepth + 1, 100000} {
			in := []byte(strings.Repeat(open, depth) + `1` + strings.Repeat(closing, depth))
			_, err := Decode(in)
			if ok := depth <= MaxDecodeDepth; (err == nil) != ok {
				t.Errorf("%s nested %d deep: error %v, want success %v", open, depth, err, ok)
			}
			if depth <= MaxDecodeDepth {
				checkDecode(t, in)
			}
		}
	}
}

// TestDecodeDoesNotAlias checks that the result does not share memory with
// the input, which the caller may reuse.
func TestDecodeDoesNotAlias(t *testing.T) {
	in := []byte(`{"key":"value","n":12,"a":["x"]}`)
	got, err := Decode(in)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i] = 'X'
	}
	want := map[string]any{"key": "value", "n": json.Number("12"), "a": []any{"x"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after overwriting the input: got %#v, want %#v", got, want)
	}
}

func TestDecodeRoundTripAppendValue(t *testing.T) {
	values := []any{
		nil, true, false, "", "plain", json.Number("-0"), json.Number("1.0"), json.Number("1e3"),
		json.Number("12345678901234567890"),
		"quote\" backslash\\ slash/ \b\f\n\r\t \x00\x01\x1f \x7f",
		"h\u00e9llo \u2606 \U0001F600 \u2028\u2029 \ufffd <>&",
		[]any{}, map[string]any{},
		[]any{nil, true, json.Number("2"), "s", []any{[]any{}}, map[string]any{"": ""}},
		map[string]any{
			"event":  map[string]any{"button": "save", "count": json.Number("3"), "timing": map[string]any{"firstPaint": json.Number("1234.5")}},
			"schema": "ButtonClick", "a\"b": []any{json.Number("-1.5e-10"), false, nil},
			"\U0001F600": "\ud7ff\ue000",
		},
	}
	for _, v := range values {
		enc := AppendValue(nil, v)
		got, err := Decode(enc)
		if err != nil {
			t.Errorf("Decode(%s): %v", enc, err)
			continue
		}
		if !reflect.DeepEqual(got, v) {
			t.Errorf("Decode(%s) = %#v, want %#v", enc, got, v)
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, c := range decodeCases {
		f.Add([]byte(c.in))
	}
	f.Add(bytes.Repeat([]byte(`[`), MaxDecodeDepth+1))
	f.Fuzz(func(t *testing.T, in []byte) {
		checkDecode(t, in)
	})
}

// TestFuzzCorpusPresent keeps the committed seed corpus from going missing.
func TestFuzzCorpusPresent(t *testing.T) {
	files, err := os.ReadDir(filepath.Join("testdata", "fuzz", "FuzzDecode"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no committed seed corpus for FuzzDecode: %v", err)
	}
}

func BenchmarkDecode(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchPayload)))
	for b.Loop() {
		if _, err := Decode(benchPayload); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeStdlib(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchPayload)))
	for b.Loop() {
		if _, err := decodeStdlib(benchPayload); err != nil {
			b.Fatal(err)
		}
	}
}
