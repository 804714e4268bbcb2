package compat

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// pairKey identifies a comparison of two subschemas by their identity;
// rest marks the comparison of a $ref target with the writer subschema
// without its own $ref.
type pairKey struct {
	r, w uintptr
	rest bool
}

// identity is a subschema's address, or a constant for the others.
func identity(s any) uintptr {
	switch s := s.(type) {
	case map[string]any:
		return uintptr(reflect.ValueOf(s).UnsafePointer())
	case bool:
		if s {
			return 1
		}
		return 2
	}
	return 3
}

// enter reports whether reader subschema r, reached through a $ref, is
// compared with writer subschema w for the first time. Recursive schemas
// terminate because every cycle passes a $ref and the documents are finite.
// A pair met again is compared already, or being compared further up,
// where its violations are reported.
func (j *jsonWalk) enter(r, w any, rest bool) bool {
	key := pairKey{identity(r), identity(w), rest}
	if j.seen[key] {
		return false
	}
	if j.seen == nil {
		j.seen = map[pairKey]bool{}
	}
	j.seen[key] = true
	return true
}

// deref follows s while it is only a local $ref (plus annotations), and
// moves the reader's (or writer's) side of l to the target.
func (j *jsonWalk) deref(s any, l loc, reader bool) (any, loc, bool) {
	if !j.refs {
		return s, l, false
	}
	doc := j.wDoc
	if reader {
		doc = j.rDoc
	}
	followed := false
	for range 32 {
		m, ok := s.(map[string]any)
		if !ok {
			break
		}
		ref, ok := m["$ref"].(string)
		if !ok || !onlyRef(m) {
			break
		}
		t, ptr, ok := resolveRef(doc, ref)
		if !ok {
			break
		}
		s, followed = t, true
		if reader {
			l.r = ptr
		} else {
			l.w = ptr
		}
		l.name = ref
	}
	return s, l, followed
}

// onlyRef reports whether $ref is m's only assertion.
func onlyRef(m map[string]any) bool {
	for k := range m {
		if k != "$ref" && assertions[k] {
			return false
		}
	}
	return true
}

// ref compares a $ref that sits next to other keywords. A local reader
// $ref is checked against the writer's $ref target, or against the whole
// writer subschema; a writer-only $ref is an extra writer constraint.
func (j *jsonWalk) ref(rm, wm map[string]any, l loc) {
	rr, ok := rm["$ref"].(string)
	if !ok {
		return
	}
	wr, wHas := wm["$ref"].(string)
	rt, rPtr, rOK := resolveRef(j.rDoc, rr)
	if !rOK {
		if wHas && wr == rr {
			return
		}
		j.addKw(rm, wm, l, "$ref", j.cannotProve("$ref", l))
		return
	}
	target := loc{r: rPtr, w: l.w, name: rr}
	if wHas {
		if wt, wPtr, ok := resolveRef(j.wDoc, wr); ok {
			target.w = wPtr
			if j.enter(rt, wt, false) {
				j.schema(rt, wt, target)
			}
			return
		}
	}
	if !j.enter(rt, wm, true) {
		return
	}
	j.schema(rt, j.withoutRef(wm), target)
}

// withoutRef returns m without its "$ref", the same map for the same m, so
// that enter recognises a comparison it has made.
func (j *jsonWalk) withoutRef(m map[string]any) map[string]any {
	if _, ok := m["$ref"]; !ok {
		return m
	}
	id := identity(m)
	if rest, ok := j.rests[id]; ok {
		return rest
	}
	rest := make(map[string]any, len(m))
	for k, v := range m {
		if k != "$ref" {
			rest[k] = v
		}
	}
	if j.rests == nil {
		j.rests = map[uintptr]map[string]any{}
	}
	j.rests[id] = rest
	return rest
}

// identical reports whether r and w are the same subschema, including the
// targets of any $ref inside them.
func (j *jsonWalk) identical(r, w any) bool {
	if !reflect.DeepEqual(r, w) {
		return false
	}
	return !j.refs || j.refsAgree(r, map[string]bool{})
}

// refsAgree reports whether every local $ref in s, followed transitively,
// resolves to equal subschemas in both documents.
func (j *jsonWalk) refsAgree(s any, done map[string]bool) bool {
	switch s := s.(type) {
	case map[string]any:
		for k, v := range s {
			ref, isRef := v.(string)
			if k != "$ref" || !isRef {
				if !j.refsAgree(v, done) {
					return false
				}
				continue
			}
			if done[ref] {
				continue
			}
			done[ref] = true
			rt, _, rOK := resolveRef(j.rDoc, ref)
			wt, _, wOK := resolveRef(j.wDoc, ref)
			if rOK != wOK || !reflect.DeepEqual(rt, wt) || !j.refsAgree(rt, done) {
				return false
			}
		}
	case []any:
		for _, v := range s {
			if !j.refsAgree(v, done) {
				return false
			}
		}
	}
	return true
}

// groupRefsAgree reports whether the $refs inside the reader's keywords
// of group resolve alike in both documents.
func (j *jsonWalk) groupRefsAgree(rm map[string]any, group []string) bool {
	if !j.refs {
		return true
	}
	done := map[string]bool{}
	for _, kw := range group {
		if !j.refsAgree(rm[kw], done) {
			return false
		}
	}
	return true
}

// usesRef reports whether "$ref" appears anywhere in v.
func usesRef(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v["$ref"]; ok {
			return true
		}
		for _, e := range v {
			if usesRef(e) {
				return true
			}
		}
	case []any:
		return slices.ContainsFunc(v, usesRef)
	}
	return false
}

// resolveRef resolves a local reference ("#", "#/$defs/x") in doc and
// returns the target and its JSON pointer. Other references (anchors,
// other documents) do not resolve.
func resolveRef(doc map[string]any, ref string) (any, string, bool) {
	ptr, ok := strings.CutPrefix(ref, "#")
	if !ok || (ptr != "" && ptr[0] != '/') {
		return nil, "", false
	}
	var cur any = doc
	if ptr == "" {
		return cur, "", true
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, "", false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, "", false
			}
			cur = c[i]
		default:
			return nil, "", false
		}
	}
	return cur, ptr, true
}

// escape escapes a JSON pointer token (RFC 6901).
func escape(tok string) string {
	if !strings.ContainsAny(tok, "~/") {
		return tok
	}
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}
