package avrowire

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/avro"
)

// The JSON ↔ Avro mapping. The processor encodes a validated event (a
// decoded JSON object, numbers as json.Number) with twmb/avro: members
// are matched to fields by name, missing fields are filled from their
// defaults (null for a ["null", T] field without one), and members the
// schema has no field for are left out. The sinks decode a record back to
// the JSON object. node is what both directions need to know of a schema:
// which members a record keeps, and how to turn a decoded Avro value back
// into the JSON value it was encoded from.

// SchemaField is the Avro field that carries an Event Platform event's
// "$schema" (an Avro name cannot contain "$"; WMF's Hive tables name the
// column _schema too). Encode fills it from "$schema" when the schema has
// it; DecodeEvent gives it back as "$schema".
const SchemaField = "_schema"

// kind is an Avro type.
type kind uint8

const (
	kindNull kind = iota
	kindBoolean
	kindInt
	kindLong
	kindFloat
	kindDouble
	kindString
	kindBytes
	kindEnum
	kindFixed
	kindArray
	kindMap
	kindRecord
	kindUnion
)

var primitiveKinds = map[string]kind{
	"null": kindNull, "boolean": kindBoolean, "int": kindInt, "long": kindLong,
	"float": kindFloat, "double": kindDouble, "string": kindString, "bytes": kindBytes,
}

// node is one type of a parsed schema. A named type is one node, shared by
// its references (so a recursive record is a cycle). Immutable once built.
type node struct {
	kind    kind
	logical string // logical type ("timestamp-millis", "date", "decimal", "uuid", …)
	scale   int    // decimal scale
	// tag names the type as a union branch, as twmb/avro's TaggedUnions
	// does: the primitive name, "array", "map", or a named type's full
	// name.
	tag      string
	fields   map[string]field // record
	elem     *node            // array items, map values
	branches []*node          // union
}

// field is a field of a record.
type field struct {
	n *node
	// required: the encoder has nothing to fill in when the member is
	// missing (no default, and not a ["null", T] union).
	required bool
}

// buildTree returns the node of a parsed schema.
func buildTree(s *avro.Schema) (*node, error) {
	b := treeBuilder{named: map[string]*node{}}
	return b.build(s.Root(), "")
}

type treeBuilder struct {
	named map[string]*node // full name -> definition
}

