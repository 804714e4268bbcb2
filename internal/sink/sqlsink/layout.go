package sqlsink

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/eventlogging/eventlogging/internal/schema"
)

// colType is the logical type of a column; each dialect maps it to SQL.
type colType uint8

const (
	typeID         colType = iota + 1 // surrogate key, filled by the database
	typeUUID                          // capsule uuid: NOT NULL, UNIQUE
	typeDT                            // capsule dt: short text, indexed
	typeMWTime                        // capsule timestamp as YYYYMMDDHHMMSS, indexed
	typeInt                           // JSON integer: BIGINT
	typeNumber                        // JSON number: DOUBLE
	typeBool                          // JSON boolean
	typeString                        // JSON string: TEXT
	typeJSON                          // anything else, as JSON text
	typeCapsuleStr                    // capsule string field: TEXT
	typeCapsuleInt                    // capsule integer field: BIGINT
)

// maxIdent is the longest identifier (in bytes) used on any dialect:
// PostgreSQL's limit, one below MySQL's. Using one limit everywhere gives a
// schema the same column names on every dialect.
const maxIdent = 63

// hashLen is the number of hex digits of the suffix that makes a shortened,
// sanitised or colliding name unique.
const hashLen = 8

// maxDepth bounds how deep nested objects are flattened; deeper objects
// are stored as JSON text.
const maxDepth = 16

// column is one column of a table layout.
type column struct {
	name string
	typ  colType
	// field is the capsule field of a capsule column ("" for event columns).
	field string
	// path is the property path inside the event of an event column.
	path []string
	// overflow marks the JSON column holding the members of the object at
	// path that its schema does not declare.
	overflow bool
}

// pointer returns the column's JSON pointer inside the record, for poison
// reasons; root is the pointer of the event object (layout.root).
func (c *column) pointer(root string) string {
	if c.field != "" {
		return "/" + c.field
	}
	return jsonPointer(root, c.path)
}

// objNode maps the members of one event object to columns.
type objNode struct {
	path     []string
	fields   map[string]fieldNode
	overflow int // column index of the overflow column, or -1
}

// fieldNode is one declared member: a column, or a nested flattened object.
type fieldNode struct {
	col int // index into layout.columns when obj is nil
	obj *objNode
}

// layout is the table layout of one schema version.
type layout struct {
	id      schema.ID
	table   string
	columns []column // excluding the id column; capsule columns first
	root    *objNode
	// capsuleCols is the number of leading capsule columns.
	capsuleCols int
	// platform marks an Event Platform schema: the event columns
	// describe the whole record, and the capsule columns are filled from
	// meta (platformCapsule). version is its $schema version.
	platform bool
	version  []int64
}

// eventPointer is the JSON pointer of the object the event columns
// describe: the capsule's "event", or the whole Event Platform record.
func (l *layout) eventPointer() string {
	if l.platform {
		return ""
	}
	return "/event"
}

// compareLayouts orders the versions of one schema: by revision, or by
// $schema version. With TablePerSchema the lowest creates the table.
func compareLayouts(a, b *layout) int {
	if c := cmp.Compare(a.id.Revision, b.id.Revision); c != 0 {
		return c
	}
	return slices.Compare(a.version, b.version)
}

// capsuleColumns are the capsule fields stored as columns, in table order
// (after id). The uuid must stay first: rows are deduplicated on it.
var capsuleColumns = []column{
	{name: "uuid", field: "uuid", typ: typeUUID},
	{name: "dt", field: "dt", typ: typeDT},
	{name: "timestamp", field: "timestamp", typ: typeMWTime},
	{name: "schema", field: "schema", typ: typeCapsuleStr},
	{name: "revision", field: "revision", typ: typeCapsuleInt},
	{name: "topic", field: "topic", typ: typeCapsuleStr},
	{name: "wiki", field: "wiki", typ: typeCapsuleStr},
	{name: "webHost", field: "webHost", typ: typeCapsuleStr},
	{name: "recvFrom", field: "recvFrom", typ: typeCapsuleStr},
	{name: "seqId", field: "seqId", typ: typeCapsuleInt},
	{name: "userAgent", field: "userAgent", typ: typeCapsuleStr},
	{name: "clientIp", field: "clientIp", typ: typeCapsuleStr},
}

// idColumn is the surrogate key, first in every table.
const idColumn = "id"

