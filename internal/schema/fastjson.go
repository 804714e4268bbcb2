package schema

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// The fast path on JSON text. ValidJSON answers what Validate would answer
// for the decoded value, reading the bytes once against the fast tree and
// building nothing. It only ever says "valid" when it is sure: text it
// cannot judge exactly (whitespace, an escaped key, a duplicate key, an
// escaped string whose content a keyword reads, a number it cannot compare
// exactly, very deep nesting) is left to the caller's slow path, which
// decodes and calls Validate. fastjson_test.go and the fuzz target there
// hold it to the library's verdict.

// maxJSONDepth bounds the nesting ValidJSON reads; deeper text is left to
// the decoder (whose limit, capsule.MaxDecodeDepth, is higher).
const maxJSONDepth = 128

// HasJSONFastPath reports whether ValidJSON can ever say valid: false
// when the schema uses a keyword the fast path lacks.
func (s *Schema) HasJSONFastPath() bool { return s.fast != nil }

// ValidJSON reports whether b is certainly the compact JSON text of one
// value (RFC 8259 grammar, UTF-8, no whitespace outside strings, no
// duplicate object key at any depth) that Validate would accept once
// decoded. false means only "not shown valid": decode b and call Validate
// to know (and to learn why); text longer than MaxStringBytes+2 bytes is
// always left to Validate. It reads b once and does not allocate, except
// for the format keyword's checks.
func (s *Schema) ValidJSON(b []byte) bool {
	if s.fast == nil || len(b) == 0 || len(b) > MaxStringBytes+2 {
		// Text this long may hold a string too long to store, which
		// Validate reports (a string's text is at least as long as it).
		return false
	}
	// The key stack is only needed for undeclared keys and objects any
	// schema accepts: it is allocated then (a stack array here would
	// escape through the walker's methods).
	w := byteWalker{b: b, sc: jsonScanner{b: b}}
	end, ok := w.check(s.fast, 0)
	return ok && !w.unsure && end == len(b)
}

// byteWalker checks JSON text against a fast tree in one pass, checking
// the grammar as it reads (as CompactValueEnd does). Every "invalid" it
// returns is certain once the value's own keywords passed: a node's own
// keywords read the whole value (a duplicate key or a grammar error sets
// unsure), so its combinators judge clean text. unsure is set where it
// cannot decide, and then no verdict counts.
type byteWalker struct {
	b      []byte
	unsure bool
	depth  int
	sc     jsonScanner // for values any schema accepts, and undeclared keys
}

func (w *byteWalker) giveUp() (int, bool) {
	w.unsure = true
	return -1, false
}

// check returns the end of the value at b[i] and whether it is valid
// against n (the end is -1 when it is not). A nil n accepts any value.
func (w *byteWalker) check(n *fastNode, i int) (int, bool) {
	b := w.b
	if i >= len(b) {
		return w.giveUp()
	}
	if n == nil {
		end := w.sc.value(i, w.depth)
		if end < 0 {
			return w.giveUp()
		}
		return end, true
	}
	if n.never {
		return -1, false
	}
	var t jsonType
	switch b[i] {
	case '{':
		t = typeObject
	case '[':
		t = typeArray
	case '"':
		t = typeString
	case 't', 'f':
		t = typeBoolean
	case 'n':
		t = typeNull
	default:
		t = typeNumber
	}
	end := -1
	if t == typeNumber {
		if end = scanNumber(b, i); end < 0 {
			return w.giveUp()
		}
	}
	if n.types != 0 && n.types&t == 0 {
		if n.types&typeInteger == 0 || t != typeNumber {
			return -1, false
		}
		isInt, sure := integerText(b[i:end])
		if !sure {
			return w.giveUp()
		}
		if !isInt {
			return -1, false
		}
	}
	if n.format != nil && t != typeString {
		return w.giveUp()
	}
	if (t == typeObject || t == typeArray) && (n.hasConst || n.enum != nil) {
		return -1, false // const and enum values are scalars
	}
	var ok bool
	switch t {
	case typeObject:
		end, ok = w.object(n, i)
	case typeArray:
		end, ok = w.array(n, i)
	case typeString:
		end, ok = w.str(n, i)
	case typeNumber:
		ok = w.number(n, b[i:end])
	case typeBoolean:
		if b[i] == 't' {
			end = literal(b, i, "true")
		} else {
			end = literal(b, i, "false")
		}
		if end < 0 {
			return w.giveUp()
		}
		ok = w.scalar(n, b[i:end], t)
	default:
		if end = literal(b, i, "null"); end < 0 {
			return w.giveUp()
		}
		ok = w.scalar(n, b[i:end], t)
	}
	if !ok || w.unsure {
		return -1, false
	}
	if !w.combinators(n, i) {
		return -1, false
	}
	return end, true
}

