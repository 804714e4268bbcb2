// Package yamlerr decodes YAML strictly (an unknown key is an error) and
// says what is wrong the way the user wrote it: the line and column, the
// key's path as in the file (sink.file_max_age, streams[2].schema_title),
// the nearest known key for a mistyped one, and what to write for a value
// of the wrong kind, never a Go type name.
package yamlerr

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/eventlogging/eventlogging/internal/suggest"
)

// Problem is one thing wrong in a YAML document.
type Problem struct {
	Line, Column int    // 1-based; Column 0 when unknown
	Key          string // the key's path, e.g. sink.file_max_age; "" when unknown
	Message      string
}

func (p Problem) String() string {
	pos := strconv.Itoa(p.Line)
	if p.Column > 0 {
		pos += ":" + strconv.Itoa(p.Column)
	}
	if p.Key == "" {
		return pos + ": " + p.Message
	}
	return pos + ": " + p.Key + ": " + p.Message
}

// Error lists the problems of one document, each "LINE:COL: key: message".
// File, when set, starts each line (file:LINE:COL: …).
type Error struct {
	File     string
	Problems []Problem
}

func (e *Error) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("\n")
		}
		if e.File != "" {
			b.WriteString(e.File)
			b.WriteByte(':')
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// Decode decodes data into v (a pointer to a struct with yaml tags),
// refusing unknown keys. An empty document leaves v as it is. Its errors
// are *Error, with file (may be "") as their file name.
func Decode(file string, data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(v)
	if err == nil || errors.Is(err, io.EOF) {
		return nil
	}
	return Explain(file, data, reflect.TypeOf(v), err)
}

var (
	unknownField = regexp.MustCompile(`^line (\d+): field (.+) not found in type (\S+)$`)
	cannotDecode = regexp.MustCompile("^line (\\d+): cannot unmarshal !!(\\w+) `(.*)` into (.+)$")
	cannotKind   = regexp.MustCompile(`^line (\d+): cannot unmarshal !!(\w+) into (.+)$`)
	syntaxLine   = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	anyLine      = regexp.MustCompile(`^line (\d+): (.*)$`)
)

// Explain turns err, from decoding data into a value of type t, into an
// *Error (errors it does not know are kept as their text).
func Explain(file string, data []byte, t reflect.Type, err error) error {
	var root yaml.Node
	_ = yaml.Unmarshal(data, &root) // a syntax error leaves it empty: positions are then lines only
	out := &Error{File: file}
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		if m := syntaxLine.FindStringSubmatch(err.Error()); m != nil {
			line, _ := strconv.Atoi(m[1])
			out.Problems = append(out.Problems, Problem{Line: line, Message: "not valid YAML: " + m[2]})
		} else {
			out.Problems = append(out.Problems, Problem{Message: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")})
		}
		return out
	}
	for _, msg := range te.Errors {
		out.Problems = append(out.Problems, explainOne(&root, t, msg))
	}
	return out
}

func explainOne(root *yaml.Node, t reflect.Type, msg string) Problem {
	if m := unknownField.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		p := Problem{Line: line}
		path, node := find(root, line, m[2], true)
		if node != nil {
			p.Column = node.Column
		}
		p.Message = fmt.Sprintf("unknown key %q", m[2])
		if near := suggest.Nearest(m[2], keysAt(t, path)); len(near) > 0 {
			p.Message += fmt.Sprintf(" (did you mean %q?)", near[0])
		}
		p.Key = strings.Join(path, ".")
		return p
	}
	if m := cannotDecode.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		p := Problem{Line: line}
		path, node := find(root, line, m[3], false)
		if node != nil {
			p.Column = node.Column
			p.Key = strings.Join(path, ".")
		}
		p.Message = want(m[2], m[3], m[4])
		return p
	}
	if m := cannotKind.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return Problem{Line: line, Message: want(m[2], "", m[3])}
	}
	line := 0
	if m := anyLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	return Problem{Line: line, Message: msg}
}