// tableName returns the table of schema id: <Schema>_<revision>, or
// <Schema> with one table per schema, shortened to maxIdent. For an Event
// Platform schema (id.Name a $schema path) it is platformTable's name, or
// "" when the path cannot name a table.
func tableName(id schema.ID, perSchema bool) string {
	if isPlatform(id) {
		name, err := platformTable(id.Name, perSchema)
		if err != nil {
			return ""
		}
		return name
	}
	name := id.Name
	if !perSchema {
		name += "_" + strconv.FormatInt(id.Revision, 10)
	}
	if len(name) > maxIdent {
		name = name[:maxIdent-hashLen-1] + "_" + pathHash([]string{name}, "")
	}
	return name
}

// shorten keeps an identifier within maxIdent, replacing its tail with a
// hash when needed.
func shorten(name string) string {
	if len(name) <= maxIdent {
		return name
	}
	return name[:maxIdent-hashLen-1] + "_" + pathHash([]string{name}, "")
}

// pathHash is the deterministic suffix for a property path: the first
// hashLen hex digits of SHA-256 over the path's segments, each followed by
// a NUL byte, then extra.
func pathHash(path []string, extra string) string {
	h := sha256.New()
	for _, p := range path {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	h.Write([]byte(extra))
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0]))[:hashLen]
}

// buildLayout derives the table layout of s: the capsule columns, then one
// column per flattened event property (see doc.go for the rules).
func buildLayout(s *schema.Schema, perSchema bool) *layout {
	doc := s.Document()
	l := &layout{id: s.ID(), table: tableName(s.ID(), perSchema), platform: isPlatform(s.ID())}
	if l.platform {
		segs := strings.Split(l.id.Name, "/")
		l.version, _ = parseVersion(segs[len(segs)-1])
	}
	l.columns = append(l.columns, capsuleColumns...)
	l.capsuleCols = len(capsuleColumns)

	a := &analyzer{root: doc}
	var cands []column
	root := a.shape(doc, 0)
	l.root = a.object(root, nil, 0, root.refs, &cands)
	names := resolveNames(cands)
	// Event columns in name order; remap the tree's indexes.
	order := make([]int, len(cands))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int { return strings.Compare(names[x], names[y]) })
	newIndex := make([]int, len(cands))
	for pos, old := range order {
		newIndex[old] = l.capsuleCols + pos
		c := cands[old]
		c.name = names[old]
		l.columns = append(l.columns, c)
	}
	remap(l.root, newIndex)
	return l
}

func remap(n *objNode, newIndex []int) {
	if n.overflow >= 0 {
		n.overflow = newIndex[n.overflow]
	}
	for k, f := range n.fields {
		if f.obj != nil {
			remap(f.obj, newIndex)
			continue
		}
		f.col = newIndex[f.col]
		n.fields[k] = f
	}
}

// resolveNames turns candidate event columns into unique identifiers:
// "event" and the path joined with "_"; runes outside printable ASCII
// replaced by "_" (and a hash suffix added); names past maxIdent shortened
// with a hash suffix; names equal ignoring ASCII case to a name already
// taken get a hash suffix. Columns with shorter paths are named first, ties
// broken byte-wise by path, so the outcome does not depend on map order.
func resolveNames(cands []column) []string {
	order := make([]int, len(cands))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int { return comparePaths(&cands[x], &cands[y]) })

	taken := map[string]bool{strings.ToLower(idColumn): true}
	for _, c := range capsuleColumns {
		taken[strings.ToLower(c.name)] = true
	}
	names := make([]string, len(cands))
	for _, i := range order {
		c := &cands[i]
		extra := ""
		if c.overflow {
			extra = "+"
		}
		base, altered := columnBase(c.path)
		name := base
		if altered || len(name) > maxIdent {
			name = withSuffix(base, pathHash(c.path, extra))
		}
		for n := 1; taken[strings.ToLower(name)]; n++ {
			name = withSuffix(base, pathHash(c.path, extra+"#"+strconv.Itoa(n)))
		}
		taken[strings.ToLower(name)] = true
		names[i] = name
	}
	return names
}

// comparePaths orders columns for naming: shorter paths first, then
// byte-wise by segment, leaf before overflow.
func comparePaths(a, b *column) int {
	if len(a.path) != len(b.path) {
		return len(a.path) - len(b.path)
	}
	for i := range a.path {
		if c := strings.Compare(a.path[i], b.path[i]); c != 0 {
			return c
		}
	}
	switch {
	case a.overflow == b.overflow:
		return 0
	case a.overflow:
		return 1
	default:
		return -1
	}
}

