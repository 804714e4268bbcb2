package capsule

import (
	"bytes"
	"encoding/json"
	"testing"
)

var benchPayload = []byte(`{"event":{"button":"save","page":"Main_Page","count":3,"loggedIn":true,"timing":{"firstPaint":1234.5,"domReady":2345}},"revision":1,"schema":"ButtonClick","webHost":"en.wikipedia.org","wiki":"enwiki"}`)

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
		dec := json.NewDecoder(bytes.NewReader(benchPayload))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			b.Fatal(err)
		}
	}
}
