package columns

import (
	"encoding/json"
	"testing"
)

func TestIntFloat(t *testing.T) {
	for _, tc := range []struct {
		v     any
		n     int64
		isInt bool
	}{
		{json.Number("3"), 3, true}, {json.Number("3.0"), 3, true}, {json.Number("3e2"), 300, true},
		{json.Number("3.5"), 0, false}, {json.Number("1e30"), 0, false}, {float64(7), 7, true},
		{int64(-2), -2, true}, {2, 2, true}, {"3", 0, false}, {true, 0, false},
	} {
		n, ok := Int(tc.v)
		if ok != tc.isInt || n != tc.n {
			t.Errorf("Int(%#v) = %d, %v; want %d, %v", tc.v, n, ok, tc.n, tc.isInt)
		}
	}
	if f, ok := Float(json.Number("2.5")); !ok || f != 2.5 {
		t.Errorf("Float(2.5) = %v, %v", f, ok)
	}
	if _, ok := Float("x"); ok {
		t.Error(`Float("x") succeeded`)
	}
}

func TestFitError(t *testing.T) {
	e := Misfit(Integer, "abc", "Parquet column")
	e.Path = append(e.Path, "count", "event")
	if got, want := e.Error(), "value at /event/count does not fit its Parquet column: got string, want integer"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	e = Misfit(JSON, map[string]any{}, "column")
	e.WantName = "timestamp"
	if got, want := e.Error(), "value at / does not fit its column: got object, want timestamp"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