// combinators applies $ref, allOf, anyOf, oneOf, not and if/then/else to
// the value at b[i].
func (w *byteWalker) combinators(n *fastNode, i int) bool {
	valid := func(c *fastNode) bool {
		_, ok := w.check(c, i)
		return ok
	}
	if n.ref != nil && !valid(n.ref) {
		return false
	}
	for _, c := range n.allOf {
		if !valid(c) || w.unsure {
			return false
		}
	}
	if len(n.anyOf) > 0 {
		found := false
		for _, c := range n.anyOf {
			if valid(c) {
				found = true
				break
			}
		}
		if !found || w.unsure {
			return false
		}
	}
	if len(n.oneOf) > 0 {
		matched := 0
		for _, c := range n.oneOf {
			if valid(c) {
				matched++
			}
		}
		if matched != 1 || w.unsure {
			return false
		}
	}
	if n.not != nil && (valid(n.not) || w.unsure) {
		return false
	}
	if n.ifNode != nil {
		cond := valid(n.ifNode)
		if w.unsure {
			return false
		}
		if cond {
			if n.then != nil && !valid(n.then) {
				return false
			}
		} else if n.els != nil && !valid(n.els) {
			return false
		}
	}
	return !w.unsure
}

func (w *byteWalker) object(n *fastNode, i int) (int, bool) {
	b := w.b
	if n.slotsFull {
		return w.giveUp() // more names than the bit sets hold
	}
	if w.depth >= maxJSONDepth {
		return w.giveUp()
	}
	w.depth++
	defer func() { w.depth-- }()
	first := len(w.sc.keys)
	defer func() { w.sc.keys = w.sc.keys[:first] }()
	var others [4]uint64 // a 256-bit filter of the undeclared keys' hashes
	i++
	count := 0
	var seen uint64
	if i < len(b) && b[i] == '}' {
		return i + 1, w.objectCounts(n, 0, 0)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return w.giveUp()
		}
		end, escaped := scanString(b, i)
		if end < 0 || escaped || end >= len(b) || b[end] != ':' {
			return w.giveUp()
		}
		key := b[i+1 : end-1]
		m, declared := n.lookupMember(key)
		if declared {
			if seen&m.slot != 0 {
				return w.giveUp() // a duplicate key: the decoder keeps the last
			}
			seen |= m.slot
		} else {
			h := keyHash(key)
			if others[h>>6]&(1<<(h&63)) != 0 {
				for _, k := range w.sc.keys[first:] {
					if bytes.Equal(b[k.start:k.end], key) {
						return w.giveUp()
					}
				}
			}
			others[h>>6] |= 1 << (h & 63)
			w.sc.push(span{i + 1, end - 1})
		}
		child := m.node
		if !declared || !m.prop {
			if n.closed {
				return -1, false
			}
			child = n.additional
		}
		end, ok := w.check(child, end+1)
		if !ok {
			return -1, false
		}
		count++
		if end >= len(b) {
			return w.giveUp()
		}
		i = end + 1
		switch b[end] {
		case ',':
		case '}':
			return i, w.objectCounts(n, count, seen)
		default:
			return w.giveUp()
		}
	}
}

// objectCounts applies minProperties, maxProperties and required to an
// object of count members whose declared names set the bits seen.
func (w *byteWalker) objectCounts(n *fastNode, count int, seen uint64) bool {
	if n.minProps >= 0 && count < n.minProps || n.maxProps >= 0 && count > n.maxProps {
		return false
	}
	return seen&n.reqMask == n.reqMask
}

func (w *byteWalker) array(n *fastNode, i int) (int, bool) {
	b := w.b
	if w.depth >= maxJSONDepth {
		return w.giveUp()
	}
	w.depth++
	defer func() { w.depth-- }()
	i++
	count := 0
	if i < len(b) && b[i] == ']' {
		i++
	} else {
		for {
			end, ok := w.check(n.items, i)
			if !ok {
				return -1, false
			}
			count++
			if end >= len(b) {
				return w.giveUp()
			}
			i = end + 1
			if b[end] == ']' {
				break
			}
			if b[end] != ',' {
				return w.giveUp()
			}
		}
	}
	if n.minItems >= 0 && count < n.minItems || n.maxItems >= 0 && count > n.maxItems {
		return -1, false
	}
	return i, true
}

