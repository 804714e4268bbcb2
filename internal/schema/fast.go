package schema

import (
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The fast path. The library's validator builds an error tree as it goes and
// allocates several objects per value, which costs microseconds per event.
// Most EventLogging schemas use a small set of keywords, so Compile also
// builds a fastNode tree from the compiled schema that only answers "valid
// or not", without allocating on the common path. Validate asks it first and
// runs the library only when it says no, to explain why. A schema using any
// keyword the fast path does not implement gets no fast tree (Schema.fast is
// nil) and is always validated by the library. The fast path must never
// accept a value the library rejects; fast_test.go checks them against each
// other.

// jsonType is a bit set of JSON types.
type jsonType uint8

const (
	typeNull jsonType = 1 << iota
	typeBoolean
	typeNumber
	typeInteger
	typeString
	typeArray
	typeObject
)

var typeNames = map[string]jsonType{
	"null": typeNull, "boolean": typeBoolean, "number": typeNumber, "integer": typeInteger,
	"string": typeString, "array": typeArray, "object": typeObject,
}

// fastNode is one schema of the fast tree. Unset limits are -1.
type fastNode struct {
	never    bool     // the false schema
	types    jsonType // 0: any type
	enum     []any    // scalars only
	hasConst bool
	constVal any // scalar
	format   func(any) error
	dateTime bool // format is the library's date-time (datetime.go)

	ref                        *fastNode
	allOf, anyOf, oneOf        []*fastNode
	not, ifNode, then, els     *fastNode
	minProps, maxProps         int
	required                   []string
	props                      map[string]*fastNode
	closed                     bool      // additionalProperties: false
	additional                 *fastNode // additionalProperties schema
	minItems, maxItems         int
	items                      *fastNode
	minLen, maxLen             int
	pattern                    jsonschema.Regexp
	fixed                      fixedPattern // pattern, when it is one (pattern.go)
	minimum, maximum           *bound
	exclusiveMin, exclusiveMax *bound
	intRange, floatRange       bool // numbers must fit an int64, a float64 (storable.go)

	// For the byte walker (fastjson.go): props and required by name, and
	// the bits of the required names.
	members   map[string]member
	table     *memberTable // members, for the byte walker's lookups
	reqMask   uint64
	slotsFull bool // more than 64 names: members has no slots
}

// bound is a numeric limit, with its int64 form when it has one.
type bound struct {
	rat   *big.Rat
	i     int64
	isInt bool
}

func newBound(r *big.Rat) *bound {
	if r == nil {
		return nil
	}
	b := &bound{rat: r}
	if r.IsInt() && r.Num().IsInt64() {
		b.i, b.isInt = r.Num().Int64(), true
	}
	return b
}

// buildFast returns the fast tree of s, or nil when s uses a keyword the
// fast path does not implement.
func buildFast(s *jsonschema.Schema) *fastNode {
	b := fastBuilder{nodes: map[*jsonschema.Schema]*fastNode{}}
	n := b.node(s)
	if b.unsupported || b.cyclic() {
		return nil
	}
	return n
}

type fastBuilder struct {
	nodes       map[*jsonschema.Schema]*fastNode
	unsupported bool // some schema uses a keyword the fast path lacks
}

func (b *fastBuilder) node(s *jsonschema.Schema) *fastNode {
	if s == nil {
		return nil
	}
	if n, ok := b.nodes[s]; ok {
		return n
	}
	n := &fastNode{minProps: -1, maxProps: -1, minItems: -1, maxItems: -1, minLen: -1, maxLen: -1}
	b.nodes[s] = n
	if !supported(s) {
		b.unsupported = true
		return n
	}
	if s.Bool != nil {
		n.never = !*s.Bool
		return n
	}
	if s.Types != nil {
		for _, name := range s.Types.ToStrings() {
			n.types |= typeNames[name]
		}
	}
	if s.Enum != nil {
		for _, v := range s.Enum.Values {
			if !isScalar(v) {
				b.unsupported = true
			}
		}
		n.enum = s.Enum.Values
	}
	if s.Const != nil {
		if !isScalar(*s.Const) {
			b.unsupported = true
		}
		n.hasConst, n.constVal = true, *s.Const
	}
	if s.Format != nil {
		n.format = s.Format.Validate
		n.dateTime = s.Format.Name == "date-time"
	}
	n.minProps, n.maxProps = intOr(s.MinProperties), intOr(s.MaxProperties)
	n.required = s.Required
	n.minItems, n.maxItems = intOr(s.MinItems), intOr(s.MaxItems)
	n.minLen, n.maxLen = intOr(s.MinLength), intOr(s.MaxLength)
	n.pattern = s.Pattern
	if s.Pattern != nil {
		n.fixed = fixedPatternOf(s.Pattern)
	}
	n.minimum, n.maximum = newBound(s.Minimum), newBound(s.Maximum)
	n.exclusiveMin, n.exclusiveMax = newBound(s.ExclusiveMinimum), newBound(s.ExclusiveMaximum)
	if r := rangeOf(s); r != nil {
		n.intRange, n.floatRange = r.int64, r.float64
	}

	child := b.node
	n.ref = child(s.Ref)
	for _, c := range s.AllOf {
		n.allOf = append(n.allOf, child(c))
	}
	for _, c := range s.AnyOf {
		n.anyOf = append(n.anyOf, child(c))
	}
	for _, c := range s.OneOf {
		n.oneOf = append(n.oneOf, child(c))
	}
	n.not, n.ifNode, n.then, n.els = child(s.Not), child(s.If), child(s.Then), child(s.Else)
	if len(s.Properties) > 0 {
		n.props = make(map[string]*fastNode, len(s.Properties))
		for name, c := range s.Properties {
			n.props[name] = child(c)
		}
	}
	switch a := s.AdditionalProperties.(type) {
	case nil:
	case bool:
		n.closed = !a
	case *jsonschema.Schema:
		n.additional = child(a)
	default:
		b.unsupported = true
	}
	switch it := s.Items.(type) {
	case nil:
	case *jsonschema.Schema:
		n.items = child(it)
	default: // tuple form
		b.unsupported = true
	}
	if s.Items2020 != nil {
		n.items = child(s.Items2020)
	}
	n.indexMembers()
	return n
}

// supported reports whether s uses only keywords the fast path implements
// (its subschemas are checked separately).
func supported(s *jsonschema.Schema) bool {
	return s.RecursiveRef == nil && s.DynamicRef == nil &&
		s.PropertyNames == nil && len(s.PatternProperties) == 0 &&
		len(s.Dependencies) == 0 && len(s.DependentRequired) == 0 && len(s.DependentSchemas) == 0 &&
		s.UnevaluatedProperties == nil && !s.UniqueItems && s.Contains == nil &&
		s.MinContains == nil && s.MaxContains == nil && s.AdditionalItems == nil &&
		len(s.PrefixItems) == 0 && s.UnevaluatedItems == nil &&
		s.ContentEncoding == nil && s.ContentMediaType == nil && s.ContentSchema == nil &&
		s.MultipleOf == nil && onlyRangeExt(s.Extensions) &&
		(s.Items == nil || s.Items2020 == nil)
}

// onlyRangeExt reports whether the extensions are at most the range
// check, which the fast path implements.
func onlyRangeExt(exts []jsonschema.SchemaExt) bool {
	for _, x := range exts {
		if _, ok := x.(*rangeExt); !ok {
			return false
		}
	}
	return true
}

// cyclic reports whether some schema reaches itself without descending
// into the value ($ref, allOf, …): the fast path would recurse forever
// where the library reports a cycle.
func (b *fastBuilder) cyclic() bool {
	const (
		visiting = 1
		done     = 2
	)
	state := map[*fastNode]int{}
	var visit func(n *fastNode) bool
	visit = func(n *fastNode) bool {
		if n == nil {
			return false
		}
		switch state[n] {
		case visiting:
			return true
		case done:
			return false
		}
		state[n] = visiting
		same := append([]*fastNode{n.ref, n.not, n.ifNode, n.then, n.els}, n.allOf...)
		same = append(append(same, n.anyOf...), n.oneOf...)
		for _, c := range same {
			if visit(c) {
				return true
			}
		}
		state[n] = done
		return false
	}
	for _, n := range b.nodes {
		if visit(n) {
			return true
		}
	}
	return false
}

func intOr(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

func isScalar(v any) bool {
	switch v.(type) {
	case nil, bool, string, json.Number, float64:
		return true
	}
	return false
}

// valid reports whether v is valid against n. It does not allocate unless
// a number needs exact rational arithmetic.
func (n *fastNode) valid(v any) bool {
	if n.never {
		return false
	}
	t := typeOf(v)
	if t == 0 {
		return false
	}
	if n.types != 0 && n.types&t == 0 && (n.types&typeInteger == 0 || t != typeNumber || !isInteger(v)) {
		return false
	}
	if n.hasConst && !scalarEqual(v, n.constVal) {
		return false
	}
	if n.enum != nil {
		found := false
		for _, e := range n.enum {
			if scalarEqual(v, e) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if n.format != nil && n.format(v) != nil {
		return false
	}
	if n.ref != nil && !n.ref.valid(v) {
		return false
	}
	switch v := v.(type) {
	case map[string]any:
		if !n.validObject(v) {
			return false
		}
	case []any:
		if n.minItems >= 0 && len(v) < n.minItems || n.maxItems >= 0 && len(v) > n.maxItems {
			return false
		}
		if n.items == nil {
			if hasLongString(v) {
				return false
			}
		} else {
			for _, e := range v {
				if !n.items.valid(e) {
					return false
				}
			}
		}
	case string:
		if len(v) > MaxStringBytes {
			return false
		}
		if n.minLen >= 0 || n.maxLen >= 0 {
			l := utf8.RuneCountInString(v)
			if n.minLen >= 0 && l < n.minLen || n.maxLen >= 0 && l > n.maxLen {
				return false
			}
		}
		if n.pattern != nil && !n.matchPattern(v) {
			return false
		}
	default:
		if t == typeNumber && !n.validNumber(v) {
			return false
		}
	}
	for _, c := range n.allOf {
		if !c.valid(v) {
			return false
		}
	}
	if len(n.anyOf) > 0 {
		found := false
		for _, c := range n.anyOf {
			if c.valid(v) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if len(n.oneOf) > 0 {
		matched := 0
		for _, c := range n.oneOf {
			if c.valid(v) {
				matched++
			}
		}
		if matched != 1 {
			return false
		}
	}
	if n.not != nil && n.not.valid(v) {
		return false
	}
	if n.ifNode != nil {
		if n.ifNode.valid(v) {
			if n.then != nil && !n.then.valid(v) {
				return false
			}
		} else if n.els != nil && !n.els.valid(v) {
			return false
		}
	}
	return true
}

func (n *fastNode) validObject(obj map[string]any) bool {
	if n.minProps >= 0 && len(obj) < n.minProps || n.maxProps >= 0 && len(obj) > n.maxProps {
		return false
	}
	for _, name := range n.required {
		if _, ok := obj[name]; !ok {
			return false
		}
	}
	for name, pv := range obj {
		if c, ok := n.props[name]; ok {
			if !c.valid(pv) {
				return false
			}
			continue
		}
		if n.closed || len(name) > MaxStringBytes {
			return false
		}
		if n.additional != nil {
			if !n.additional.valid(pv) {
				return false
			}
		} else if hasLongString(pv) {
			return false
		}
	}
	return true
}

func (n *fastNode) validNumber(v any) bool {
	if n.intRange && !fitsInt64(v) || n.floatRange && !fitsFloat64(v) {
		return false
	}
	if n.minimum != nil && compareNumber(v, n.minimum) < 0 {
		return false
	}
	if n.maximum != nil && compareNumber(v, n.maximum) > 0 {
		return false
	}
	if n.exclusiveMin != nil && compareNumber(v, n.exclusiveMin) <= 0 {
		return false
	}
	if n.exclusiveMax != nil && compareNumber(v, n.exclusiveMax) >= 0 {
		return false
	}
	return true
}

// typeOf classifies v like the library does; 0 is not a JSON value.
func typeOf(v any) jsonType {
	switch v := v.(type) {
	case nil:
		return typeNull
	case bool:
		return typeBoolean
	case string:
		return typeString
	case json.Number, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return typeNumber
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0
		}
		return typeNumber
	case float32:
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return 0
		}
		return typeNumber
	case map[string]any:
		return typeObject
	case []any:
		return typeArray
	}
	return 0
}

// isInteger reports whether the number v has no fraction ("1.0" and "1e3"
// do not).
func isInteger(v any) bool {
	switch v := v.(type) {
	case json.Number:
		if plainInt(string(v)) {
			return true
		}
		r, ok := new(big.Rat).SetString(string(v))
		return ok && r.IsInt()
	case float64:
		return v == math.Trunc(v)
	case float32:
		return float64(v) == math.Trunc(float64(v))
	}
	return true // Go integers
}

// plainInt reports whether s is an optional '-' and digits.
func plainInt(s string) bool {
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// compareNumber compares the number v with b, exactly.
func compareNumber(v any, b *bound) int {
	if b.isInt {
		if i, ok := asInt64(v); ok {
			switch {
			case i < b.i:
				return -1
			case i > b.i:
				return 1
			}
			return 0
		}
	}
	r, ok := toRat(v)
	if !ok {
		return 0
	}
	return r.Cmp(b.rat)
}

// asInt64 returns v when it is an integer written without fraction or
// exponent, within int64.
func asInt64(v any) (int64, bool) {
	switch v := v.(type) {
	case json.Number:
		if !plainInt(string(v)) {
			return 0, false
		}
		i, err := strconv.ParseInt(string(v), 10, 64)
		return i, err == nil
	case int:
		return int64(v), true
	case int64:
		return v, true
	case int32:
		return int64(v), true
	}
	return 0, false
}

func toRat(v any) (*big.Rat, bool) {
	switch v := v.(type) {
	case json.Number:
		return new(big.Rat).SetString(string(v))
	case float64:
		// As the library: the shortest decimal that reads back as v.
		return new(big.Rat).SetString(strconv.FormatFloat(v, 'g', -1, 64))
	case float32:
		return new(big.Rat).SetString(strconv.FormatFloat(float64(v), 'g', -1, 32))
	case int:
		return new(big.Rat).SetInt64(int64(v)), true
	case int8:
		return new(big.Rat).SetInt64(int64(v)), true
	case int16:
		return new(big.Rat).SetInt64(int64(v)), true
	case int32:
		return new(big.Rat).SetInt64(int64(v)), true
	case int64:
		return new(big.Rat).SetInt64(v), true
	case uint:
		return new(big.Rat).SetUint64(uint64(v)), true
	case uint8:
		return new(big.Rat).SetUint64(uint64(v)), true
	case uint16:
		return new(big.Rat).SetUint64(uint64(v)), true
	case uint32:
		return new(big.Rat).SetUint64(uint64(v)), true
	case uint64:
		return new(big.Rat).SetUint64(v), true
	}
	return nil, false
}

// scalarEqual is JSON equality of v and the scalar s (numbers compare by
// value: 1 equals 1.0).
func scalarEqual(v, s any) bool {
	switch s := s.(type) {
	case nil:
		return v == nil
	case bool:
		b, ok := v.(bool)
		return ok && b == s
	case string:
		str, ok := v.(string)
		return ok && str == s
	}
	if typeOf(v) != typeNumber {
		return false
	}
	if a, ok := v.(json.Number); ok {
		if b, ok := s.(json.Number); ok && a == b {
			return true
		}
	}
	r1, ok1 := toRat(v)
	r2, ok2 := toRat(s)
	return ok1 && ok2 && r1.Cmp(r2) == 0
}

// matchPattern reports whether s matches n's pattern.
func (n *fastNode) matchPattern(s string) bool {
	if n.fixed != nil {
		return n.fixed.match(s)
	}
	return n.pattern.MatchString(s)
}