// build converts n; ns is the enclosing namespace, for references.
func (b *treeBuilder) build(n *avro.SchemaNode, ns string) (*node, error) {
	if k, ok := primitiveKinds[n.Type]; ok {
		return &node{kind: k, logical: n.LogicalType, scale: n.Scale, tag: n.Type}, nil
	}
	switch n.Type {
	case "record", "error", "enum", "fixed":
		full, inner := fullName(n.Name, n.Namespace)
		out := &node{tag: full, logical: n.LogicalType, scale: n.Scale}
		b.named[full] = out // before the fields: a field may refer to it
		switch n.Type {
		case "enum":
			out.kind = kindEnum
		case "fixed":
			out.kind = kindFixed
		default:
			out.kind = kindRecord
			out.fields = make(map[string]field, len(n.Fields))
			for i := range n.Fields {
				f := &n.Fields[i]
				fn, err := b.build(&f.Type, inner)
				if err != nil {
					return nil, err
				}
				nullable := fn.kind == kindUnion && len(fn.branches) > 0 && fn.branches[0].kind == kindNull
				out.fields[f.Name] = field{n: fn, required: !f.HasDefault && !nullable}
			}
		}
		return out, nil
	case "array", "map":
		sub := n.Items
		out := &node{kind: kindArray, tag: n.Type}
		if n.Type == "map" {
			sub, out.kind = n.Values, kindMap
		}
		if sub == nil {
			return nil, fmt.Errorf("avrowire: %s without its element type", n.Type)
		}
		var err error
		out.elem, err = b.build(sub, ns)
		return out, err
	case "union":
		out := &node{kind: kindUnion, branches: make([]*node, len(n.Branches))}
		for i := range n.Branches {
			var err error
			if out.branches[i], err = b.build(&n.Branches[i], ns); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	// A reference to a named type: relative to the enclosing namespace
	// unless dotted.
	if !strings.Contains(n.Type, ".") && ns != "" {
		if d, ok := b.named[ns+"."+n.Type]; ok {
			return d, nil
		}
	}
	if d, ok := b.named[n.Type]; ok {
		return d, nil
	}
	return nil, fmt.Errorf("avrowire: unknown type %q", n.Type)
}

// fullName returns the full name of a named type and the namespace its
// members' references are relative to.
func fullName(name, namespace string) (full, ns string) {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name, name[:i]
	}
	if namespace == "" {
		return name, ""
	}
	return namespace + "." + name, namespace
}

// hasSchemaField reports whether n is a record with the _schema field.
func (n *node) hasSchemaField() bool {
	if n.kind != kindRecord {
		return false
	}
	f, ok := n.fields[SchemaField]
	return ok && (f.n.kind == kindString || f.n.kind == kindUnion)
}

// droppedFields returns the JSON pointers of the members of the event v
// that the encoding leaves out because the schema has no field for them,
// at any depth, each once and sorted. Array elements and map values are
// written "*" (/items/*/extra).
func (n *node) droppedFields(v map[string]any) []string {
	w := dropWalk{}
	w.record(n, v, true)
	if len(w.out) > 1 {
		slices.Sort(w.out)
		w.out = slices.Compact(w.out)
	}
	return w.out
}

type dropWalk struct {
	path []string
	out  []string
	// depth bounds the walk of a recursive schema by the event's depth;
	// capsule.Decode bounds that, this is a guard for other callers.
	depth int
}

const maxWalkDepth = 512

func (w *dropWalk) add(name string) {
	var b strings.Builder
	for _, p := range w.path {
		b.WriteByte('/')
		b.WriteString(escapePointer(p))
	}
	b.WriteByte('/')
	b.WriteString(escapePointer(name))
	w.out = append(w.out, b.String())
}

func (w *dropWalk) value(n *node, v any) {
	if w.depth >= maxWalkDepth {
		return
	}
	w.depth++
	switch n.kind {
	case kindRecord:
		if obj, ok := v.(map[string]any); ok {
			w.record(n, obj, false)
		}
	case kindMap:
		if obj, ok := v.(map[string]any); ok {
			w.path = append(w.path, "*")
			for _, x := range obj {
				w.value(n.elem, x)
			}
			w.path = w.path[:len(w.path)-1]
		}
	case kindArray:
		if arr, ok := v.([]any); ok {
			w.path = append(w.path, "*")
			for _, x := range arr {
				w.value(n.elem, x)
			}
			w.path = w.path[:len(w.path)-1]
		}
	case kindUnion:
		if b, x := n.encodedBranch(v); b != nil {
			w.value(b, x)
		}
	}
	w.depth--
}

func (w *dropWalk) record(n *node, obj map[string]any, root bool) {
	for k, x := range obj {
		f, ok := n.fields[k]
		if !ok {
			if root && k == "$schema" && n.hasSchemaField() {
				continue // encoded as _schema
			}
			w.add(k)
			continue
		}
		switch x.(type) {
		case map[string]any, []any:
		default:
			continue // a scalar has no members to drop
		}
		w.path = append(w.path, k)
		w.value(f.n, x)
		w.path = w.path[:len(w.path)-1]
	}
}

// encodedBranch returns the branch of union n an object or array v is
// encoded with (and the value it encodes), as twmb/avro chooses it: a
// one-member object naming a branch is that branch's value; otherwise the
// first branch that takes it, which for an object is a map, or a record
// whose required fields it has. Scalars have no members to drop: nil.
func (n *node) encodedBranch(v any) (*node, any) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 {
			for k, inner := range x {
				for _, b := range n.branches {
					if b.tag == k {
						return b, inner
					}
				}
			}
		}
		for _, b := range n.branches {
			if b.kind == kindMap {
				return b, v
			}
			if b.kind == kindRecord && hasRequired(b, x) {
				return b, v
			}
		}
	case []any:
		for _, b := range n.branches {
			if b.kind == kindArray {
				return b, v
			}
		}
	}
	return nil, nil
}