func (w *byteWalker) str(n *fastNode, i int) (int, bool) {
	end, escaped := scanString(w.b, i)
	if end < 0 {
		return w.giveUp()
	}
	content := w.b[i+1 : end-1]
	needsContent := n.hasConst || n.enum != nil || n.format != nil || n.minLen >= 0 || n.maxLen >= 0 || n.pattern != nil
	if !needsContent {
		return end, true
	}
	if escaped {
		return w.giveUp()
	}
	if (n.hasConst || n.enum != nil) && !w.scalar(n, content, typeString) {
		return -1, false
	}
	if n.minLen >= 0 || n.maxLen >= 0 {
		l := utf8.RuneCount(content)
		if n.minLen >= 0 && l < n.minLen || n.maxLen >= 0 && l > n.maxLen {
			return -1, false
		}
	}
	if n.pattern != nil && !n.matchPattern(unsafe.String(unsafe.SliceData(content), len(content))) {
		return -1, false
	}
	if n.format != nil {
		valid, sure := false, false
		if n.dateTime {
			valid, sure = dateTime(content)
		}
		if !sure {
			valid = n.format(string(content)) == nil
		}
		if !valid {
			return -1, false
		}
	}
	return end, true
}

func (w *byteWalker) number(n *fastNode, text []byte) bool {
	if n.intRange || n.floatRange {
		s := unsafe.String(unsafe.SliceData(text), len(text))
		if n.intRange && !int64Text(s) || n.floatRange && !float64Text(s) {
			return false
		}
	}
	for _, lim := range [...]struct {
		b    *bound
		want int8 // the comparisons allowed: bit 0 below, 1 equal, 2 above
	}{
		{n.minimum, 0b110}, {n.maximum, 0b011}, {n.exclusiveMin, 0b100}, {n.exclusiveMax, 0b001},
	} {
		if lim.b == nil {
			continue
		}
		cmp, sure := compareText(text, lim.b)
		if !sure {
			w.unsure = true
			return false
		}
		if lim.want&(1<<(cmp+1)) == 0 {
			return false
		}
	}
	return w.scalar(n, text, typeNumber)
}

// scalar applies const and enum to a scalar: text is a number, true,
// false or null, or the content of a string without escapes.
func (w *byteWalker) scalar(n *fastNode, text []byte, t jsonType) bool {
	if n.hasConst {
		match, sure := textEqual(text, t, n.constVal)
		if !sure {
			w.unsure = true
			return false
		}
		if !match {
			return false
		}
	}
	if n.enum != nil {
		unsure := false
		for _, e := range n.enum {
			match, sure := textEqual(text, t, e)
			if match {
				return true
			}
			unsure = unsure || !sure
		}
		w.unsure = w.unsure || unsure
		return false
	}
	return true
}

// textEqual reports whether the scalar text of type t equals the enum or
// const value s, and whether it is sure.
func textEqual(text []byte, t jsonType, s any) (match, sure bool) {
	switch s := s.(type) {
	case nil:
		return t == typeNull, true
	case bool:
		return t == typeBoolean && (text[0] == 't') == s, true
	case string:
		return t == typeString && string(text) == s, true
	case json.Number:
		if t != typeNumber {
			return false, true
		}
		if string(text) == string(s) {
			return true, true
		}
		a, okA := plainInt64(text)
		c, okC := plainInt64([]byte(s))
		if okA && okC {
			return a == c, true
		}
		return false, false
	case float64:
		if t != typeNumber {
			return false, true
		}
		a, ok := plainInt64(text)
		if ok && s == math.Trunc(s) && math.Abs(s) < 1<<53 && math.Abs(float64(a)) < 1<<53 {
			return float64(a) == s, true
		}
		return false, false
	}
	if t != typeNumber {
		return false, true
	}
	return false, false
}

// integerText reports whether the number text has no fraction, and whether
// it is sure ("1.0" is an integer, "1e3" is not judged).
func integerText(text []byte) (isInt, sure bool) {
	if _, ok := smallInt(text); ok {
		return true, true
	}
	dot := bytes.IndexByte(text, '.')
	if bytes.ContainsAny(text, "eE") {
		return false, false
	}
	if dot < 0 {
		return true, true
	}
	for _, c := range text[dot+1:] {
		if c != '0' {
			return false, true
		}
	}
	return true, true
}

