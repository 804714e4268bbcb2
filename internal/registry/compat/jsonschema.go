package compat

import (
	"fmt"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/eventlogging/eventlogging/internal/schema"
)

// jsonFormat compares JSON Schema documents, normalised to draft 2020-12
// by schema.Normalize. The rules are listed in doc.go.
type jsonFormat struct{}

func (jsonFormat) parse(doc string) (any, error) {
	m, err := schema.ParseDocument([]byte(doc))
	if err != nil {
		return nil, invalid(err)
	}
	return schema.Normalize(m), nil
}

func (jsonFormat) canRead(reader, writer any, d direction) []Violation {
	r, _ := reader.(map[string]any)
	w, _ := writer.(map[string]any)
	j := &jsonWalk{d: d, rDoc: r, wDoc: w, refs: usesRef(r) || usesRef(w)}
	j.schema(r, w, loc{})
	return j.out
}

// jsonWalk compares a reader and a writer JSON Schema: it asks whether
// every instance valid under the writer is valid under the reader, one
// keyword at a time, and records a violation for each keyword of the reader
// that the writer's keywords do not imply. Writer-only constraints never
// matter: they only make the writer's instances fewer. The answer is
// conservative: a violation means "not proven", never a false "compatible".
type jsonWalk struct {
	d          direction
	rDoc, wDoc map[string]any
	refs       bool                       // either document contains $ref
	seen       map[pairKey]bool           // subschema pairs reached through $ref
	rests      map[uintptr]map[string]any // see withoutRef
	out        []Violation
}

// Keywords whose meaning the walk does not compare. A reader that has one
// of them must have it exactly as the writer does.
var undecidable = [][]string{
	{"allOf"}, {"anyOf"}, {"oneOf"}, {"not"},
	{"if", "then", "else"},
	{"dependentSchemas"}, {"dependentRequired"}, {"dependencies"},
	{"propertyNames"}, {"patternProperties"},
	{"contains", "minContains", "maxContains"},
	{"unevaluatedItems"}, {"$dynamicRef"}, {"$recursiveRef"},
}

// assertions are the keywords that constrain instances; every other
// keyword is an annotation (title, description, default, $defs, …).
var assertions = map[string]bool{
	"type": true, "enum": true, "const": true, "multipleOf": true,
	"maximum": true, "exclusiveMaximum": true, "minimum": true, "exclusiveMinimum": true,
	"maxLength": true, "minLength": true, "pattern": true, "format": true,
	"items": true, "prefixItems": true, "additionalItems": true, "contains": true,
	"maxItems": true, "minItems": true, "uniqueItems": true, "maxContains": true, "minContains": true,
	"maxProperties": true, "minProperties": true, "required": true, "dependentRequired": true,
	"properties": true, "patternProperties": true, "additionalProperties": true,
	"propertyNames": true, "dependentSchemas": true, "dependencies": true,
	"allOf": true, "anyOf": true, "oneOf": true, "not": true, "if": true, "then": true, "else": true,
	"$ref": true, "$dynamicRef": true, "$recursiveRef": true,
	"unevaluatedItems": true, "unevaluatedProperties": true,
}

// applicators are the in-place applicators: their subschemas may evaluate
// properties, so "unevaluatedProperties" next to them does not close the
// object by itself.
var applicators = []string{"allOf", "anyOf", "oneOf", "$ref", "$dynamicRef", "$recursiveRef", "if", "then", "else", "dependentSchemas"}

