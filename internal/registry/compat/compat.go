package compat

import (
	"errors"
	"fmt"
	"strings"

	"github.com/eventlogging/eventlogging/internal/schema"
)

// Level is a compatibility level, spelled as in Confluent Schema Registry's
// /config API.
type Level string

// The compatibility levels. A non-transitive level compares a new schema
// with the latest existing version only, a transitive one with every
// existing version.
const (
	// None accepts every new schema that parses.
	None Level = "NONE"
	// Backward: readers of the new schema can read data written with the
	// latest existing version.
	Backward Level = "BACKWARD"
	// BackwardTransitive: readers of the new schema can read data written
	// with every existing version.
	BackwardTransitive Level = "BACKWARD_TRANSITIVE"
	// Forward: readers of the latest existing version can read data
	// written with the new schema.
	Forward Level = "FORWARD"
	// ForwardTransitive: readers of every existing version can read data
	// written with the new schema.
	ForwardTransitive Level = "FORWARD_TRANSITIVE"
	// Full is Backward and Forward.
	Full Level = "FULL"
	// FullTransitive is BackwardTransitive and ForwardTransitive.
	FullTransitive Level = "FULL_TRANSITIVE"
)

// levels lists every Level in the order error messages name them.
var levels = []Level{None, Backward, BackwardTransitive, Forward, ForwardTransitive, Full, FullTransitive}

// Schema types, as in Confluent's "schemaType" field. The empty string
// means [TypeAvro].
const (
	TypeAvro = "AVRO"
	TypeJSON = "JSON"
)

var (
	// ErrInvalidLevel is wrapped by errors for a compatibility level that is
	// not one of the Level constants.
	ErrInvalidLevel = errors.New("invalid compatibility level")
	// ErrUnsupportedType is wrapped by errors for a schema type other than
	// AVRO and JSON.
	ErrUnsupportedType = errors.New("unsupported schema type")
)

// ParseLevel returns the Level named by s, ignoring case and surrounding
// space. The error wraps [ErrInvalidLevel] and names the valid levels.
func ParseLevel(s string) (Level, error) {
	want := Level(strings.ToUpper(strings.TrimSpace(s)))
	for _, l := range levels {
		if l == want {
			return l, nil
		}
	}
	names := make([]string, len(levels))
	for i, l := range levels {
		names[i] = string(l)
	}
	return "", fmt.Errorf("%w %q: want one of %s", ErrInvalidLevel, s, strings.Join(names, ", "))
}

// backward reports whether l requires readers of the new schema to read
// old data.
func (l Level) backward() bool {
	return l == Backward || l == BackwardTransitive || l == Full || l == FullTransitive
}

// forward reports whether l requires readers of old schemas to read new
// data.
func (l Level) forward() bool {
	return l == Forward || l == ForwardTransitive || l == Full || l == FullTransitive
}

// transitive reports whether l compares with every existing version.
func (l Level) transitive() bool {
	return l == BackwardTransitive || l == ForwardTransitive || l == FullTransitive
}

// Violation is one reason a schema cannot follow another.
type Violation struct {
	// Path locates the break in the new schema ([Check]) or the reader
	// ([CanRead]). For JSON Schema it is an RFC 6901 JSON pointer into the
	// normalised document ("/properties/count/type"); for Avro it is a
	// path of field names ("/fields/address/fields/zip", "/fields/tags/items").
	// "" is the root.
	Path string `json:"path"`
	// Message says in plain English what changed and which readers it
	// breaks.
	Message string `json:"message"`
}

// String returns "path: message", with "(root)" for the empty path.
func (v Violation) String() string {
	p := v.Path
	if p == "" {
		p = "(root)"
	}
	return p + ": " + v.Message
}

// Check decides whether candidate may follow existing (oldest first) under
// level, and returns every violation; none means compatible.
//
// schemaType is "AVRO" or "JSON" in any case; "" means AVRO, as in
// Confluent. Backward levels ask whether readers of candidate can read data
// written with an existing version ([CanRead](candidate, old)), forward
// levels whether readers of an existing version can read data written with
// candidate ([CanRead](old, candidate)), full levels both. Non-transitive
// levels compare with the last element of existing only, transitive levels
// with every element; then each message starts "existing schema i of n: ".
// Paths point into candidate.
//
// The candidate is parsed at every level, NONE included; existing versions
// only when compared. An error means a schema does not parse (it wraps
// [schema.ErrInvalidSchema]), the level is unknown ([ErrInvalidLevel]) or
// the type unsupported ([ErrUnsupportedType]). Check does not compile JSON
// schemas against their metaschema; the caller does that before
// registering.
func Check(schemaType string, level Level, candidate string, existing []string) ([]Violation, error) {
	f, err := formatFor(schemaType)
	if err != nil {
		return nil, err
	}
	if _, err := ParseLevel(string(level)); err != nil {
		return nil, err
	}
	next, err := f.parse(candidate)
	if err != nil {
		return nil, fmt.Errorf("compat: new schema: %w", err)
	}
	if level == None || len(existing) == 0 {
		return nil, nil
	}
	first := len(existing) - 1
	if level.transitive() {
		first = 0
	}
	var out []Violation
	for i := first; i < len(existing); i++ {
		if existing[i] == candidate {
			continue // the same text: compatible at every level
		}
		old, err := f.parse(existing[i])
		if err != nil {
			return nil, fmt.Errorf("compat: existing schema %d of %d: %w", i+1, len(existing), err)
		}
		var vs []Violation
		if level.backward() {
			vs = append(vs, f.canRead(next, old, dirBackward)...)
		}
		if level.forward() {
			vs = append(vs, f.canRead(old, next, dirForward)...)
		}
		if len(existing)-first > 1 {
			prefix := fmt.Sprintf("existing schema %d of %d: ", i+1, len(existing))
			for j := range vs {
				vs[j].Message = prefix + vs[j].Message
			}
		}
		out = append(out, vs...)
	}
	return out, nil
}

