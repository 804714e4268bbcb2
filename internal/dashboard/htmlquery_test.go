package dashboard

import (
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
)

// elem is an element of a parsed page, enough to check the documented
// selectors.
type elem struct {
	tag   string
	attrs map[string]string
	kids  []*elem
	nodes []any // *elem or string, in document order
}

// parseHTML parses a page with encoding/xml in its lenient HTML mode
// (void elements, bare attributes, HTML entities).
func parseHTML(t testing.TB, body string) *elem {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(body))
	d.Strict = false
	d.AutoClose = xml.HTMLAutoClose
	d.Entity = xml.HTMLEntity
	root := &elem{tag: "#root"}
	stack := []*elem{root}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("parse page: %v\n%s", err, body)
		}
		top := stack[len(stack)-1]
		switch tok := tok.(type) {
		case xml.StartElement:
			e := &elem{tag: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				name := a.Name.Local
				if a.Name.Space != "" {
					name = a.Name.Space + ":" + name
				}
				e.attrs[name] = a.Value
			}
			top.kids = append(top.kids, e)
			top.nodes = append(top.nodes, e)
			stack = append(stack, e)
		case xml.EndElement:
			if len(stack) > 1 {
				stack = stack[:len(stack)-1]
			}
		case xml.CharData:
			top.nodes = append(top.nodes, string(tok))
		}
	}
	return root
}

// Text is the element's text content.
func (e *elem) Text() string {
	var b strings.Builder
	var walk func(*elem)
	walk = func(e *elem) {
		for _, n := range e.nodes {
			switch n := n.(type) {
			case string:
				b.WriteString(n)
			case *elem:
				walk(n)
			}
		}
	}
	walk(e)
	return b.String()
}

// hasClass reports whether the element has class c.
func (e *elem) hasClass(c string) bool {
	return strings.Contains(" "+e.attrs["class"]+" ", " "+c+" ")
}

// matches tests one compound selector: tag, #id, .class and [attr=value]
// or [attr] parts, e.g. `tr.stream[data-topic=x]`.
func (e *elem) matches(sel string) bool {
	for sel != "" {
		var part string
		switch sel[0] {
		case '[':
			end := strings.IndexByte(sel, ']')
			part, sel = sel[:end+1], sel[end+1:]
			k, v, hasV := strings.Cut(part[1:len(part)-1], "=")
			got, ok := e.attrs[k]
			if !ok || (hasV && got != v) {
				return false
			}
			continue
		case '.', '#':
			end := strings.IndexAny(sel[1:], ".#[")
			if end < 0 {
				part, sel = sel, ""
			} else {
				part, sel = sel[:end+1], sel[end+1:]
			}
			if part[0] == '.' && !e.hasClass(part[1:]) {
				return false
			}
			if part[0] == '#' && e.attrs["id"] != part[1:] {
				return false
			}
		default:
			end := strings.IndexAny(sel, ".#[")
			if end < 0 {
				part, sel = sel, ""
			} else {
				part, sel = sel[:end], sel[end:]
			}
			if e.tag != part {
				return false
			}
		}
	}
	return true
}

// all returns the descendants matching a selector: compound selectors
// separated by spaces (descendant combinator). Attribute values may not
// contain spaces.
func (e *elem) all(selector string) []*elem {
	found := []*elem{e}
	for _, sel := range strings.Fields(selector) {
		var next []*elem
		seen := map[*elem]bool{}
		for _, f := range found {
			var walk func(*elem)
			walk = func(x *elem) {
				for _, k := range x.kids {
					if k.matches(sel) && !seen[k] {
						seen[k] = true
						next = append(next, k)
					}
					walk(k)
				}
			}
			walk(f)
		}
		found = next
	}
	return found
}

// one returns the single element matching selector, failing the test
// otherwise.
func (e *elem) one(t testing.TB, selector string) *elem {
	t.Helper()
	found := e.all(selector)
	if len(found) != 1 {
		t.Fatalf("selector %q: %d matches, want 1", selector, len(found))
	}
	return found[0]
}
