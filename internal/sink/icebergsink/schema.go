package icebergsink

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"

	"github.com/eventlogging/eventlogging/internal/sink/columns"
)

// kind is the Iceberg shape of a JSON Schema node. The nodes are
// classified by internal/sink/columns, as for the file sink's Parquet
// files, so a schema gives the same columns in both.
type kind uint8

const (
	kindStruct    kind = iota // object with properties: a struct
	kindString                // string
	kindLong                  // integer → long
	kindDouble                // number → double
	kindBool                  // boolean
	kindJSON                  // anything else: its JSON text in a string column
	kindTimestamp             // the receive time column dt: timestamptz
)

var kindNames = [...]string{"object", "string", "integer", "number", "boolean", "JSON", "timestamp"}

// field is a column of a schema version: a JSON Schema node mapped to an
// Iceberg type. Struct members are sorted by name.
type field struct {
	name   string
	kind   kind
	fields []*field
}

// icebergType returns the Iceberg type of a field (for a new column).
// Struct members get ids from next; the caller's schema reassigns them.
func (f *field) icebergType(next *int) iceberg.Type {
	switch f.kind {
	case kindStruct:
		st := &iceberg.StructType{}
		for _, c := range f.fields {
			*next++
			id := *next
			st.FieldList = append(st.FieldList, iceberg.NestedField{ID: id, Name: c.name, Type: c.icebergType(next)})
		}
		return st
	case kindLong:
		return iceberg.PrimitiveTypes.Int64
	case kindDouble:
		return iceberg.PrimitiveTypes.Float64
	case kindBool:
		return iceberg.PrimitiveTypes.Bool
	case kindTimestamp:
		return iceberg.PrimitiveTypes.TimestampTz
	default:
		return iceberg.PrimitiveTypes.String
	}
}

// icebergSchema returns the initial Iceberg schema of a table whose first
// version is root: every column optional.
func (f *field) icebergSchema() *iceberg.Schema {
	next := 0
	var fields []iceberg.NestedField
	for _, c := range f.fields {
		next++
		id := next
		fields = append(fields, iceberg.NestedField{ID: id, Name: c.name, Type: c.icebergType(&next)})
	}
	return iceberg.NewSchema(0, fields...)
}

// clientDT is the column an Event Platform event's own "dt" (the client's
// event time) is stored in: "dt" is the receive time (meta.dt).
const clientDT = "client_dt"

// buildFields builds the columns of a schema version from the registry's
// normalised JSON Schema. A legacy EventLogging schema describes the
// capsule's "event"; the capsule's own fields are added. An Event Platform
// schema describes the whole record; its "dt" becomes client_dt and dt is
// the receive time.
func buildFields(doc map[string]any, platform bool) (*field, error) {
	root := &field{kind: kindStruct}
	if platform {
		top := fromColumns(columns.Build(doc, "", doc, 0))
		if top.kind != kindStruct {
			return nil, errors.New("an Event Platform schema must describe an object with properties")
		}
		for _, c := range top.fields {
			switch c.name {
			case "dt":
				c.name = clientDT
			case clientDT:
				continue // the event's own dt takes the name
			}
			root.fields = append(root.fields, c)
		}
		root.fields = append(root.fields, &field{name: "dt", kind: kindTimestamp})
	} else {
		root.fields = append(root.fields, fromColumns(columns.Build(doc, "event", doc, 1)))
		// The capsule's fields, as in the file sink's Parquet files, except
		// that dt is a timestamp (the partition source).
		for _, cf := range columns.CapsuleFields {
			f := fromColumns(cf)
			if f.name == "dt" {
				f.kind = kindTimestamp
			}
			root.fields = append(root.fields, f)
		}
	}
	slices.SortFunc(root.fields, func(a, b *field) int { return strings.Compare(a.name, b.name) })
	return root, nil
}

// fromColumns converts a classified JSON Schema node to a field.
func fromColumns(c *columns.Field) *field {
	f := &field{name: c.Name, kind: kindJSON}
	switch c.Kind {
	case columns.Object:
		f.kind = kindStruct
	case columns.String:
		f.kind = kindString
	case columns.Integer:
		f.kind = kindLong
	case columns.Number:
		f.kind = kindDouble
	case columns.Boolean:
		f.kind = kindBool
	}
	for _, m := range c.Fields {
		f.fields = append(f.fields, fromColumns(m))
	}
	return f
}

// addition is a column a schema version adds to a table.
type addition struct {
	path []string
	f    *field
}

// compare checks a schema version's columns against a table's schema. It
// returns the columns to add (optional, by an Iceberg schema update), or a
// reason when a column exists with another type ("incompatible with table
// column event.x: long vs string", the table's type first).
func compare(sc *iceberg.Schema, root *field) (adds []addition, reason string) {
	var walk func(path []string, have []iceberg.NestedField, want []*field) string
	walk = func(path []string, have []iceberg.NestedField, want []*field) string {
		for _, w := range want {
			p := append(slices.Clip(path), w.name)
			i := slices.IndexFunc(have, func(f iceberg.NestedField) bool { return f.Name == w.name })
			if i < 0 {
				adds = append(adds, addition{path: p, f: w})
				continue
			}
			h := have[i]
			if w.kind == kindStruct {
				st, ok := h.Type.(*iceberg.StructType)
				if !ok {
					return fmt.Sprintf("incompatible with table column %s: %s vs struct", strings.Join(p, "."), h.Type)
				}
				if r := walk(p, st.FieldList, w.fields); r != "" {
					return r
				}
				continue
			}
			next := 0
			wt := w.icebergType(&next)
			if !h.Type.Equals(wt) {
				return fmt.Sprintf("incompatible with table column %s: %s vs %s", strings.Join(p, "."), h.Type, wt)
			}
		}
		return ""
	}
	if r := walk(nil, sc.Fields(), root.fields); r != "" {
		return nil, r
	}
	return adds, ""
}
