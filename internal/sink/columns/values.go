package columns

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Int converts a JSON integer (json.Number "3", "3.0" or "3e2", or a Go
// number) to int64; false when it is not a whole number in range.
func Int(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		return IntText(string(x))
	case float64:
		return floatToInt(x)
	case int64:
		return x, true
	case int:
		return int64(x), true
	}
	return 0, false
}

// IntText is Int of the number text t (a json.Number's).
func IntText(t string) (int64, bool) {
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return 0, false
	}
	return floatToInt(f)
}

// FloatText is Float of the number text t (a json.Number's).
func FloatText(t string) (float64, bool) {
	f, err := strconv.ParseFloat(t, 64)
	return f, err == nil
}

func floatToInt(f float64) (int64, bool) {
	if f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, false
	}
	return int64(f), true
}

// Float converts a JSON number to float64.
func Float(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		return FloatText(string(x))
	case float64:
		return x, true
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	}
	return 0, false
}

// FitError is a value that does not fit its column: the record is poison,
// with this as the reason.
type FitError struct {
	// Path is the member path of the value, innermost first (callers
	// append the enclosing names as the error goes up).
	Path []string
	Want Kind
	Got  string // the value's JSON type
	// Column names what the column belongs to in the message ("Parquet
	// column", "column").
	Column string
	// WantName, if set, names the wanted type instead of Want (a sink's
	// own column type, such as a timestamp).
	WantName string
}

func (e *FitError) Error() string {
	p := slices.Clone(e.Path)
	slices.Reverse(p)
	want := e.WantName
	if want == "" && int(e.Want) < len(KindNames) {
		want = KindNames[e.Want]
	}
	return fmt.Sprintf("value at /%s does not fit its %s: got %s, want %s", strings.Join(p, "/"), e.Column, e.Got, want)
}

// Misfit is the FitError of value v for a column of kind want.
func Misfit(want Kind, v any, column string) *FitError {
	got := "number"
	switch v.(type) {
	case string:
		got = "string"
	case bool:
		got = "boolean"
	case map[string]any:
		got = "object"
	case []any:
		got = "array"
	}
	return &FitError{Want: want, Got: got, Column: column}
}