func hasRequired(n *node, obj map[string]any) bool {
	for name, f := range n.fields {
		if _, ok := obj[name]; f.required && !ok {
			return false
		}
	}
	return true
}

// escapePointer escapes a JSON Pointer segment (RFC 6901).
func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// event turns the decoded root record v (decoded with
// avro.TaggedUnions) into the Event Platform event it was encoded from;
// see jsonValue. The _schema field is given back as "$schema"; without
// it the event cannot be (its $schema was lost), an error.
func (n *node) event(v any) (map[string]any, error) {
	obj, ok := v.(map[string]any)
	if n.kind != kindRecord || !ok {
		return nil, fmt.Errorf("the schema is not a record (got %T): the sinks store JSON objects", v)
	}
	out, err := n.record(obj, nil)
	if err != nil {
		return nil, err
	}
	if s, ok := out[SchemaField].(string); ok && n.hasSchemaField() {
		if _, taken := out["$schema"]; !taken {
			out["$schema"] = s
			delete(out, SchemaField)
		}
	}
	if _, ok := out["$schema"].(string); !ok {
		return nil, fmt.Errorf("no %s field: the event's $schema was not encoded (add {\"name\": \"%s\", \"type\": \"string\"} to the Avro schema)", SchemaField, SchemaField)
	}
	return out, nil
}

// record converts a decoded record. A null field is left out: Avro cannot
// tell a missing optional member from null, and a missing one is what
// events have.
func (n *node) record(obj map[string]any, path []string) (map[string]any, error) {
	out := make(map[string]any, len(obj))
	for k, x := range obj {
		f, ok := n.fields[k]
		if !ok {
			return nil, fmt.Errorf("%s: no such field in the schema", pointer(path, k))
		}
		jv, err := f.n.jsonValue(x, append(path, k))
		if err != nil {
			return nil, err
		}
		if jv != nil {
			out[k] = jv
		}
	}
	return out, nil
}