// smallInt parses an optional '-' and 1 to 18 digits (which cannot
// overflow an int64); false for anything else.
func smallInt(text []byte) (int64, bool) {
	neg := len(text) > 0 && text[0] == '-'
	if neg {
		text = text[1:]
	}
	if len(text) == 0 || len(text) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range text {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// cmpInt is -1, 0 or 1 as a is below, equal to or above b.
func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// plainInt64 parses an optional '-' and digits that fit an int64.
func plainInt64(text []byte) (int64, bool) {
	s := unsafe.String(unsafe.SliceData(text), len(text))
	if !plainInt(s) {
		return 0, false
	}
	i, err := strconv.ParseInt(s, 10, 64)
	return i, err == nil
}

// compareText compares the number text with the integer bound b exactly,
// when it can: text without an exponent, b an int64.
func compareText(text []byte, b *bound) (cmp int, sure bool) {
	if !b.isInt {
		return 0, false
	}
	if v, ok := smallInt(text); ok { // most numbers: no parse, no scan for an exponent
		return cmpInt(v, b.i), true
	}
	if bytes.ContainsAny(text, "eE") {
		return 0, false
	}
	neg := text[0] == '-'
	if neg {
		text = text[1:]
	}
	intPart, frac := text, []byte(nil)
	if dot := bytes.IndexByte(text, '.'); dot >= 0 {
		intPart, frac = text[:dot], text[dot+1:]
	}
	u, err := strconv.ParseUint(unsafe.String(unsafe.SliceData(intPart), len(intPart)), 10, 63)
	if err != nil {
		return 0, false
	}
	fraction := bytes.ContainsFunc(frac, func(r rune) bool { return r != '0' })
	// The value is ±(u + f), 0 <= f < 1, f > 0 exactly when fraction.
	v := int64(u)
	if neg {
		v = -v
	}
	switch {
	case v < b.i:
		return -1, true
	case v > b.i:
		return 1, true
	case !fraction:
		return 0, true
	case neg:
		return -1, true
	}
	return 1, true
}

// member is what a fast node knows about one property name.
type member struct {
	node *fastNode // the properties schema, when prop
	prop bool
	slot uint64 // the name's own bit in the set of names an object has
}

// indexMembers fills n.members and n.reqMask from props and required. A
// node with more than 64 names sets slotsFull (the byte walker then gives
// up on its objects).
func (n *fastNode) indexMembers() {
	if len(n.props) == 0 && len(n.required) == 0 {
		return
	}
	n.members = make(map[string]member, len(n.props)+len(n.required))
	for name, c := range n.props {
		n.members[name] = member{node: c, prop: true}
	}
	for _, name := range n.required {
		if _, ok := n.members[name]; !ok {
			n.members[name] = member{}
		}
	}
	if len(n.members) > 64 {
		n.slotsFull = true
		return
	}
	names := make([]string, 0, len(n.members))
	for name := range n.members {
		names = append(names, name)
	}
	slices.Sort(names)
	for i, name := range names {
		m := n.members[name]
		m.slot = 1 << i
		n.members[name] = m
	}
	for _, name := range n.required {
		n.reqMask |= n.members[name].slot
	}
	n.table = newMemberTable(n.members)
}

// memberTable finds a member by name with a hash chosen at compile time
// so that the node's names do not collide: one probe and one comparison
// per key, cheaper than a map for the short keys of events.
type memberTable struct {
	mult  uint32
	shift uint32
	used  []bool
	names []string
	ms    []member
}

func (t *memberTable) hash(key []byte) uint32 {
	n := len(key)
	if n == 0 {
		return 0
	}
	h := uint32(n) | uint32(key[0])<<8 | uint32(key[n-1])<<16 | uint32(key[n/2])<<24
	return (h * t.mult) >> t.shift
}

// lookupMember returns the member named key.
func (n *fastNode) lookupMember(key []byte) (member, bool) {
	if t := n.table; t != nil {
		i := t.hash(key)
		if t.used[i] && t.names[i] == string(key) {
			return t.ms[i], true
		}
		return member{}, false
	}
	m, ok := n.members[string(key)]
	return m, ok
}

// newMemberTable returns a collision-free table of members, or nil when
// there are none or no multiplier separates their names (lookupMember then
// uses the map).
func newMemberTable(members map[string]member) *memberTable {
	if len(members) == 0 {
		return nil
	}
	bits := uint32(1)
	for 1<<bits < 2*len(members) {
		bits++
	}
	seed := uint32(2654435761)
	for ; bits <= 12; bits++ {
		for range 200 {
			seed = seed*1664525 + 1013904223
			t := &memberTable{mult: seed | 1, shift: 32 - bits, used: make([]bool, 1<<bits), names: make([]string, 1<<bits), ms: make([]member, 1<<bits)}
			ok := true
			for name, m := range members {
				i := t.hash([]byte(name))
				if t.used[i] {
					ok = false
					break
				}
				t.used[i], t.names[i], t.ms[i] = true, name, m
			}
			if ok {
				return t
			}
		}
	}
	return nil
}