// columnBase joins "event" and the path with "_", replacing every rune
// outside printable ASCII (and trailing spaces, which MySQL rejects) with
// "_". altered reports a replacement.
func columnBase(path []string) (name string, altered bool) {
	var b strings.Builder
	b.WriteString("event")
	for _, seg := range path {
		b.WriteByte('_')
		for _, r := range seg {
			if r < 0x20 || r > 0x7e {
				b.WriteByte('_')
				altered = true
				continue
			}
			b.WriteRune(r)
		}
	}
	name = b.String()
	if trimmed := strings.TrimRight(name, " "); len(trimmed) != len(name) {
		name = trimmed + strings.Repeat("_", len(name)-len(trimmed))
		altered = true
	}
	return name, altered
}

// withSuffix appends "_" and h to base, cutting base so the result fits
// maxIdent.
func withSuffix(base, h string) string {
	if keep := maxIdent - hashLen - 1; len(base) > keep {
		base = base[:keep]
	}
	return base + "_" + h
}

// jsonPointer formats an event path as an RFC 6901 pointer into the
// record, root being the pointer of the event object.
func jsonPointer(root string, path []string) string {
	var b strings.Builder
	b.WriteString(root)
	for _, p := range path {
		b.WriteByte('/')
		p = strings.ReplaceAll(p, "~", "~0")
		b.WriteString(strings.ReplaceAll(p, "/", "~1"))
	}
	return b.String()
}

// typeSet is a set of JSON types. "number" is tInt|tFrac.
type typeSet uint8

const (
	tNull typeSet = 1 << iota
	tBool
	tInt
	tFrac // numbers with a fraction
	tStr
	tArr
	tObj
	tAll = tNull | tBool | tInt | tFrac | tStr | tArr | tObj
)

// shape is what the layout needs to know about a subschema: the JSON types
// it admits, the properties it declares (with every subschema declaring
// each) and whether it rejects undeclared properties.
type shape struct {
	types  typeSet
	props  map[string][]any
	keys   []string // props' keys in first-declared order
	closed bool
	refs   []string // the $refs followed to reach it
}

func (s *shape) addProp(name string, sub any) {
	if s.props == nil {
		s.props = map[string][]any{}
	}
	if _, ok := s.props[name]; !ok {
		s.keys = append(s.keys, name)
	}
	s.props[name] = append(s.props[name], sub)
}

func (s *shape) mergeProps(o shape) {
	for _, k := range o.keys {
		for _, sub := range o.props[k] {
			s.addProp(k, sub)
		}
	}
	s.refs = append(s.refs, o.refs...)
}

// analyzer derives shapes from one normalised schema document.
type analyzer struct {
	root  map[string]any
	stack []string // $refs being expanded, against cycles
}

// shape analyses a subschema. It follows local $refs, intersects allOf,
// unites anyOf/oneOf, and collects the properties declared anywhere an
// object's members may be defined (properties, allOf, anyOf, oneOf,
// then/else, dependentSchemas).
func (a *analyzer) shape(v any, depth int) shape {
	s, ok := v.(map[string]any)
	if !ok {
		if v == false {
			return shape{}
		}
		return shape{types: tAll}
	}
	if depth > 4*maxDepth {
		return shape{types: tAll}
	}
	out := shape{types: ownTypes(s)}
	if props, ok := s["properties"].(map[string]any); ok {
		for _, k := range slices.Sorted(maps.Keys(props)) {
			out.addProp(k, props[k])
		}
	}
	pp, _ := s["patternProperties"].(map[string]any)
	ap, hasAP := s["additionalProperties"]
	out.closed = len(pp) == 0 && (ap == false || (!hasAP && s["unevaluatedProperties"] == false))

	if ref, ok := s["$ref"].(string); ok {
		out = intersect(out, a.ref(ref, depth))
	}
	if all, ok := s["allOf"].([]any); ok {
		for _, m := range all {
			out = intersect(out, a.shape(m, depth+1))
		}
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		alts, ok := s[kw].([]any)
		if !ok || len(alts) == 0 {
			continue
		}
		u := a.shape(alts[0], depth+1)
		for _, m := range alts[1:] {
			u = unite(u, a.shape(m, depth+1))
		}
		out = intersect(out, u)
	}
	for _, kw := range []string{"then", "else"} {
		if m, ok := s[kw]; ok {
			out.mergeProps(a.shape(m, depth+1))
		}
	}
	if deps, ok := s["dependentSchemas"].(map[string]any); ok {
		for _, k := range slices.Sorted(maps.Keys(deps)) {
			out.mergeProps(a.shape(deps[k], depth+1))
		}
	}
	return out
}

