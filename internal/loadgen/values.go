package loadgen

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/eventlogging/eventlogging/internal/schema"
)

// valueGen appends one random JSON value that is valid against the
// subschema it was built from.
type valueGen interface {
	appendValue(dst []byte, r *rand.Rand) []byte
	// allowed lists the JSON types the subschema allows; nil when it
	// allows any type.
	allowed() []string
}

// errUnsupported marks subschemas whose values the generator cannot make.
type errUnsupported struct{ path, why string }

func (e *errUnsupported) Error() string {
	p := e.path
	if p == "" {
		p = "/"
	}
	return p + ": " + e.why
}

// annotations are keywords that never constrain a value.
var annotations = map[string]bool{
	"$schema": true, "$id": true, "$comment": true, "title": true, "description": true,
	"default": true, "examples": true, "readOnly": true, "writeOnly": true, "deprecated": true,
	"$defs": true, "definitions": true, "contentMediaType": true, "contentEncoding": true,
}

// handled are the constraining keywords the generator honours.
var handled = map[string]bool{
	"type": true, "enum": true, "const": true, "properties": true, "required": true,
	"additionalProperties": true, "unevaluatedProperties": true, "items": true,
	"minItems": true, "maxItems": true, "minLength": true, "maxLength": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true,
	"format": true,
}

// buildValue makes the generator of subschema s found at path (a JSON
// pointer into the normalised document).
func buildValue(s map[string]any, path string) (valueGen, error) {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !annotations[k] && !handled[k] {
			return nil, &errUnsupported{path, fmt.Sprintf("keyword %q is not supported by the generator", k)}
		}
	}
	types, err := typeList(s["type"], path)
	if err != nil {
		return nil, err
	}
	if c, ok := s["const"]; ok {
		return enumOf([]any{c}, types, path)
	}
	if e, ok := s["enum"]; ok {
		list, ok := e.([]any)
		if !ok || len(list) == 0 {
			return nil, &errUnsupported{path, "enum is not a non-empty array"}
		}
		return enumOf(list, types, path)
	}
	if types == nil {
		if _, ok := s["properties"]; ok {
			types = []string{"object"}
		} else {
			types = nil // any: a string will do
		}
	}
	pick := "string"
	if len(types) > 0 {
		// The first non-null type; null only when nothing else is allowed.
		pick = types[0]
		for _, t := range types {
			if t != "null" {
				pick = t
				break
			}
		}
	}
	var g valueGen
	switch pick {
	case "string":
		g, err = buildString(s, path)
	case "integer":
		g, err = buildInteger(s, path)
	case "number":
		g, err = buildNumber(s, path)
	case "boolean":
		g = boolGen{}
	case "null":
		g = literalGen("null")
	case "object":
		g, err = buildObject(s, path)
	case "array":
		g, err = buildArray(s, path)
	default:
		return nil, &errUnsupported{path, fmt.Sprintf("type %q", pick)}
	}
	if err != nil {
		return nil, err
	}
	return withTypes{g, types}, nil
}

