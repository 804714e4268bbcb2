package compat

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/avro"
)

// avroFormat compares Avro schemas with the Avro specification's schema
// resolution rules, as Java's SchemaCompatibility (and so Confluent) reads
// them. github.com/twmb/avro parses the schemas, and its CheckCompatibility
// gives a second opinion; it stops at the first problem, so the walk below
// (the same rules, over the parsed schema trees) lists them all. The two
// differ in one rule only: twmb/avro gives a field whose type is a union
// starting with "null" an implicit null default, which Java readers do not
// (they fail on old data without the field), so the walk does not either.
// If the library finds a problem the walk does not, it is reported as is.
type avroFormat struct{}

// avroSchema is a parsed Avro schema, with its tree (built on first use:
// the candidate of a transitive check builds it once).
type avroSchema struct {
	s     *avro.Schema
	root  *avro.SchemaNode
	named map[string]*avro.SchemaNode // full name → definition
}

func (avroFormat) parse(doc string) (any, error) {
	s, err := avro.Parse(doc)
	if err != nil {
		return nil, invalid(err)
	}
	return &avroSchema{s: s}, nil
}

func (avroFormat) canRead(reader, writer any, d direction) []Violation {
	r, w := reader.(*avroSchema), writer.(*avroSchema)
	out := walkAvro(r, w, d, false)
	if len(out) == 0 {
		if err := avro.CheckCompatibility(w.s, r.s); err != nil {
			out = append(out, libraryViolation(err, d))
		}
	}
	return out
}

// walkAvro lists the violations of the resolution rules when data written
// with w is read with r. nullDefault gives a field whose type is a union
// starting with "null" an implicit null default, as twmb/avro does.
func walkAvro(r, w *avroSchema, d direction, nullDefault bool) []Violation {
	a := &avroWalk{d: d, r: r.tree(), w: w.tree(), nullDefault: nullDefault, seen: map[[2]*avro.SchemaNode]bool{}}
	a.node(r.root, w.root, "", "", loc{})
	return a.out
}

// tree builds (once) the schema tree and its table of named types.
func (s *avroSchema) tree() *avroSchema {
	if s.root == nil {
		s.root = s.s.Root()
		s.named = map[string]*avro.SchemaNode{}
		collectNamed(s.root, s.named)
	}
	return s
}

func collectNamed(n *avro.SchemaNode, tab map[string]*avro.SchemaNode) {
	if n == nil {
		return
	}
	switch n.Type {
	case "record", "error", "enum", "fixed":
		tab[fullName(n)] = n
	}
	for i := range n.Fields {
		collectNamed(&n.Fields[i].Type, tab)
	}
	collectNamed(n.Items, tab)
	collectNamed(n.Values, tab)
	for i := range n.Branches {
		collectNamed(&n.Branches[i], tab)
	}
}

// libraryViolation turns twmb/avro's error into a violation; its path
// ("address.zip", "tags.items") becomes "/fields/address/fields/zip",
// "/fields/tags/items".
func libraryViolation(err error, d direction) Violation {
	var ce *avro.CompatibilityError
	if !errors.As(err, &ce) {
		return Violation{Message: err.Error() + ": " + d.cannotRead()}
	}
	var b strings.Builder
	if ce.Path != "(root)" {
		for _, tok := range strings.Split(ce.Path, ".") {
			switch tok {
			case "items", "values":
				b.WriteString("/" + tok)
			default:
				b.WriteString("/fields/" + tok)
			}
		}
	}
	return Violation{Path: b.String(), Message: fmt.Sprintf("%s (reader %s, writer %s): %s",
		ce.Detail, ce.ReaderType, ce.WriterType, d.cannotRead())}
}

// avroWalk lists every violation of the Avro resolution rules when data
// written with w is read with r.
type avroWalk struct {
	d           direction
	r, w        *avroSchema
	nullDefault bool // see walkAvro
	seen        map[[2]*avro.SchemaNode]bool
	out         []Violation
}

var avroKinds = map[string]bool{
	"null": true, "boolean": true, "int": true, "long": true, "float": true, "double": true,
	"bytes": true, "string": true, "record": true, "error": true, "enum": true, "array": true,
	"map": true, "fixed": true, "union": true,
}

// promotes lists the writer→reader promotions of the specification.
var promotes = map[[2]string]bool{
	{"int", "long"}: true, {"int", "float"}: true, {"int", "double"}: true,
	{"long", "float"}: true, {"long", "double"}: true, {"float", "double"}: true,
	{"string", "bytes"}: true, {"bytes", "string"}: true,
}

// kind is n's type with "error" read as "record".
func kind(n *avro.SchemaNode) string {
	if n.Type == "error" {
		return "record"
	}
	return n.Type
}

