package dashboard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/url"
	"strconv"
	"strings"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/inspect"
)

// Limits on the documents highlightJSON renders: beyond them the page
// shows the raw text only.
const (
	maxHighlightBytes = 1 << 20
	maxHighlightDepth = 200
)

// errTrailingData reports text after a document's JSON value.
var errTrailingData = errors.New("data after the JSON value")

// jsonKind is the type of a JSON value.
type jsonKind uint8

const (
	kindObject jsonKind = iota
	kindArray
	kindString
	kindNumber
	kindBool
	kindNull
)

// spanClass is the CSS class of a value of each kind.
var spanClass = [...]string{
	kindObject: "j-obj",
	kindArray:  "j-arr",
	kindString: "j-str",
	kindNumber: "j-num",
	kindBool:   "j-bool",
	kindNull:   "j-null",
}

// jsonNode is one value of a decoded document; objects keep the key order
// of the original text.
type jsonNode struct {
	kind jsonKind
	text string      // scalars: the value as JSON text
	keys []string    // objects: the keys, in document order
	kids []*jsonNode // objects and arrays: the values
	// marks are the violations shown on this value ("path: message");
	// missing is set when one of them names a child that does not exist.
	marks   []string
	missing bool
}

// highlightJSON renders doc indented as HTML, each value wrapped in a
// <span data-path="JSON pointer">; the values the violations point at
// get class "violation" and a title with their messages. A violation
// naming a property or index that does not exist marks the deepest value
// that does (for a missing required property: its parent object), with
// class "violation-missing" too. Every text is HTML-escaped. It fails when
// doc is not one JSON value, or is too large or deep to show.
func highlightJSON(doc []byte, violations []inspect.Violation) (template.HTML, error) {
	if len(doc) > maxHighlightBytes {
		return "", fmt.Errorf("event of %d bytes is too large to highlight", len(doc))
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	root, err := decodeNode(dec, 0)
	if err != nil {
		return "", fmt.Errorf("decode event: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("decode event: %w", errTrailingData)
	}
	for _, v := range violations {
		root.mark(v)
	}
	var b strings.Builder
	b.Grow(len(doc) * 4)
	root.render(&b, "", 0)
	// Safe: every text written above went through HTMLEscapeString.
	return template.HTML(b.String()), nil
}

// decodeNode reads one value from dec's token stream.
func decodeNode(dec *json.Decoder, depth int) (*jsonNode, error) {
	if depth > maxHighlightDepth {
		return nil, fmt.Errorf("nested deeper than %d", maxHighlightDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch v := tok.(type) {
	case json.Delim:
		n := &jsonNode{kind: kindArray}
		if v == '{' {
			n.kind = kindObject
		}
		for dec.More() {
			if n.kind == kindObject {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, _ := kt.(string) // the decoder only yields string keys
				n.keys = append(n.keys, key)
			}
			kid, err := decodeNode(dec, depth+1)
			if err != nil {
				return nil, err
			}
			n.kids = append(n.kids, kid)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		return n, nil
	case string:
		return &jsonNode{kind: kindString, text: string(capsule.AppendString(nil, v))}, nil
	case json.Number:
		return &jsonNode{kind: kindNumber, text: v.String()}, nil
	case bool:
		return &jsonNode{kind: kindBool, text: strconv.FormatBool(v)}, nil
	case nil:
		return &jsonNode{kind: kindNull, text: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

// mark attaches a violation to the value its path points at, or to the
// deepest existing value on the way (the root for a malformed path).
func (n *jsonNode) mark(v inspect.Violation) {
	where := v.Path
	if where == "" {
		where = "(root)"
	}
	title := where + ": " + v.Message
	tokens, ok := parsePointer(v.Path)
	if !ok {
		n.marks = append(n.marks, title)
		return
	}
	at := n
	for _, t := range tokens {
		kid := at.child(t)
		if kid == nil {
			at.marks = append(at.marks, title)
			at.missing = true
			return
		}
		at = kid
	}
	at.marks = append(at.marks, title)
}

// child is the value a pointer token selects in n, or nil. With duplicate
// keys the last one counts, as for a decoder into a map.
func (n *jsonNode) child(token string) *jsonNode {
	switch n.kind {
	case kindObject:
		for i := len(n.keys) - 1; i >= 0; i-- {
			if n.keys[i] == token {
				return n.kids[i]
			}
		}
	case kindArray:
		if token == "" || (len(token) > 1 && token[0] == '0') {
			return nil
		}
		i, err := strconv.Atoi(token)
		if err != nil || i < 0 || i >= len(n.kids) {
			return nil
		}
		return n.kids[i]
	}
	return nil
}

// pointerUnescaper decodes the ~1 and ~0 escapes of a pointer token (left
// to right, so "~01" is "~1").
var pointerUnescaper = strings.NewReplacer("~1", "/", "~0", "~")

// pointerEscaper encodes a key as a pointer token.
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// parsePointer splits a JSON pointer (RFC 6901) into its unescaped tokens;
// the URI fragment form "#/a/b" is accepted too. ok is false for a
// malformed pointer.
func parsePointer(p string) (tokens []string, ok bool) {
	if strings.HasPrefix(p, "#") {
		u, err := url.PathUnescape(p[1:])
		if err != nil {
			return nil, false
		}
		p = u
	}
	if p == "" {
		return nil, true
	}
	if p[0] != '/' {
		return nil, false
	}
	parts := strings.Split(p[1:], "/")
	for i, s := range parts {
		for j := 0; j < len(s); j++ {
			if s[j] == '~' {
				if j+1 == len(s) || (s[j+1] != '0' && s[j+1] != '1') {
					return nil, false
				}
				j++
			}
		}
		parts[i] = pointerUnescaper.Replace(s)
	}
	return parts, true
}

// render writes n as indented HTML; path is n's JSON pointer.
func (n *jsonNode) render(b *strings.Builder, path string, depth int) {
	b.WriteString(`<span class="`)
	b.WriteString(spanClass[n.kind])
	if len(n.marks) > 0 {
		b.WriteString(" violation")
		if n.missing {
			b.WriteString(" violation-missing")
		}
	}
	b.WriteString(`" data-path="`)
	b.WriteString(template.HTMLEscapeString(path))
	b.WriteByte('"')
	if len(n.marks) > 0 {
		b.WriteString(` title="`)
		b.WriteString(template.HTMLEscapeString(strings.Join(n.marks, "\n")))
		b.WriteByte('"')
	}
	b.WriteByte('>')
	switch n.kind {
	case kindObject, kindArray:
		open, closing := byte('['), byte(']')
		if n.kind == kindObject {
			open, closing = '{', '}'
		}
		if len(n.marks) > 0 {
			// A marked container: its opening delimiter carries the mark
			// visibly (the whole span is shaded).
			b.WriteString(`<span class="j-open">`)
			b.WriteByte(open)
			b.WriteString("</span>")
		} else {
			b.WriteByte(open)
		}
		for i, kid := range n.kids {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
			indent(b, depth+1)
			var kidPath string
			if n.kind == kindObject {
				b.WriteString(`<span class="j-key">`)
				b.WriteString(template.HTMLEscapeString(string(capsule.AppendString(nil, n.keys[i]))))
				b.WriteString(`</span>: `)
				kidPath = path + "/" + pointerEscaper.Replace(n.keys[i])
			} else {
				kidPath = path + "/" + strconv.Itoa(i)
			}
			kid.render(b, kidPath, depth+1)
		}
		if len(n.kids) > 0 {
			b.WriteByte('\n')
			indent(b, depth)
		}
		b.WriteByte(closing)
	default:
		b.WriteString(template.HTMLEscapeString(n.text))
	}
	b.WriteString("</span>")
}

func indent(b *strings.Builder, depth int) {
	for range depth {
		b.WriteString("  ")
	}
}