// schema compares reader subschema r with writer subschema w at l.
func (j *jsonWalk) schema(r, w any, l loc) {
	var followedR, followedW bool
	r, l, followedR = j.deref(r, l, true)
	w, l, followedW = j.deref(w, l, false)
	if (followedR || followedW) && !j.enter(r, w, false) {
		return
	}
	if j.identical(r, w) || isFalse(w) {
		return
	}
	if b, ok := r.(bool); ok {
		if !b {
			j.add(l.r, l.w, fmt.Sprintf("%s is false (allows no value) in %s: %s", j.subject(l), j.d.readerNoun(), j.d.rejects()))
		}
		return
	}
	rm, ok := r.(map[string]any)
	if !ok || len(rm) == 0 {
		return
	}
	wm, _ := w.(map[string]any) // true: no constraints

	j.undecidable(rm, wm, l)
	j.ref(rm, wm, l)
	j.types(rm, wm, l)
	j.values(rm, wm, l)
	wt, _ := typeSet(wm)
	if allowsType(wt, "number") || allowsType(wt, "integer") {
		j.bound(rm, wm, l, "minimum", "exclusiveMinimum", true)
		j.bound(rm, wm, l, "maximum", "exclusiveMaximum", false)
		j.multipleOf(rm, wm, wt, l)
	}
	if allowsType(wt, "string") {
		j.bound(rm, wm, l, "minLength", "", true)
		j.bound(rm, wm, l, "maxLength", "", false)
		j.same(rm, wm, l, "pattern")
		j.same(rm, wm, l, "format")
	}
	if allowsType(wt, "array") {
		j.array(rm, wm, l)
	}
	if allowsType(wt, "object") {
		j.object(rm, wm, l)
	}
}

// add records a violation at the new schema's path (the reader's for
// CanRead).
func (j *jsonWalk) add(rPath, wPath, msg string) {
	p := rPath
	if j.d == dirForward {
		p = wPath
	}
	j.out = append(j.out, Violation{Path: p, Message: msg})
}

// addKw records a violation about keyword kw at l: at the keyword when the
// new schema has it, else at the subschema.
func (j *jsonWalk) addKw(rm, wm map[string]any, l loc, kw, msg string) {
	rp, wp := l.r, l.w
	if _, ok := rm[kw]; ok {
		rp += "/" + escape(kw)
	}
	if _, ok := wm[kw]; ok {
		wp += "/" + escape(kw)
	}
	j.add(rp, wp, msg)
}

// sub runs fn with a fresh violation list and returns what it recorded.
func (j *jsonWalk) sub(fn func()) []Violation {
	saved := j.out
	j.out = nil
	fn()
	got := j.out
	j.out = saved
	return got
}

// subject names the place l in messages: `property "user.name"`,
// `items of "tags"`, `undeclared properties of "user"`, "the root schema".
func (j *jsonWalk) subject(l loc) string {
	switch n := l.name; {
	case n == "":
		return "the root schema"
	case strings.HasSuffix(n, "[]"):
		return "items of " + j.subject(loc{name: strings.TrimSuffix(n, "[]")})
	case strings.HasSuffix(n, ".*") || n == "*":
		parent := strings.TrimSuffix(strings.TrimSuffix(n, "*"), ".")
		if parent == "" {
			return "undeclared properties of the root schema"
		}
		return fmt.Sprintf("undeclared properties of %q", parent)
	case strings.HasPrefix(n, "#") && !strings.Contains(n, "."):
		return fmt.Sprintf("definition %q", n)
	default:
		return fmt.Sprintf("property %q", n)
	}
}

func (j *jsonWalk) cannotProve(kw string, l loc) string {
	return fmt.Sprintf("cannot prove compatibility of %s in %s; use NONE or keep it unchanged", kw, j.subject(l))
}

// undecidable records the reader keywords the walk cannot compare unless
// the writer has them unchanged.
func (j *jsonWalk) undecidable(rm, wm map[string]any, l loc) {
	for _, group := range undecidable {
		present := ""
		same := true
		for _, kw := range group {
			rv, rok := rm[kw]
			wv, wok := wm[kw]
			if rok && present == "" {
				present = kw
			}
			if rok != wok || !reflect.DeepEqual(rv, wv) {
				same = false
			}
		}
		if present == "" || (same && j.groupRefsAgree(rm, group)) {
			continue
		}
		j.addKw(rm, wm, l, present, j.cannotProve(present, l))
	}
}

// typeSet returns the "type" of m as a list; ok is false when m has no
// type (any type).
func typeSet(m map[string]any) (types []string, ok bool) {
	switch t := m["type"].(type) {
	case string:
		return []string{t}, true
	case []any:
		out := make([]string, 0, len(t))
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out, true
	}
	return nil, false
}

// allowsType reports whether instances of the JSON type t may satisfy a
// schema of types ts (nil: any type).
func allowsType(ts []string, t string) bool {
	if ts == nil {
		return true
	}
	if slices.Contains(ts, t) {
		return true
	}
	switch t {
	case "integer":
		return slices.Contains(ts, "number")
	case "number": // an integer-typed writer produces numbers
		return slices.Contains(ts, "integer")
	}
	return false
}