func isNamed(n *avro.SchemaNode) bool {
	switch n.Type {
	case "record", "error", "enum", "fixed":
		return true
	}
	return false
}

func fullName(n *avro.SchemaNode) string {
	if strings.Contains(n.Name, ".") || n.Namespace == "" {
		return n.Name
	}
	return n.Namespace + "." + n.Name
}

func shortName(name string) string {
	return name[strings.LastIndexByte(name, '.')+1:]
}

func namespaceOf(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[:i]
	}
	return ""
}

// resolve follows a name reference in namespace ns to its definition and
// returns the namespace the node's children are in.
func (s *avroSchema) resolve(n *avro.SchemaNode, ns string) (*avro.SchemaNode, string) {
	if n == nil {
		return nil, ns
	}
	if !avroKinds[n.Type] {
		def := s.named[n.Type]
		if def == nil && ns != "" && !strings.Contains(n.Type, ".") {
			def = s.named[ns+"."+n.Type]
		}
		if def == nil {
			return nil, ns
		}
		n = def
	}
	if isNamed(n) {
		ns = namespaceOf(fullName(n))
	}
	return n, ns
}

// namesMatch: same unqualified name, or a reader alias naming the writer
// (a dotted alias its full name, a bare alias its unqualified name).
func namesMatch(r, w *avro.SchemaNode) bool {
	wFull := fullName(w)
	if shortName(fullName(r)) == shortName(wFull) {
		return true
	}
	for _, a := range r.Aliases {
		if a == wFull || (!strings.Contains(a, ".") && a == shortName(wFull)) {
			return true
		}
	}
	return false
}

// typeText describes n for messages: "long", "long (timestamp-millis)",
// `record "ns.User"`, "union [null, string]".
func (s *avroSchema) typeText(n *avro.SchemaNode, ns string) string {
	n, ns = s.resolve(n, ns)
	if n == nil {
		return "unknown type"
	}
	switch kind(n) {
	case "record", "enum", "fixed":
		return fmt.Sprintf("%s %q", kind(n), fullName(n))
	case "union":
		parts := make([]string, len(n.Branches))
		for i := range n.Branches {
			b, _ := s.resolve(&n.Branches[i], ns)
			switch {
			case b == nil:
				parts[i] = n.Branches[i].Type
			case isNamed(b):
				parts[i] = fullName(b)
			default:
				parts[i] = b.Type
			}
		}
		return "union " + quoteList(parts)
	}
	if n.LogicalType != "" {
		return n.Type + " (" + n.LogicalType + ")"
	}
	return n.Type
}

func (a *avroWalk) add(l loc, msg string) {
	a.out = append(a.out, Violation{Path: l.path(a.d), Message: msg})
}

// subject names l in messages: `field "address.zip"`, `items of "tags"`,
// `values of "counts"`, "the schema".
func subjectAvro(name string) string {
	switch {
	case name == "":
		return "the schema"
	case strings.HasSuffix(name, "[]"):
		return "items of " + subjectAvro(strings.TrimSuffix(name, "[]"))
	case strings.HasSuffix(name, "{}"):
		return "values of " + subjectAvro(strings.TrimSuffix(name, "{}"))
	}
	return fmt.Sprintf("field %q", name)
}

func (a *avroWalk) typeChanged(r, w *avro.SchemaNode, rNS, wNS string, l loc, tail string) {
	from, to := a.d.fromTo(a.r.typeText(r, rNS), a.w.typeText(w, wNS))
	a.add(l, fmt.Sprintf("%s changed type from %s to %s: %s%s", subjectAvro(l.name), from, to, a.d.cannotRead(), tail))
}