// want says what a value of YAML kind tag, written value, should be for a
// Go type named goType.
func want(tag, value, goType string) string {
	shown := value
	if tag == "str" {
		shown = strconv.Quote(value)
	}
	switch {
	case goType == "time.Duration":
		if tag == "int" || tag == "float" {
			return fmt.Sprintf("%s is not a duration: write it with a unit, e.g. %sm, %ss or %sh", value, value, value, value)
		}
		return fmt.Sprintf("%s is not a duration: write e.g. 5m, 30s or 1h30m", shown)
	case strings.HasPrefix(goType, "int") || strings.HasPrefix(goType, "uint"):
		return fmt.Sprintf("%s is not a whole number", shown)
	case strings.HasPrefix(goType, "float"):
		return fmt.Sprintf("%s is not a number", shown)
	case goType == "bool":
		return fmt.Sprintf("%s is not true or false", shown)
	case goType == "string":
		return fmt.Sprintf("want text here, not a %s (quote it if it is text)", kindName(tag))
	case strings.HasPrefix(goType, "[]"):
		return fmt.Sprintf("want a list here (- item, or [a, b]), not a %s", kindName(tag))
	case strings.HasPrefix(goType, "map["):
		return fmt.Sprintf("want keys and values here, not a %s", kindName(tag))
	}
	return fmt.Sprintf("want a mapping of keys here, not a %s", kindName(tag))
}

func kindName(tag string) string {
	switch tag {
	case "str":
		return "text"
	case "int":
		return "whole number"
	case "float":
		return "number"
	case "bool":
		return "true/false value"
	case "seq":
		return "list"
	case "map":
		return "mapping"
	case "null":
		return "null"
	}
	return tag
}

// find returns the path of keys to the node at line whose text is value
// (a key when isKey, else a value), and the node; nil when not found.
func find(root *yaml.Node, line int, value string, isKey bool) ([]string, *yaml.Node) {
	var walk func(n *yaml.Node, path []string) ([]string, *yaml.Node)
	walk = func(n *yaml.Node, path []string) ([]string, *yaml.Node) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				if p, f := walk(c, path); f != nil {
					return p, f
				}
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				here := append(append([]string(nil), path...), k.Value)
				if isKey && k.Line == line && k.Value == value {
					return here, k
				}
				if !isKey && v.Kind == yaml.ScalarNode && v.Line == line && v.Value == value {
					return here, v
				}
				if p, f := walk(v, here); f != nil {
					return p, f
				}
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				idx := append([]string(nil), path...)
				if len(idx) > 0 {
					idx[len(idx)-1] += "[" + strconv.Itoa(i) + "]"
				} else {
					idx = []string{"[" + strconv.Itoa(i) + "]"}
				}
				if !isKey && c.Kind == yaml.ScalarNode && c.Line == line && c.Value == value {
					return idx, c
				}
				if p, f := walk(c, idx); f != nil {
					return p, f
				}
			}
		}
		return nil, nil
	}
	return walk(root, nil)
}

// keysAt returns the yaml keys of the struct that holds path's last key in
// a value of type t (path[:len-1] leads to it; list indexes skipped).
func keysAt(t reflect.Type, path []string) []string {
	for _, k := range path[:max(len(path)-1, 0)] {
		if i := strings.IndexByte(k, '['); i >= 0 {
			k = k[:i]
		}
		t = deref(t)
		if t.Kind() != reflect.Struct {
			return nil
		}
		f, ok := fieldByKey(t, k)
		if !ok {
			return nil
		}
		t = f.Type
	}
	t = deref(t)
	if t.Kind() != reflect.Struct {
		return nil
	}
	var keys []string
	for i := range t.NumField() {
		if k := yamlKey(t.Field(i)); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

// deref follows pointers, slices and maps to their element type.
func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	return t
}

func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if yamlKey(t.Field(i)) == key {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

func yamlKey(f reflect.StructField) string {
	tag := f.Tag.Get("yaml")
	name, _, _ := strings.Cut(tag, ",")
	if name == "-" || !f.IsExported() {
		return ""
	}
	if name == "" {
		return strings.ToLower(f.Name)
	}
	return name
}