// covers reports whether reader types rt accept every instance of writer
// type t.
func covers(rt []string, t string) bool {
	return slices.Contains(rt, t) || (t == "integer" && slices.Contains(rt, "number"))
}

func typeText(ts []string, ok bool) string {
	switch {
	case !ok:
		return "any type"
	case len(ts) == 1:
		return ts[0]
	}
	return quoteList(ts)
}

// types applies rule 4: the reader's type set must include the writer's.
func (j *jsonWalk) types(rm, wm map[string]any, l loc) {
	rt, rok := typeSet(rm)
	if !rok {
		return
	}
	wt, wok := typeSet(wm)
	narrowed := !wok
	for _, t := range wt {
		if !covers(rt, t) {
			narrowed = true
		}
	}
	if !narrowed {
		return
	}
	from, to := j.d.fromTo(typeText(rt, rok), typeText(wt, wok))
	j.addKw(rm, wm, l, "type", fmt.Sprintf("%s changed type from %s to %s: %s", j.subject(l), from, to, j.d.rejects()))
}

// writerValues returns the only values the writer allows, from "const" or
// "enum"; ok is false when it allows more.
func writerValues(wm map[string]any) (vals []any, ok bool) {
	if c, ok := wm["const"]; ok {
		return []any{c}, true
	}
	if e, ok := wm["enum"].([]any); ok {
		return e, true
	}
	return nil, false
}

// values applies rules 5 and 8 to "enum" and "const": the reader must
// allow every value the writer allows.
func (j *jsonWalk) values(rm, wm map[string]any, l loc) {
	re, rEnum := rm["enum"].([]any)
	rc, rConst := rm["const"]
	if !rEnum && !rConst {
		return
	}
	wv, wok := writerValues(wm)
	subj := j.subject(l)
	if rEnum {
		switch {
		case !wok:
			j.addKw(rm, wm, l, "enum", fmt.Sprintf("%s %s %s: %s", subj,
				j.d.pick("is now restricted to the enum", "is no longer restricted to the enum"),
				valueList(re), j.d.rejects()))
		default:
			var missing []any
			for _, v := range wv {
				if !slices.ContainsFunc(re, func(e any) bool { return jsonEqual(e, v) }) {
					missing = append(missing, v)
				}
			}
			if len(missing) > 0 {
				j.addKw(rm, wm, l, "enum", fmt.Sprintf("%s %s enum values %s: %s", subj,
					j.d.pick("no longer allows", "now allows"), valueList(missing), j.d.rejects()))
			}
		}
	}
	if rConst {
		switch {
		case !wok:
			j.addKw(rm, wm, l, "const", fmt.Sprintf("%s %s %s: %s", subj,
				j.d.pick("now requires the constant", "no longer requires the constant"),
				valueText(rc), j.d.rejects()))
		default:
			for _, v := range wv {
				if !jsonEqual(v, rc) {
					from, to := j.d.fromTo(valueText(rc), valuesText(wv))
					j.addKw(rm, wm, l, "const", fmt.Sprintf("%s changed its allowed values from %s to %s: %s", subj, from, to, j.d.rejects()))
					break
				}
			}
		}
	}
}

// numBound is a numeric bound: minimum 5, exclusiveMaximum 10, maxLength 3.
type numBound struct {
	v    *big.Rat
	excl bool
	text string
}

// boundOf reads the bound of m given by the inclusive keyword incl and the
// exclusive keyword excl (numeric, or draft-4's boolean modifier of incl).
func boundOf(m map[string]any, incl, excl string, lower bool) (numBound, bool) {
	var b numBound
	found := false
	exclFlag, _ := m[excl].(bool)
	if v, ok := toRat(m[incl]); ok {
		kw := incl
		if exclFlag {
			kw = excl
		}
		b, found = numBound{v: v, excl: exclFlag, text: kw + " " + v.RatString()}, true
	}
	if excl == "" {
		return b, found
	}
	if v, ok := toRat(m[excl]); ok {
		e := numBound{v: v, excl: true, text: excl + " " + v.RatString()}
		if !found || atLeastAsStrict(e, b, lower) {
			b, found = e, true
		}
	}
	return b, found
}