func typeList(t any, path string) ([]string, error) {
	switch t := t.(type) {
	case nil:
		return nil, nil
	case string:
		return []string{t}, nil
	case []any:
		out := make([]string, 0, len(t))
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil, &errUnsupported{path, "type list holds a non-string"}
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, &errUnsupported{path, "type is neither a string nor a list"}
}

// withTypes attaches the declared types to a generator.
type withTypes struct {
	g     valueGen
	types []string
}

func (w withTypes) appendValue(dst []byte, r *rand.Rand) []byte { return w.g.appendValue(dst, r) }
func (w withTypes) allowed() []string                           { return w.types }

type literalGen string

func (l literalGen) appendValue(dst []byte, _ *rand.Rand) []byte { return append(dst, l...) }
func (literalGen) allowed() []string                             { return []string{"null"} }

type boolGen struct{}

func (boolGen) appendValue(dst []byte, r *rand.Rand) []byte {
	return strconv.AppendBool(dst, r.IntN(2) == 1)
}
func (boolGen) allowed() []string { return []string{"boolean"} }

// enumGen picks one of the allowed values, pre-encoded.
type enumGen struct {
	values [][]byte
	raw    []any
	types  []string
}

func enumOf(list []any, types []string, path string) (valueGen, error) {
	g := &enumGen{types: types}
	for _, v := range list {
		if types != nil && !slices.Contains(types, schema.JSONKind(v)) && (schema.JSONKind(v) != "integer" || !slices.Contains(types, "number")) {
			continue // the type forbids this value: it is never valid
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, &errUnsupported{path, "enum value does not encode: " + err.Error()}
		}
		g.values = append(g.values, b)
		g.raw = append(g.raw, v)
	}
	if len(g.values) == 0 {
		return nil, &errUnsupported{path, "no enum value satisfies the type"}
	}
	return g, nil
}

func (e *enumGen) appendValue(dst []byte, r *rand.Rand) []byte {
	return append(dst, e.values[r.IntN(len(e.values))]...)
}
func (e *enumGen) allowed() []string { return e.types }

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

func intKeyword(s map[string]any, k string, path string) (int, bool, error) {
	v, ok := s[k]
	if !ok {
		return 0, false, nil
	}
	f, isNum := number(v)
	if !isNum || f < 0 || f != math.Trunc(f) || f > 1<<30 {
		return 0, false, &errUnsupported{path, k + " is not a non-negative integer"}
	}
	return int(f), true, nil
}

const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// stringGen makes ASCII strings (letters and digits, so they need no JSON
// or URL escaping) or values of a format.
type stringGen struct {
	minLen, maxLen int // maxLen < 0: unbounded
	format         func(dst []byte, r *rand.Rand) []byte
}

// formats the generator can make valid values for.
var formats = map[string]func(dst []byte, r *rand.Rand) []byte{
	"date-time": func(dst []byte, r *rand.Rand) []byte {
		t := time.Now().UTC().Add(-time.Duration(r.IntN(86400)) * time.Second)
		return t.AppendFormat(dst, "2006-01-02T15:04:05Z")
	},
	"date": func(dst []byte, r *rand.Rand) []byte {
		return time.Now().UTC().AddDate(0, 0, -r.IntN(365)).AppendFormat(dst, "2006-01-02")
	},
	"time": func(dst []byte, r *rand.Rand) []byte {
		return fmt.Appendf(dst, "%02d:%02d:%02dZ", r.IntN(24), r.IntN(60), r.IntN(60))
	},
	"uri": func(dst []byte, r *rand.Rand) []byte {
		return appendRandom(append(dst, "https://example.org/wiki/"...), r, 8)
	},
	"uri-reference": func(dst []byte, r *rand.Rand) []byte { return appendRandom(append(dst, "/wiki/"...), r, 8) },
	"iri": func(dst []byte, r *rand.Rand) []byte {
		return appendRandom(append(dst, "https://example.org/wiki/"...), r, 8)
	},
	"email":    func(dst []byte, r *rand.Rand) []byte { return append(appendRandom(dst, r, 8), "@example.org"...) },
	"hostname": func(dst []byte, r *rand.Rand) []byte { return append(appendRandom(dst, r, 8), ".example.org"...) },
	"ipv4":     func(dst []byte, r *rand.Rand) []byte { return fmt.Appendf(dst, "192.0.2.%d", r.IntN(256)) },
	"ipv6":     func(dst []byte, r *rand.Rand) []byte { return fmt.Appendf(dst, "2001:db8::%x", r.IntN(65536)) },
	"uuid": func(dst []byte, r *rand.Rand) []byte {
		return fmt.Appendf(dst, "%08x-%04x-4%03x-8%03x-%012x", r.Uint32(), r.IntN(1<<16), r.IntN(1<<12), r.IntN(1<<12), r.Int64N(1<<48))
	},
}

func buildString(s map[string]any, path string) (valueGen, error) {
	g := &stringGen{maxLen: -1}
	var err error
	var ok bool
	if g.minLen, _, err = intKeyword(s, "minLength", path); err != nil {
		return nil, err
	}
	var maxLen int
	if maxLen, ok, err = intKeyword(s, "maxLength", path); err != nil {
		return nil, err
	} else if ok {
		g.maxLen = maxLen
		if maxLen < g.minLen {
			return nil, &errUnsupported{path, "maxLength below minLength"}
		}
	}
	if f, ok := s["format"].(string); ok {
		fn, known := formats[f]
		if !known {
			return nil, &errUnsupported{path, fmt.Sprintf("format %q", f)}
		}
		g.format = fn
	}
	return g, nil
}

func (g *stringGen) appendValue(dst []byte, r *rand.Rand) []byte {
	dst = append(dst, '"')
	if g.format != nil {
		dst = g.format(dst, r)
	} else {
		lo := max(g.minLen, 4)
		hi := lo + 12
		if g.maxLen >= 0 {
			lo = min(lo, g.maxLen)
			hi = min(hi, g.maxLen)
		}
		dst = appendRandom(dst, r, lo+r.IntN(hi-lo+1))
	}
	return append(dst, '"')
}

func (g *stringGen) allowed() []string { return []string{"string"} }

// padLength clamps a wanted padding length to the property's bounds.
func (g *stringGen) padLength(n int) int {
	n = max(n, g.minLen)
	if g.maxLen >= 0 {
		n = min(n, g.maxLen)
	}
	return n
}

func appendRandom(dst []byte, r *rand.Rand, n int) []byte {
	for range n {
		dst = append(dst, alphabet[r.IntN(len(alphabet))])
	}
	return dst
}

// intGen makes integers in [lo, hi].
type intGen struct{ lo, hi int64 }

const defaultSpan = 100_000

func bounds(s map[string]any, path string) (lo, hi float64, loSet, hiSet, loExcl, hiExcl bool, err error) {
	lo, hi = math.Inf(-1), math.Inf(1)
	for _, k := range []string{"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"} {
		v, ok := s[k]
		if !ok {
			continue
		}
		f, isNum := number(v)
		if !isNum {
			return 0, 0, false, false, false, false, &errUnsupported{path, k + " is not a number"}
		}
		switch k {
		case "minimum":
			if !loSet || f > lo {
				lo, loSet, loExcl = f, true, false
			}
		case "exclusiveMinimum":
			if !loSet || f >= lo {
				lo, loSet, loExcl = f, true, true
			}
		case "maximum":
			if !hiSet || f < hi {
				hi, hiSet, hiExcl = f, true, false
			}
		case "exclusiveMaximum":
			if !hiSet || f <= hi {
				hi, hiSet, hiExcl = f, true, true
			}
		}
	}
	return lo, hi, loSet, hiSet, loExcl, hiExcl, nil
}

// maxSafe keeps generated integers exactly representable as float64.
const maxSafe = 1 << 53

func buildInteger(s map[string]any, path string) (valueGen, error) {
	lo, hi, loSet, hiSet, loExcl, hiExcl, err := bounds(s, path)
	if err != nil {
		return nil, err
	}
	if loSet {
		if loExcl {
			lo = math.Floor(lo) + 1
		} else {
			lo = math.Ceil(lo)
		}
	}
	if hiSet {
		if hiExcl {
			hi = math.Ceil(hi) - 1
		} else {
			hi = math.Floor(hi)
		}
	}
	switch {
	case !loSet && !hiSet:
		lo, hi = 0, defaultSpan
	case !hiSet:
		hi = lo + defaultSpan
	case !loSet:
		lo = hi - defaultSpan
	}
	lo, hi = max(lo, -maxSafe), min(hi, maxSafe)
	if lo > hi {
		return nil, &errUnsupported{path, "no integer within minimum and maximum"}
	}
	return intGen{int64(lo), int64(hi)}, nil
}

func (g intGen) appendValue(dst []byte, r *rand.Rand) []byte {
	return strconv.AppendInt(dst, g.lo+r.Int64N(g.hi-g.lo+1), 10)
}
func (intGen) allowed() []string { return []string{"integer"} }

// numberGen makes numbers in (or on) [lo, hi] with three decimals at most.
type numberGen struct {
	lo, hi         float64
	loExcl, hiExcl bool
}

func buildNumber(s map[string]any, path string) (valueGen, error) {
	lo, hi, loSet, hiSet, loExcl, hiExcl, err := bounds(s, path)
	if err != nil {
		return nil, err
	}
	switch {
	case !loSet && !hiSet:
		lo, hi = 0, 10_000
	case !hiSet:
		hi = lo + 10_000
	case !loSet:
		lo = hi - 10_000
	}
	if lo > hi || (lo == hi && (loExcl || hiExcl)) {
		return nil, &errUnsupported{path, "no number within minimum and maximum"}
	}
	return numberGen{lo, hi, loExcl, hiExcl}, nil
}

func (g numberGen) appendValue(dst []byte, r *rand.Rand) []byte {
	v := math.Round((g.lo+(g.hi-g.lo)*r.Float64())*1000) / 1000
	if v < g.lo || v > g.hi || (g.loExcl && v == g.lo) || (g.hiExcl && v == g.hi) {
		v = g.lo + (g.hi-g.lo)/2
	}
	return strconv.AppendFloat(dst, v, 'f', -1, 64)
}
func (numberGen) allowed() []string { return []string{"number"} }

// property is one declared property of an object.
type property struct {
	name     string
	key      []byte // `"name":`
	required bool
	gen      valueGen
}

// objectGen makes objects with every required property and, at random,
// optional ones; properties it cannot generate values for are left out
// when optional.
type objectGen struct {
	props []property // sorted by name
	// closed: the object rejects properties it does not declare.
	closed bool
	// skipped are optional properties left out, with the reason.
	skipped []string
}

// optionalShare is how often an optional property is present.
const optionalShare = 0.6

func buildObject(s map[string]any, path string) (*objectGen, error) {
	g := &objectGen{}
	if ap, ok := s["additionalProperties"].(bool); ok && !ap {
		g.closed = true
	}
	if up, ok := s["unevaluatedProperties"].(bool); ok && !up {
		g.closed = true
	}
	required := map[string]bool{}
	if req, ok := s["required"]; ok {
		list, isList := req.([]any)
		if !isList {
			return nil, &errUnsupported{path, "required is not a list"}
		}
		for _, e := range list {
			name, isStr := e.(string)
			if !isStr {
				return nil, &errUnsupported{path, "required holds a non-string"}
			}
			required[name] = true
		}
	}
	props, _ := s["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		sub, ok := props[n].(map[string]any)
		p := path + "/" + escapeToken(n)
		if !ok {
			if b, isBool := props[n].(bool); isBool && b {
				sub = map[string]any{} // true: anything
			} else if required[n] {
				return nil, &errUnsupported{p, "required property whose schema is false"}
			} else {
				continue
			}
		}
		vg, err := buildValue(sub, p)
		if err != nil {
			if required[n] {
				return nil, err
			}
			g.skipped = append(g.skipped, err.Error())
			continue
		}
		key, _ := json.Marshal(n)
		g.props = append(g.props, property{name: n, key: append(key, ':'), required: required[n], gen: vg})
	}
	for n := range required {
		if _, ok := props[n]; !ok {
			return nil, &errUnsupported{path, fmt.Sprintf("required property %q is not declared", n)}
		}
	}
	return g, nil
}

func (g *objectGen) appendValue(dst []byte, r *rand.Rand) []byte {
	return g.appendObject(dst, r, -1, nil, -1, 0, 0)
}

// appendObject appends the object. The property at index force is always
// present, with forceValue (an invalid value); force == len(g.props) adds
// the undeclared property unexpectedProperty instead. The property at
// index pad is appended last, as a random string sized so that the text
// from dst[base:] to the end of the capsule (the object and one closing
// brace) is about padTarget bytes.
func (g *objectGen) appendObject(dst []byte, r *rand.Rand, force int, forceValue []byte, pad, padTarget, base int) []byte {
	dst = append(dst, '{')
	first := true
	for i := range g.props {
		p := &g.props[i]
		if i == pad && i != force {
			continue
		}
		if i != force && !p.required && r.Float64() >= optionalShare {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, p.key...)
		if i == force {
			dst = append(dst, forceValue...)
		} else {
			dst = p.gen.appendValue(dst, r)
		}
	}
	if force == len(g.props) {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, `"`+unexpectedProperty+`":`...)
		dst = append(dst, forceValue...)
	}
	if pad >= 0 && pad != force {
		if !first {
			dst = append(dst, ',')
		}
		key := g.props[pad].key
		// What follows the padding: its closing quote, this object's brace
		// and the capsule's.
		n := padTarget - (len(dst) - base) - len(key) - 1 - 3
		dst = append(dst, key...)
		dst = append(dst, '"')
		dst = appendRandom(dst, r, g.props[pad].gen.(withTypes).g.(*stringGen).padLength(n))
		dst = append(dst, '"')
	}
	return append(dst, '}')
}

