package lineformat

import (
	"bytes"
	"fmt"
	"testing"
)

// beaconCase returns the varnishkafka TAB line of parser.json and its format.
func beaconCase(b *testing.B) (format string, line []byte) {
	b.Helper()
	var vec parserVectors
	loadReference(b, "parser.json", &vec)
	for _, tc := range vec.Positive {
		if tc.Name == "varnishkafka_tab_line_quoted_ua" {
			return tc.Format, []byte(tc.Raw)
		}
	}
	b.Fatal("parser.json has no varnishkafka_tab_line_quoted_ua case")
	return "", nil
}

func benchParse(b *testing.B, f *Format, line []byte) {
	b.Helper()
	var out Fields
	if err := f.Parse(line, &out); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if err := f.Parse(line, &out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseBeacon parses the production-shaped varnishkafka line: the
// string fields repeat from line to line, so only the seqId digits are a
// new string.
func BenchmarkParseBeacon(b *testing.B) {
	format, line := beaconCase(b)
	f, err := Compile(format)
	if err != nil {
		b.Fatal(err)
	}
	if f.re != nil {
		b.Fatal("beacon format does not use the fast matcher")
	}
	benchParse(b, f, line)
}

// BenchmarkParseBeaconVarying parses beacon lines whose seqId and client
// IP change from line to line, as in production: two small strings a line.
func BenchmarkParseBeaconVarying(b *testing.B) {
	format, line := beaconCase(b)
	f, err := Compile(format)
	if err != nil {
		b.Fatal(err)
	}
	lines := make([][]byte, 1024)
	for i := range lines {
		l := bytes.Replace(line, []byte("\t4724275\t"), fmt.Appendf(nil, "\t%d\t", 4724275+i), 1)
		lines[i] = bytes.Replace(l, []byte("198.51.100.7"), fmt.Appendf(nil, "198.51.%d.%d", i/256, i%256), 1)
	}
	var out Fields
	b.ReportAllocs()
	b.SetBytes(int64(len(line)))
	i := 0
	for b.Loop() {
		if err := f.Parse(lines[i%len(lines)], &out); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkParseBeaconRegexp parses the same line with the regexp matcher,
// for comparison.
func BenchmarkParseBeaconRegexp(b *testing.B) {
	format, line := beaconCase(b)
	f, err := Compile(format)
	if err != nil {
		b.Fatal(err)
	}
	re, err := withRegexp(f)
	if err != nil {
		b.Fatal(err)
	}
	benchParse(b, re, line)
}

func BenchmarkDecodeQuery(b *testing.B) {
	_, line := beaconCase(b)
	q := line[:indexByte(line, '\t')]
	buf := make([]byte, 0, len(q))
	b.ReportAllocs()
	b.SetBytes(int64(len(q)))
	for b.Loop() {
		var err error
		if buf, err = DecodeQuery(buf[:0], q); err != nil {
			b.Fatal(err)
		}
	}
}

func indexByte(b []byte, c byte) int {
	for i := range b {
		if b[i] == c {
			return i
		}
	}
	return len(b)
}