// atLeastAsStrict reports whether bound a admits no value that bound b
// rejects.
func atLeastAsStrict(a, b numBound, lower bool) bool {
	c := a.v.Cmp(b.v)
	if !lower {
		c = -c
	}
	return c > 0 || (c == 0 && (a.excl || !b.excl))
}

// bound applies rules 6 and 7: a reader bound must be implied by a writer
// bound at least as strict.
func (j *jsonWalk) bound(rm, wm map[string]any, l loc, incl, excl string, lower bool) {
	rb, ok := boundOf(rm, incl, excl, lower)
	if !ok {
		return
	}
	kw := incl
	if _, has := rm[incl]; !has {
		kw = excl
	}
	wb, ok := boundOf(wm, incl, excl, lower)
	switch {
	case !ok:
		j.addKw(rm, wm, l, kw, fmt.Sprintf("%s %s %s: %s", j.subject(l), j.d.pick("gained", "dropped"), rb.text, j.d.rejects()))
	case !atLeastAsStrict(wb, rb, lower):
		from, to := j.d.fromTo(rb.text, wb.text)
		j.addKw(rm, wm, l, kw, fmt.Sprintf("%s %s its bound from %s to %s: %s", j.subject(l),
			j.d.pick("tightened", "loosened"), from, to, j.d.rejects()))
	}
}

// multipleOf: the writer's multipleOf must be a multiple of the reader's
// (or the writer only allows integers and the reader's divides 1).
func (j *jsonWalk) multipleOf(rm, wm map[string]any, wt []string, l loc) {
	rv, ok := toRat(rm["multipleOf"])
	if !ok || rv.Sign() == 0 {
		return
	}
	wv, wok := toRat(wm["multipleOf"])
	if wok && new(big.Rat).Quo(wv, rv).IsInt() {
		return
	}
	if len(wt) > 0 && !slices.ContainsFunc(wt, func(t string) bool { return t != "integer" }) &&
		new(big.Rat).Inv(rv).IsInt() {
		return
	}
	rText := "multipleOf " + rv.RatString()
	if !wok {
		j.addKw(rm, wm, l, "multipleOf", fmt.Sprintf("%s %s %s: %s", j.subject(l), j.d.pick("gained", "dropped"), rText, j.d.rejects()))
		return
	}
	from, to := j.d.fromTo(rText, "multipleOf "+wv.RatString())
	j.addKw(rm, wm, l, "multipleOf", fmt.Sprintf("%s changed %s to %s: %s", j.subject(l), from, to, j.d.rejects()))
}

// same applies rule 6 to pattern and rule 8 to format: a reader value must
// equal the writer's.
func (j *jsonWalk) same(rm, wm map[string]any, l loc, kw string) {
	rv, ok := rm[kw].(string)
	if !ok {
		return
	}
	wv, wok := wm[kw].(string)
	switch {
	case !wok:
		j.addKw(rm, wm, l, kw, fmt.Sprintf("%s %s %s %q: %s", j.subject(l), j.d.pick("gained", "dropped"), kw, rv, j.d.rejects()))
	case wv != rv:
		from, to := j.d.fromTo(strconv.Quote(rv), strconv.Quote(wv))
		j.addKw(rm, wm, l, kw, fmt.Sprintf("%s changed %s from %s to %s: %s", j.subject(l), kw, from, to, j.d.rejects()))
	}
}

// arrayParts returns the positional item schemas of m and the schema of the
// items after them, with the keywords they sit at. Draft 4–7 tuples
// ("items": [...], "additionalItems") are read like prefixItems.
func arrayParts(m map[string]any) (prefixKw string, prefix []any, restKw string, rest any) {
	rest, restKw = true, "items"
	if tuple, ok := m["items"].([]any); ok {
		prefix, prefixKw, restKw = tuple, "items", "additionalItems"
		if v, ok := m["additionalItems"]; ok {
			rest = v
		}
		return prefixKw, prefix, restKw, rest
	}
	prefix, _ = m["prefixItems"].([]any)
	if v, ok := m["items"]; ok {
		rest = v
	}
	return "prefixItems", prefix, restKw, rest
}