// jsonValue turns a value decoded by twmb/avro into *any (unions tagged)
// into the JSON value of the event: numbers as json.Number (int and long
// as integers, float and double in encoding/json's notation), bytes and
// fixed as the string they were encoded from (they must be UTF-8), enums
// as strings, a uuid fixed as its canonical text, timestamps as RFC 3339
// UTC text (with the logical type's precision when not whole seconds),
// dates as 2006-01-02, time-millis/-micros as integers, decimals as
// numbers with their scale. The error names the path of a value with no
// JSON form (NaN, a duration, text that is not UTF-8).
func (n *node) jsonValue(v any, path []string) (any, error) {
	if n.kind == kindUnion {
		if v == nil {
			return nil, nil
		}
		if m, ok := v.(map[string]any); ok && len(m) == 1 {
			for tag, inner := range m {
				for _, b := range n.branches {
					if b.tag == tag {
						return b.jsonValue(inner, path)
					}
				}
			}
		}
		return nil, fmt.Errorf("%s: union value %T without a branch tag", pointer(path, ""), v)
	}
	switch x := v.(type) {
	case nil:
		return nil, nil
	case bool:
		return x, nil
	case string:
		if !utf8.ValidString(x) {
			return nil, fmt.Errorf("%s: string is not UTF-8", pointer(path, ""))
		}
		return x, nil
	case int32:
		return json.Number(strconv.FormatInt(int64(x), 10)), nil
	case int64:
		return json.Number(strconv.FormatInt(x, 10)), nil
	case float32:
		return floatNumber(float64(x), 32, path)
	case float64:
		return floatNumber(x, 64, path)
	case []byte:
		if !utf8.Valid(x) {
			return nil, fmt.Errorf("%s: %s value is not UTF-8 text", pointer(path, ""), n.tag)
		}
		return string(x), nil
	case [16]byte: // uuid on fixed(16)
		var b [36]byte
		hex.Encode(b[0:8], x[0:4])
		b[8] = '-'
		hex.Encode(b[9:13], x[4:6])
		b[13] = '-'
		hex.Encode(b[14:18], x[6:8])
		b[18] = '-'
		hex.Encode(b[19:23], x[8:10])
		b[23] = '-'
		hex.Encode(b[24:], x[10:])
		return string(b[:]), nil
	case time.Time:
		return n.formatTime(x), nil
	case time.Duration:
		if n.logical == "time-micros" {
			return json.Number(strconv.FormatInt(x.Microseconds(), 10)), nil
		}
		return json.Number(strconv.FormatInt(x.Milliseconds(), 10)), nil
	case *big.Rat:
		return json.Number(x.FloatString(n.scale)), nil
	case []any:
		if n.kind != kindArray {
			break
		}
		out := make([]any, len(x))
		for i, e := range x {
			jv, err := n.elem.jsonValue(e, append(path, strconv.Itoa(i)))
			if err != nil {
				return nil, err
			}
			out[i] = jv
		}
		return out, nil
	case map[string]any:
		switch n.kind {
		case kindRecord:
			return n.record(x, path)
		case kindMap:
			out := make(map[string]any, len(x))
			for k, e := range x {
				if !utf8.ValidString(k) {
					return nil, fmt.Errorf("%s: map key %q is not UTF-8", pointer(path, ""), k)
				}
				jv, err := n.elem.jsonValue(e, append(path, k))
				if err != nil {
					return nil, err
				}
				out[k] = jv // a map keeps its null values: its keys are data
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("%s: %T value of Avro type %s has no JSON form", pointer(path, ""), v, n.tag)
}

// floatNumber writes a float or double as encoding/json does (bits 32
// for a float); NaN and infinities have no JSON form.
func floatNumber(f float64, bits int, path []string) (any, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("%s: %v has no JSON form", pointer(path, ""), f)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21)) {
		format = 'e'
	}
	s := strconv.FormatFloat(f, format, -1, bits)
	if format == 'e' {
		// e-07 to e-7, as encoding/json does.
		if n := len(s); n >= 4 && s[n-4] == 'e' && s[n-3] == '-' && s[n-2] == '0' {
			s = s[:n-2] + s[n-1:]
		}
	}
	return json.Number(s), nil
}

// formatTime writes a date or timestamp as the JSON Schema date and
// date-time formats do: 2006-01-02; 2006-01-02T15:04:05Z, with the
// logical type's fraction digits when the time is not a whole second (no
// zone for local timestamps).
func (n *node) formatTime(t time.Time) string {
	t = t.UTC()
	if n.logical == "date" {
		return t.Format(time.DateOnly)
	}
	layout := "2006-01-02T15:04:05"
	if t.Nanosecond() != 0 {
		switch {
		case strings.HasSuffix(n.logical, "-millis"):
			layout += ".000"
		case strings.HasSuffix(n.logical, "-micros"):
			layout += ".000000"
		default:
			layout += ".000000000"
		}
	}
	if !strings.HasPrefix(n.logical, "local-") {
		layout += "Z07:00"
	}
	return t.Format(layout)
}

// pointer is the JSON pointer of path (and last, when not empty).
func pointer(path []string, last string) string {
	var b strings.Builder
	for _, p := range path {
		b.WriteByte('/')
		b.WriteString(escapePointer(p))
	}
	if last != "" {
		b.WriteByte('/')
		b.WriteString(escapePointer(last))
	}
	if b.Len() == 0 {
		return "/"
	}
	return b.String()
}