// node compares reader node r (in namespace rNS) with writer node w.
func (a *avroWalk) node(r, w *avro.SchemaNode, rNS, wNS string, l loc) {
	r, rNS = a.r.resolve(r, rNS)
	w, wNS = a.w.resolve(w, wNS)
	if r == nil || w == nil {
		return // an unresolved name; the library's verdict stands
	}
	pair := [2]*avro.SchemaNode{r, w}
	if a.seen[pair] {
		return
	}
	a.seen[pair] = true

	if kind(w) == "union" {
		var lost []string
		for i := range w.Branches {
			wb, wbNS := a.w.resolve(&w.Branches[i], wNS)
			if wb == nil {
				continue
			}
			rb, rbNS := r, rNS
			if kind(r) == "union" {
				rb, rbNS = a.matchBranch(r, rNS, wb)
			}
			if rb == nil || !a.sameShape(rb, wb) {
				lost = append(lost, a.w.typeText(wb, wbNS))
				continue
			}
			a.node(rb, wb, rbNS, wbNS, l)
		}
		if len(lost) > 0 {
			a.typeChanged(r, w, rNS, wNS, l, " whose value is "+strings.Join(lost, " or "))
		}
		return
	}
	if kind(r) == "union" {
		rb, rbNS := a.matchBranch(r, rNS, w)
		if rb == nil {
			a.typeChanged(r, w, rNS, wNS, l, "")
			return
		}
		a.node(rb, w, rbNS, wNS, l)
		return
	}
	if !a.sameShape(r, w) {
		if kind(r) == kind(w) && isNamed(r) && !namesMatch(r, w) {
			from, to := a.d.fromTo(fullName(r), fullName(w))
			hint := ""
			if a.d.readerIsNew() {
				hint = fmt.Sprintf(" (list %q in its aliases)", fullName(w))
			}
			a.add(l, fmt.Sprintf("%s changed %s name from %q to %q: %s%s", subjectAvro(l.name), kind(r), from, to, a.d.cannotRead(), hint))
			return
		}
		if kind(r) == "fixed" && kind(w) == "fixed" {
			from, to := a.d.fromTo(fmt.Sprint(r.Size), fmt.Sprint(w.Size))
			a.add(l, fmt.Sprintf("%s changed fixed size from %s to %s: %s", subjectAvro(l.name), from, to, a.d.cannotRead()))
			return
		}
		a.typeChanged(r, w, rNS, wNS, l, "")
		return
	}
	if kind(r) != kind(w) {
		return // a promotion
	}
	switch kind(r) {
	case "record":
		a.record(r, w, rNS, wNS, l)
	case "enum":
		a.enum(r, w, l)
	case "array":
		a.node(r.Items, w.Items, rNS, wNS, loc{r: l.r + "/items", w: l.w + "/items", name: l.name + "[]"})
	case "map":
		a.node(r.Values, w.Values, rNS, wNS, loc{r: l.r + "/values", w: l.w + "/values", name: l.name + "{}"})
	}
	if r.LogicalType == "decimal" && w.LogicalType == "decimal" && (r.Precision != w.Precision || r.Scale != w.Scale) {
		from, to := a.d.fromTo(fmt.Sprintf("(%d, %d)", r.Precision, r.Scale), fmt.Sprintf("(%d, %d)", w.Precision, w.Scale))
		a.add(l, fmt.Sprintf("%s changed decimal precision and scale from %s to %s: %s", subjectAvro(l.name), from, to, a.d.cannotRead()))
	}
}

// sameShape reports whether non-union r can take a writer value of
// non-union w at the top level: the same kind (and, for named types, a
// matching name; for fixed, the same size) or a promotion.
func (a *avroWalk) sameShape(r, w *avro.SchemaNode) bool {
	if kind(r) != kind(w) {
		return promotes[[2]string{kind(w), kind(r)}]
	}
	if isNamed(r) && !namesMatch(r, w) {
		return false
	}
	return kind(r) != "fixed" || r.Size == w.Size
}

// matchBranch picks the reader union branch a writer value of w resolves
// to, as twmb/avro does: same kind with full name or alias, then same
// unqualified name, then the first promotion.
func (a *avroWalk) matchBranch(r *avro.SchemaNode, rNS string, w *avro.SchemaNode) (*avro.SchemaNode, string) {
	type cand struct {
		n  *avro.SchemaNode
		ns string
	}
	branches := make([]cand, 0, len(r.Branches))
	for i := range r.Branches {
		if b, ns := a.r.resolve(&r.Branches[i], rNS); b != nil {
			branches = append(branches, cand{b, ns})
		}
	}
	sizeOK := func(b *avro.SchemaNode) bool { return kind(b) != "fixed" || b.Size == w.Size }
	for _, b := range branches {
		if kind(b.n) != kind(w) || !sizeOK(b.n) {
			continue
		}
		if !isNamed(w) || fullName(b.n) == fullName(w) || slices.Contains(b.n.Aliases, fullName(w)) {
			return b.n, b.ns
		}
	}
	for _, b := range branches {
		if kind(b.n) == kind(w) && isNamed(w) && sizeOK(b.n) && namesMatch(b.n, w) {
			return b.n, b.ns
		}
	}
	for _, b := range branches {
		if promotes[[2]string{kind(w), kind(b.n)}] {
			return b.n, b.ns
		}
	}
	return nil, rNS
}