// array applies rule 7: item schemas compared position by position, then
// the item count bounds and uniqueItems.
func (j *jsonWalk) array(rm, wm map[string]any, l loc) {
	rpKw, rPrefix, rrKw, rRest := arrayParts(rm)
	wpKw, wPrefix, wrKw, wRest := arrayParts(wm)
	for i := range max(len(rPrefix), len(wPrefix)) {
		at := loc{r: l.r + "/" + rrKw, w: l.w + "/" + wrKw, name: l.name + "[" + strconv.Itoa(i) + "]"}
		rs, ws := rRest, wRest
		if i < len(rPrefix) {
			rs, at.r = rPrefix[i], l.r+"/"+rpKw+"/"+strconv.Itoa(i)
		}
		if i < len(wPrefix) {
			ws, at.w = wPrefix[i], l.w+"/"+wpKw+"/"+strconv.Itoa(i)
		}
		j.schema(rs, ws, at)
	}
	j.schema(rRest, wRest, loc{r: l.r + "/" + rrKw, w: l.w + "/" + wrKw, name: l.name + "[]"})
	j.bound(rm, wm, l, "minItems", "", true)
	j.bound(rm, wm, l, "maxItems", "", false)
	if rm["uniqueItems"] == true && wm["uniqueItems"] != true {
		j.addKw(rm, wm, l, "uniqueItems", fmt.Sprintf("%s %s uniqueItems: %s", j.subject(l), j.d.pick("gained", "dropped"), j.d.rejects()))
	}
}

// readerAdditional is the reader's schema for a property it does not
// declare. It ignores patternProperties (the reader must have the
// writer's, see undecidable) and any property an applicator evaluates, so
// it may be stricter than the reader really is, never looser.
func readerAdditional(m map[string]any) any {
	if v, ok := m["additionalProperties"]; ok {
		return v
	}
	if v, ok := m["unevaluatedProperties"]; ok {
		return v
	}
	return true
}

// writerAdditional is the writer's schema for a property it does not
// declare. It may be looser than the writer really is, never stricter: a
// writer with patternProperties, or whose "unevaluatedProperties" sits next
// to applicators, counts as open.
func writerAdditional(m map[string]any) any {
	if _, ok := m["patternProperties"]; ok {
		return true
	}
	if v, ok := m["additionalProperties"]; ok {
		return v
	}
	if v, ok := m["unevaluatedProperties"]; ok {
		for _, a := range applicators {
			if _, has := m[a]; has {
				return true
			}
		}
		return v
	}
	return true
}

// openReason says why writerAdditional counts wm as open.
func openReason(wm map[string]any) string {
	if _, ok := wm["patternProperties"]; ok {
		return "it has patternProperties"
	}
	if _, ok := wm["additionalProperties"]; !ok {
		if _, ok := wm["unevaluatedProperties"]; ok {
			return "it combines subschemas, which may allow any property"
		}
	}
	return "additionalProperties is not false"
}

// sameUnevaluated reports whether properties neither schema declares meet
// the same constraint in both, so that comparing them adds nothing: no
// additionalProperties, the same unevaluatedProperties, and every
// applicator or patternProperties of the writer also in the reader. They
// must be equal there too, or the reader's is already reported (see
// undecidable); $ref is compared differently, so it must be equal here.
func sameUnevaluated(rm, wm map[string]any) bool {
	_, ra := rm["additionalProperties"]
	_, wa := wm["additionalProperties"]
	ru, ok := rm["unevaluatedProperties"]
	if ra || wa || !ok || !reflect.DeepEqual(ru, wm["unevaluatedProperties"]) {
		return false
	}
	for _, k := range append([]string{"patternProperties"}, applicators...) {
		wv, wok := wm[k]
		rv, rok := rm[k]
		if wok && (!rok || (strings.HasPrefix(k, "$") && !reflect.DeepEqual(rv, wv))) {
			return false
		}
	}
	return true
}

