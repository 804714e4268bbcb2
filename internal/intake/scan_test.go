package intake

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/eventlogging/eventlogging/internal/capsule"
)

// scanCases are bodies at the edges of JSON, UTF-8 and nesting.
var scanCases = []string{
	`{}`, `[]`, `[ ]`, ` [ {} , [] ] `, `[{},{}]`, `[1,"x",null,true,false]`, `null`, `42`, `-0`, `"s"`,
	``, ` `, `[`, `]`, `{`, `}`, `[,]`, `[1,]`, `[,1]`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{,}`, `{1:2}`, `{"a" 1}`,
	`[1 2]`, `{"a":1 "b":2}`, `[]]`, `[]x`, `{} {}`, `[}`, `{]`, `[{]}`, `[[]`,
	`0`, `01`, `-`, `-01`, `1.`, `.5`, `1.5`, `1e`, `1e+`, `1e5`, `1E-5`, `1.5e+10`, `-1.0e0`, `+1`, `0x10`, `1_000`, `NaN`, `Infinity`,
	`tru`, `true`, `truex`, `[true,false,null]`, `nul`, `nulll`, `fals`, `True`,
	`"\"\\\/\b\f\n\r\t"`, `"\u00e9"`, `"\u00E9"`, `"\u00g9"`, `"\u00e"`, `"\x"`, `"\`, `"abc`, `"a` + "\x00" + `"`, `"a` + "\x1f" + `"`, `"a` + "\x7f" + `"`,
	`"é"`, `"\xff"`, "\"\xc3\"", "\"\xed\xa0\x80\"", "\"\xef\xbf\xbd\"", "\"\xf4\x90\x80\x80\"", "\"\xc0\xaf\"", "[\xff]", "\xef\xbb\xbf{}",
	` [ {"a":"]\"," } , [1,[2]] ,"x\\", 3.5e1 ,{} ] `, `{"schema":"Generic","revision":13,"event":{"a":[1,{"b":[]}]}}`,
	"\t\n\r [ 1 ,\n 2 ] \r\n", "[1]\x00", "{}\v",
}

// checkScan compares scanBody on body, at the depth limit maxDepth, with
// the separate checks it replaces: utf8.Valid, nesting, json.Valid, and
// json.Unmarshal into []json.RawMessage for an array's elements.
func checkScan(t *testing.T, body []byte, maxDepth int) {
	t.Helper()
	top, elems, count, ok := scanBody(body, maxDepth, math.MaxInt, nil)
	want := utf8.Valid(body) && nesting(body) <= maxDepth && json.Valid(body)
	if ok != want {
		t.Fatalf("scanBody(%q, depth %d) ok = %v; utf8.Valid, nesting and json.Valid say %v", body, maxDepth, ok, want)
	}
	if !ok {
		return
	}
	if first := bytes.TrimLeft(body, " \t\n\r"); top != first[0] {
		t.Fatalf("scanBody(%q): top %q, want %q", body, top, first[0])
	}
	if len(elems) != count {
		t.Fatalf("scanBody(%q): %d elements kept of %d counted, with no limit", body, len(elems), count)
	}
	if top != '[' {
		if len(elems) != 0 {
			t.Fatalf("scanBody(%q): %d elements of a body that is no array", body, len(elems))
		}
		return
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatalf("json.Unmarshal(%q): %v", body, err)
	}
	if len(elems) != len(raw) {
		t.Fatalf("scanBody(%q): %d elements, json.Unmarshal finds %d", body, len(elems), len(raw))
	}
	for i := range raw {
		if !bytes.Equal(elems[i], raw[i]) {
			t.Fatalf("scanBody(%q): element %d is %q, json.Unmarshal finds %q", body, i, elems[i], raw[i])
		}
	}
}

func TestScanBody(t *testing.T) {
	for _, c := range scanCases {
		checkScan(t, []byte(c), capsule.MaxDecodeDepth)
	}
	// Nesting at, and one past, the limit; deeper than the 64 containers
	// scanBody keeps without allocating.
	for _, depth := range []int{1, 2, 63, 64, 65, 200, capsule.MaxDecodeDepth, capsule.MaxDecodeDepth + 1} {
		for _, open := range []string{"[", `{"k":[`} {
			var b bytes.Buffer
			closes := make([]string, 0, depth)
			for range depth {
				b.WriteString(open)
				if open == "[" {
					closes = append(closes, "]")
				} else {
					closes = append(closes, "]}")
				}
			}
			for i := len(closes) - 1; i >= 0; i-- {
				b.WriteString(closes[i])
			}
			// nesting stops counting past capsule.MaxDecodeDepth: no
			// limit above it.
			for _, limit := range []int{depth - 1, depth, depth + 1, 2 * depth} {
				checkScan(t, b.Bytes(), min(limit, capsule.MaxDecodeDepth))
			}
			checkScan(t, b.Bytes(), capsule.MaxDecodeDepth)
		}
	}
}

// TestScanBodyElementsAliasBody: the events are sub-slices of the body,
// not copies.
func TestScanBodyElementsAliasBody(t *testing.T) {
	body := []byte(`[ {"a":1} , [2] ]`)
	_, elems, _, ok := scanBody(body, 8, 10, nil)
	if !ok || len(elems) != 2 {
		t.Fatalf("ok %v, %d elements", ok, len(elems))
	}
	body[4] = 'b'
	if string(elems[0]) != `{"b":1}` {
		t.Fatalf("element 0 is %q after the body changed: a copy", elems[0])
	}
}

// FuzzScanBody: on any body, and at small depth limits, scanBody agrees
// with utf8.Valid, nesting and json.Valid, and finds the elements
// json.Unmarshal finds.
func FuzzScanBody(f *testing.F) {
	for _, c := range scanCases {
		f.Add([]byte(c), uint8(0))
	}
	f.Add([]byte(`[[[[[[]]]]]]`), uint8(5))
	f.Fuzz(func(t *testing.T, body []byte, depth uint8) {
		maxDepth := int(depth)
		if maxDepth == 0 || maxDepth > capsule.MaxDecodeDepth {
			maxDepth = capsule.MaxDecodeDepth
		}
		checkScan(t, body, maxDepth)
	})
}

// TestScanBodyCountsPastMaxElems: past maxElems the elements are counted,
// not kept: a body of a million tiny events keeps maxElems of them.
func TestScanBodyCountsPastMaxElems(t *testing.T) {
	const n = 1_000_000
	body := []byte("[" + strings.Repeat("0,", n-1) + "0]")
	_, elems, count, ok := scanBody(body, 8, 1000, nil)
	if !ok || count != n || len(elems) != 1000 {
		t.Fatalf("ok %v, %d counted, %d kept; want true, %d, 1000", ok, count, len(elems), n)
	}
	s := &Server{cfg: Config{MaxBatchEvents: 1000}}
	if _, status, msg := s.split(body, nil); status != http.StatusRequestEntityTooLarge || msg != "1000000 events in one request exceed the limit of 1000" {
		t.Fatalf("split: %d %q", status, msg)
	}
	for _, limit := range []int{0, 1, 2, 3} {
		_, elems, count, ok := scanBody([]byte(`[1, 2 ,3]`), 8, limit, nil)
		if want := min(limit, 3); !ok || count != 3 || len(elems) != want {
			t.Fatalf("limit %d: ok %v, %d counted, %d kept; want 3 and %d", limit, ok, count, len(elems), want)
		}
	}
}

// TestScanBodyAllocations: a single event takes no allocation, a 10-event
// batch one.
func TestScanBodyAllocations(t *testing.T) {
	one := []byte(`{"schema":"Generic","revision":13,"event":{"a":[1,{"b":[]}]}}`)
	ten := []byte("[" + strings.TrimSuffix(strings.Repeat(string(one)+",", 10), ",") + "]")
	for _, tt := range []struct {
		body []byte
		want float64
	}{{one, 0}, {ten, 1}} {
		if got := testing.AllocsPerRun(100, func() { _, _, _, _ = scanBody(tt.body, 8, 1000, nil) }); got != tt.want {
			t.Errorf("%d-byte body: %v allocations, want %v", len(tt.body), got, tt.want)
		}
	}
}
