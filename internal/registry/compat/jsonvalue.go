package compat

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
)

// toRat converts a JSON number to a rational.
func toRat(v any) (*big.Rat, bool) {
	var s string
	switch v := v.(type) {
	case json.Number:
		s = string(v)
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, false
		}
		return new(big.Rat).SetFloat64(v), true
	case int:
		return new(big.Rat).SetInt64(int64(v)), true
	case int64:
		return new(big.Rat).SetInt64(v), true
	default:
		return nil, false
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}

// jsonEqual is JSON Schema equality: numbers compare by value (1 = 1.0).
func jsonEqual(a, b any) bool {
	if ra, ok := toRat(a); ok {
		rb, ok := toRat(b)
		return ok && ra.Cmp(rb) == 0
	}
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, v := range a {
			bv, ok := bm[k]
			if !ok || !jsonEqual(v, bv) {
				return false
			}
		}
		return true
	case []any:
		bl, ok := b.([]any)
		return ok && slices.EqualFunc(a, bl, jsonEqual)
	}
	return a == b
}

// valueText renders a JSON value compactly.
func valueText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// valuesText renders one value as itself and several as a list.
func valuesText(vs []any) string {
	if len(vs) == 1 {
		return valueText(vs[0])
	}
	return valueList(vs)
}

func valueList(vs []any) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = valueText(v)
	}
	return quoteList(s)
}