// object applies rules 1–3 and the property count bounds.
func (j *jsonWalk) object(rm, wm map[string]any, l loc) {
	j.required(rm, wm, l)
	j.bound(rm, wm, l, "minProperties", "", true)
	j.bound(rm, wm, l, "maxProperties", "", false)

	rProps, _ := rm["properties"].(map[string]any)
	wProps, _ := wm["properties"].(map[string]any)
	rAdd, wAdd := readerAdditional(rm), writerAdditional(wm)
	if len(rProps) == 0 && len(wProps) == 0 && isTrue(rAdd) {
		return
	}
	names := make([]string, 0, len(rProps)+len(wProps))
	for n := range rProps {
		names = append(names, n)
	}
	for n := range wProps {
		if _, dup := rProps[n]; !dup {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		rp, rIn := rProps[n]
		wp, wIn := wProps[n]
		at := l.prop(n)
		switch {
		case rIn && wIn:
			j.schema(rp, wp, at)
		case rIn: // the writer's additional properties may carry n
			if isFalse(wAdd) {
				continue
			}
			at.w = l.w + "/additionalProperties"
			got := j.sub(func() { j.schema(rp, wAdd, at) })
			if len(got) > 0 && isTrue(wAdd) {
				// Reported at the property, in both schemas.
				got = []Violation{{Path: l.prop(n).path(j.d), Message: fmt.Sprintf(
					"%s was %s, but %s is open (%s): %s may contain it with any value, %s",
					j.subject(at), j.d.pick("added", "removed"), j.d.writerNoun(), openReason(wm), j.d.writerData(), j.d.rejectsIt())}}
			}
			j.out = append(j.out, got...)
		default: // wIn only: the reader's additional properties must take n
			if isFalse(wp) || isTrue(rAdd) {
				continue
			}
			if isFalse(rAdd) {
				j.add(at.r, at.w, fmt.Sprintf(
					"%s was %s, but %s does not allow undeclared properties (additionalProperties: false): %s may contain it, %s",
					j.subject(at), j.d.pick("removed", "added"), j.d.readerNoun(), j.d.writerData(), j.d.rejectsIt()))
				continue
			}
			at.r = l.r + "/additionalProperties"
			j.schema(rAdd, wp, at)
		}
	}
	if isFalse(wAdd) || sameUnevaluated(rm, wm) {
		return
	}
	at := loc{r: l.r + "/additionalProperties", w: l.w + "/additionalProperties", name: joinName(l.name, "*")}
	if isFalse(rAdd) {
		if _, ok := wm["additionalProperties"]; !ok {
			at.w = l.w
		}
		j.add(at.r, at.w, fmt.Sprintf("%s %s: %s may contain them, %s", j.subject(at),
			j.d.pick("are no longer allowed", "are now allowed"), j.d.writerData(), j.d.rejectsIt()))
		return
	}
	j.schema(rAdd, wAdd, at)
}

// required applies rule 3: the reader may not require a property the
// writer does not require.
func (j *jsonWalk) required(rm, wm map[string]any, l loc) {
	rReq, _ := rm["required"].([]any)
	if len(rReq) == 0 {
		return
	}
	wReq, _ := wm["required"].([]any)
	for _, n := range rReq {
		name, ok := n.(string)
		if !ok || slices.Contains(wReq, n) {
			continue
		}
		at := l.prop(name)
		paths := [2]string{l.r, l.w}
		for i, m := range []map[string]any{rm, wm} {
			props, _ := m["properties"].(map[string]any)
			if _, ok := m["required"]; ok {
				paths[i] += "/required"
			} else if _, ok := props[name]; ok {
				paths[i] += "/properties/" + escape(name)
			}
		}
		j.add(paths[0], paths[1], fmt.Sprintf("%s %s: %s may lack it, %s", j.subject(at),
			j.d.pick("became required", "is no longer required"), j.d.writerData(), j.d.rejectsIt()))
	}
}

// prop is the location of property name of the object at l.
func (l loc) prop(name string) loc {
	e := "/properties/" + escape(name)
	return loc{r: l.r + e, w: l.w + e, name: joinName(l.name, name)}
}

// isTrue reports whether s allows every value.
func isTrue(s any) bool {
	switch s := s.(type) {
	case bool:
		return s
	case map[string]any:
		for k := range s {
			if assertions[k] {
				return false
			}
		}
		return true
	}
	return false
}

// isFalse reports whether s allows no value.
func isFalse(s any) bool {
	switch s := s.(type) {
	case bool:
		return !s
	case map[string]any:
		return len(s) == 1 && isTrue(s["not"])
	}
	return false
}