// CanRead reports every violation met when data written with writer is read
// with reader; none means the reader can read all of it. Paths point into
// reader, and messages describe the writer as the earlier schema ("added"
// means present in the reader only). Errors are as for [Check].
func CanRead(schemaType, reader, writer string) ([]Violation, error) {
	f, err := formatFor(schemaType)
	if err != nil {
		return nil, err
	}
	r, err := f.parse(reader)
	if err != nil {
		return nil, fmt.Errorf("compat: reader schema: %w", err)
	}
	w, err := f.parse(writer)
	if err != nil {
		return nil, fmt.Errorf("compat: writer schema: %w", err)
	}
	return f.canRead(r, w, dirCanRead), nil
}

// format is one schema language: how to parse a document and how to
// compare two parsed documents.
type format interface {
	parse(doc string) (any, error)
	canRead(reader, writer any, d direction) []Violation
}

func formatFor(schemaType string) (format, error) {
	switch strings.ToUpper(strings.TrimSpace(schemaType)) {
	case "", TypeAvro:
		return avroFormat{}, nil
	case TypeJSON:
		return jsonFormat{}, nil
	}
	return nil, fmt.Errorf("compat: %w %q: want AVRO or JSON", ErrUnsupportedType, schemaType)
}

// invalid wraps a parse error so that callers can tell it apart.
func invalid(err error) error {
	if errors.Is(err, schema.ErrInvalidSchema) {
		return err
	}
	return fmt.Errorf("%w: %w", schema.ErrInvalidSchema, err)
}

// direction says which of the two compared schemas is the new one, which
// decides how messages describe a difference.
type direction uint8

const (
	// dirCanRead: CanRead; the writer plays the old schema.
	dirCanRead direction = iota
	// dirBackward: the reader is the new schema.
	dirBackward
	// dirForward: the reader is the old schema.
	dirForward
)

// readerIsNew reports whether a difference reads as "the reader changed":
// something present in the reader only was added.
func (d direction) readerIsNew() bool { return d != dirForward }

// pick returns ifReaderNew when the reader is the new (or, for CanRead,
// the later) schema, else ifReaderOld.
func (d direction) pick(ifReaderNew, ifReaderOld string) string {
	if d.readerIsNew() {
		return ifReaderNew
	}
	return ifReaderOld
}

// fromTo orders a reader and a writer value as a change from old to new.
func (d direction) fromTo(readerVal, writerVal string) (from, to string) {
	if d.readerIsNew() {
		return writerVal, readerVal
	}
	return readerVal, writerVal
}

// readerNoun names the reader schema.
func (d direction) readerNoun() string {
	switch d {
	case dirBackward:
		return "the new schema"
	case dirForward:
		return "the old schema"
	}
	return "the reader"
}

// writerNoun names the writer schema.
func (d direction) writerNoun() string {
	switch d {
	case dirBackward:
		return "the old schema"
	case dirForward:
		return "the new schema"
	}
	return "the writer"
}

// writerData names the data written with the writer schema.
func (d direction) writerData() string {
	switch d {
	case dirBackward:
		return "old data"
	case dirForward:
		return "new data"
	}
	return "the writer's data"
}

// readers is the subject of "reject" and "cannot read": the readers of
// the reader schema.
func (d direction) readers() string {
	switch d {
	case dirBackward:
		return "readers of the new schema"
	case dirForward:
		return "readers of the old schema"
	}
	return "the reader"
}

// rejects is the usual consequence for JSON Schema: "readers of the new
// schema reject old data".
func (d direction) rejects() string {
	verb := " reject "
	if d == dirCanRead {
		verb = " rejects "
	}
	return d.readers() + verb + d.writerData()
}

// rejectsIt is the consequence for something writer data may contain:
// "which readers of the new schema reject".
func (d direction) rejectsIt() string {
	if d == dirCanRead {
		return "which the reader rejects"
	}
	return "which " + d.readers() + " reject"
}

// cannotRead is the usual consequence for Avro: "readers of the new schema
// cannot read old data".
func (d direction) cannotRead() string {
	return d.readers() + " cannot read " + d.writerData()
}

// loc is a position in the two schemas being compared: a path in each, as
// they may differ (a renamed Avro field, a followed $ref), and the name
// messages use for it.
type loc struct {
	r, w string // paths in the reader and the writer
	name string // human name: "" for the root, "user.address.zip", "tags[]"
}

// path returns the path reported for d: into the new schema, or into the
// reader for CanRead.
func (l loc) path(d direction) string {
	if d == dirForward {
		return l.w
	}
	return l.r
}

// joinName appends a field or property name to a human name.
func joinName(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// quoteList renders values as a bracketed, comma-separated list.
func quoteList(vals []string) string {
	return "[" + strings.Join(vals, ", ") + "]"
}