func (*objectGen) allowed() []string { return []string{"object"} }

// arrayGen makes arrays of up to a few items.
type arrayGen struct {
	item     valueGen
	min, max int
}

func buildArray(s map[string]any, path string) (valueGen, error) {
	g := &arrayGen{}
	var err error
	var ok bool
	if g.min, _, err = intKeyword(s, "minItems", path); err != nil {
		return nil, err
	}
	g.max = g.min + 3
	var maxItems int
	if maxItems, ok, err = intKeyword(s, "maxItems", path); err != nil {
		return nil, err
	} else if ok {
		if maxItems < g.min {
			return nil, &errUnsupported{path, "maxItems below minItems"}
		}
		g.max = min(g.max, maxItems)
	}
	switch it := s["items"].(type) {
	case nil:
		g.item = &stringGen{maxLen: -1}
	case map[string]any:
		if g.item, err = buildValue(it, path+"/items"); err != nil {
			return nil, err
		}
	case bool:
		if !it && g.min > 0 {
			return nil, &errUnsupported{path, "items false with minItems above 0"}
		}
		g.item = &stringGen{maxLen: -1}
		if !it {
			g.max = 0
		}
	default:
		return nil, &errUnsupported{path, "items is not a schema"}
	}
	return g, nil
}

func (g *arrayGen) appendValue(dst []byte, r *rand.Rand) []byte {
	dst = append(dst, '[')
	n := g.min + r.IntN(g.max-g.min+1)
	for i := range n {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = g.item.appendValue(dst, r)
	}
	return append(dst, ']')
}
func (*arrayGen) allowed() []string { return []string{"array"} }

func escapeToken(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '~':
			out = append(out, "~0"...)
		case '/':
			out = append(out, "~1"...)
		default:
			out = append(out, s[i])
		}
	}
	return string(out)
}