// record matches reader fields to writer fields by name or reader alias.
func (a *avroWalk) record(r, w *avro.SchemaNode, rNS, wNS string, l loc) {
	byName := make(map[string]*avro.SchemaField, len(w.Fields))
	for i := range w.Fields {
		byName[w.Fields[i].Name] = &w.Fields[i]
	}
	matched := map[string]bool{}
	var missing []*avro.SchemaField
	for i := range r.Fields {
		rf := &r.Fields[i]
		wf := byName[rf.Name]
		for _, alias := range rf.Aliases {
			if wf != nil {
				break
			}
			wf = byName[alias]
		}
		if wf == nil {
			implicit := a.nullDefault && a.nullFirst(&rf.Type, rNS)
			if !rf.HasDefault && !implicit {
				missing = append(missing, rf)
			}
			continue
		}
		matched[wf.Name] = true
		name := rf.Name
		if !a.d.readerIsNew() {
			name = wf.Name
		}
		at := loc{r: l.r + "/fields/" + rf.Name, w: l.w + "/fields/" + wf.Name, name: joinName(l.name, name)}
		a.node(&rf.Type, &wf.Type, rNS, wNS, at)
	}
	a.claims(r, w, l)
	var unmatched []string
	for i := range w.Fields {
		if !matched[w.Fields[i].Name] {
			unmatched = append(unmatched, fmt.Sprintf("%q", w.Fields[i].Name))
		}
	}
	for _, rf := range missing {
		at := loc{r: l.r + "/fields/" + rf.Name, w: l.w, name: joinName(l.name, rf.Name)}
		if a.d.readerIsNew() {
			hint := ""
			if a.nullFirst(&rf.Type, rNS) {
				hint = ` (a union with "null" needs "default": null too)`
			}
			if len(unmatched) > 0 {
				hint = fmt.Sprintf(" (if it renames %s, list the old name in its aliases)", strings.Join(unmatched, " or "))
			}
			a.add(at, fmt.Sprintf("%s was added without a default: %s, which lacks it%s", subjectAvro(at.name), a.d.cannotRead(), hint))
			continue
		}
		hint := ""
		for i := range w.Fields {
			if slices.Contains(w.Fields[i].Aliases, rf.Name) {
				hint = fmt.Sprintf(" (the alias on %s only helps its own readers)", subjectAvro(joinName(l.name, w.Fields[i].Name)))
			}
		}
		a.add(at, fmt.Sprintf("%s was removed, but %s has no default for it: %s, which lacks it%s", subjectAvro(at.name), a.d.readerNoun(), a.d.cannotRead(), hint))
	}
}

// enum: every writer symbol must be a reader symbol, unless the reader
// has a default symbol.
func (a *avroWalk) enum(r, w *avro.SchemaNode, l loc) {
	if r.HasEnumDefault {
		return
	}
	var lost []string
	for _, s := range w.Symbols {
		if !slices.Contains(r.Symbols, s) {
			lost = append(lost, fmt.Sprintf("%q", s))
		}
	}
	if len(lost) == 0 {
		return
	}
	a.add(l, fmt.Sprintf("%s %s symbols %s, and %s has no enum default: %s", subjectAvro(l.name),
		a.d.pick("lost", "gained"), quoteList(lost), a.d.readerNoun(), a.d.cannotRead()))
}

// claims reports two writer fields that resolve to one reader field, one
// by name and one by a reader alias (or both by aliases): the data would
// be ambiguous.
func (a *avroWalk) claims(r, w *avro.SchemaNode, l loc) {
	index := make(map[string]int, len(r.Fields))
	for i := range r.Fields {
		if _, ok := index[r.Fields[i].Name]; !ok {
			index[r.Fields[i].Name] = i
		}
	}
	byAlias := map[string]int{}
	for i := range r.Fields {
		for _, alias := range r.Fields[i].Aliases {
			if _, ok := byAlias[alias]; !ok {
				byAlias[alias] = i
			}
		}
	}
	claimedBy := make(map[int]string, len(w.Fields))
	for _, wf := range w.Fields {
		i, ok := index[wf.Name]
		if !ok {
			if i, ok = byAlias[wf.Name]; !ok {
				continue
			}
		}
		first, taken := claimedBy[i]
		if !taken {
			claimedBy[i] = wf.Name
			continue
		}
		rf := r.Fields[i]
		at := loc{r: l.r + "/fields/" + rf.Name, w: l.w + "/fields/" + wf.Name, name: joinName(l.name, rf.Name)}
		a.add(at, fmt.Sprintf("%s of %s matches both %q and %q of %s by name or alias: %s (drop one of its aliases)",
			subjectAvro(at.name), a.d.readerNoun(), first, wf.Name, a.d.writerNoun(), a.d.cannotRead()))
	}
}

// nullFirst reports whether reader type n is a union of two or more
// branches whose first is "null".
func (a *avroWalk) nullFirst(n *avro.SchemaNode, ns string) bool {
	n, _ = a.r.resolve(n, ns)
	return n != nil && kind(n) == "union" && len(n.Branches) >= 2 && n.Branches[0].Type == "null"
}