// ref follows a $ref inside the document ("#", "#/$defs/x", …). Anything
// else, and cycles, admit every value.
func (a *analyzer) ref(ref string, depth int) shape {
	if !strings.HasPrefix(ref, "#") || slices.Contains(a.stack, ref) {
		return shape{types: tAll}
	}
	target, ok := resolvePointer(a.root, ref[1:])
	if !ok {
		return shape{types: tAll}
	}
	a.stack = append(a.stack, ref)
	defer func() { a.stack = a.stack[:len(a.stack)-1] }()
	out := a.shape(target, depth+1)
	out.refs = append(out.refs, ref)
	return out
}

// resolvePointer resolves an RFC 6901 pointer (the fragment of a $ref).
func resolvePointer(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	if ptr[0] != '/' {
		return nil, false
	}
	cur := doc
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// intersect combines two shapes that both apply (allOf): types narrow,
// properties add up, and either one closing the object closes it.
func intersect(a, b shape) shape {
	a.types &= b.types
	a.mergeProps(b)
	a.closed = a.closed || b.closed
	return a
}

// unite combines alternatives (anyOf): types widen, properties add up, and
// the object is closed only when every alternative closes it.
func unite(a, b shape) shape {
	a.types |= b.types
	a.mergeProps(b)
	a.closed = a.closed && b.closed
	return a
}

// ownTypes reads "type", or infers the types from "const" and "enum".
func ownTypes(s map[string]any) typeSet {
	switch t := s["type"].(type) {
	case string:
		return typeNamed(t)
	case []any:
		var ts typeSet
		for _, e := range t {
			if name, ok := e.(string); ok {
				ts |= typeNamed(name)
			} else {
				return tAll
			}
		}
		return ts
	}
	if c, ok := s["const"]; ok {
		return typeOfValue(c)
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		var ts typeSet
		for _, v := range e {
			ts |= typeOfValue(v)
		}
		return ts
	}
	return tAll
}

func typeNamed(name string) typeSet {
	switch name {
	case "null":
		return tNull
	case "boolean":
		return tBool
	case "integer":
		return tInt
	case "number":
		return tInt | tFrac
	case "string":
		return tStr
	case "array":
		return tArr
	case "object":
		return tObj
	}
	return tAll
}

func typeOfValue(v any) typeSet {
	switch x := v.(type) {
	case nil:
		return tNull
	case bool:
		return tBool
	case string:
		return tStr
	case []any:
		return tArr
	case map[string]any:
		return tObj
	case json.Number:
		if _, err := parseInt(string(x)); err == nil {
			return tInt
		}
		return tFrac
	case float64:
		if x == float64(int64(x)) {
			return tInt
		}
		return tFrac
	}
	return tAll
}

// object builds the node of an object with declared properties, appending
// its columns (indexes into cands) to cands. refs are the $refs followed
// to reach it: an object reached again through one of them is recursive
// and stored as JSON.
func (a *analyzer) object(s shape, path []string, depth int, refs []string, cands *[]column) *objNode {
	n := &objNode{path: path, fields: make(map[string]fieldNode, len(s.keys)), overflow: -1}
	for _, k := range s.keys {
		p := append(slices.Clip(path), k)
		subs := s.props[k]
		sh := a.shape(subs[0], depth+1)
		for _, sub := range subs[1:] {
			// Declared in several places: admit what any of them admits.
			sh = unite(sh, a.shape(sub, depth+1))
		}
		typ, nested := columnType(sh, depth+1)
		if nested && !slices.ContainsFunc(sh.refs, func(r string) bool { return slices.Contains(refs, r) }) {
			sub := append(slices.Clip(refs), sh.refs...)
			n.fields[k] = fieldNode{col: -1, obj: a.object(sh, p, depth+1, sub, cands)}
			continue
		}
		if nested {
			typ = typeJSON
		}
		n.fields[k] = fieldNode{col: len(*cands)}
		*cands = append(*cands, column{path: p, typ: typ})
	}
	if !s.closed {
		n.overflow = len(*cands)
		*cands = append(*cands, column{path: slices.Clip(path), typ: typeJSON, overflow: true})
	}
	return n
}

// columnType maps a shape to a column type; nested reports an object with
// declared properties, which is flattened instead.
func columnType(s shape, depth int) (typ colType, nested bool) {
	switch s.types &^ tNull {
	case tInt:
		return typeInt, false
	case tInt | tFrac, tFrac:
		return typeNumber, false
	case tBool:
		return typeBool, false
	case tStr:
		return typeString, false
	case tObj:
		if len(s.keys) > 0 && depth < maxDepth {
			return 0, true
		}
	}
	return typeJSON, false
}
