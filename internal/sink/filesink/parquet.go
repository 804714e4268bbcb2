package filesink

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unsafe"

	"github.com/parquet-go/parquet-go"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/schema"
	"github.com/eventlogging/eventlogging/internal/sink"
	"github.com/eventlogging/eventlogging/internal/sink/columns"
)

// kind is the Parquet shape of a JSON Schema node, by the rules of
// internal/sink/columns (shared with the Iceberg sink):
//   - kindGroup: an object with properties, a group;
//   - kindString: BYTE_ARRAY, String logical type;
//   - kindInt: INT64; kindDouble: DOUBLE; kindBool: BOOLEAN;
//   - kindJSON: anything else (arrays, free objects, unions), JSON text in
//     a String column.
type kind = columns.Kind

const (
	kindGroup  = columns.Object
	kindString = columns.String
	kindInt    = columns.Integer
	kindDouble = columns.Number
	kindBool   = columns.Boolean
	kindJSON   = columns.JSON
)

// pqField is a field of a Parquet schema, with what it takes to build rows.
type pqField struct {
	name   string
	kind   kind
	fields []*pqField // group members, in column order (by name)
	leaf   int        // index of the first leaf column under the field
	leaves int        // number of leaf columns under the field
	def    int        // definition level of the field when present
}

// pqSchema is the Parquet schema of one schema version.
type pqSchema struct {
	key     string // identifies the schema version: "Name/revision" or a $schema path
	schema  *parquet.Schema
	root    *pqField
	columns int
}

// eventErrorDoc describes capsule.EventError, the event of error records,
// for registries that do not hold it.
var eventErrorDoc = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"rawEvent":       map[string]any{"type": "string"},
		"rawEventBase64": map[string]any{"type": "string"},
		"rawEventBytes":  map[string]any{"type": "integer"},
		"message":        map[string]any{"type": "string"},
		"code":           map[string]any{"type": "string"},
		"schema":         map[string]any{"type": "string"},
		"revision":       map[string]any{"type": "integer"},
		"errors":         map[string]any{"type": "array"},
		"processorId":    map[string]any{"type": "string"},
		"source": map[string]any{"type": "object", "properties": map[string]any{
			"topic":     map[string]any{"type": "string"},
			"partition": map[string]any{"type": "integer"},
			"offset":    map[string]any{"type": "integer"},
		}},
	},
}

// parquetSchema returns the Parquet schema of an event, resolving and
// building it on first use: an Event Platform event's by its $schema uri,
// a capsule's by its decoded schema and revision. A non-empty reason means
// the event can never be written; an error is transient.
func (s *Sink) parquetSchema(ctx context.Context, platform bool, uri string, name, revision any) (*pqSchema, string, error) {
	var lookup string
	var id schema.ID
	if platform {
		lookup = "uri:" + uri
	} else {
		var err error
		id, err = schema.IDFromJSON(name, revision)
		if err != nil {
			return nil, "no schema to write Parquet with: " + err.Error(), nil
		}
		lookup = "id:" + id.String()
	}
	if pq, ok := s.pq[lookup]; ok {
		return pq, "", nil
	}
	var (
		sch *schema.Schema
		err error
		doc map[string]any
		key string
	)
	if platform {
		sch, err = s.cfg.Schemas.ResolveURI(ctx, uri)
	} else {
		sch, err = s.cfg.Schemas.Resolve(ctx, id)
		if errors.Is(err, schema.ErrNotFound) && id.Name == capsule.EventErrorSchema && id.Revision == capsule.EventErrorRevision {
			sch, err, doc, key = nil, nil, eventErrorDoc, id.String()
		}
	}
	switch {
	case err == nil:
	case sink.PermanentSchemaError(err):
		return nil, "schema: " + err.Error(), nil
	default:
		return nil, "", fmt.Errorf("filesink: resolve schema: %w", err)
	}
	if sch != nil {
		doc = sch.Document()
		key = sch.ID().String()
		if platform {
			key = sch.ID().Name // the $schema path
		}
	}
	pq, err := buildSchema(key, doc, platform)
	if err != nil {
		return nil, "schema " + key + ": " + err.Error(), nil
	}
	for _, other := range s.pq {
		if other.key == pq.key {
			pq = other // another spelling of the same $schema
			break
		}
	}
	s.pq[lookup] = pq
	return pq, "", nil
}

// buildSchema builds the Parquet schema of a schema version. A legacy
// EventLogging schema describes the capsule's "event"; the capsule's own
// fields are added. An Event Platform schema describes the whole record.
// Every field is optional.
func buildSchema(key string, doc map[string]any, platform bool) (*pqSchema, error) {
	root := &pqField{kind: kindGroup}
	if platform {
		top := fromColumns(columns.Build(doc, "", doc, 0))
		if top.kind != kindGroup {
			return nil, errors.New("an Event Platform schema must describe an object with properties")
		}
		root.fields = top.fields
	} else {
		root.fields = append(root.fields, fromColumns(columns.Build(doc, "event", doc, 1)))
		for _, cf := range columns.CapsuleFields {
			root.fields = append(root.fields, fromColumns(cf))
		}
		slices.SortFunc(root.fields, func(a, b *pqField) int { return strings.Compare(a.name, b.name) })
	}
	n := number(root, 0, 0)
	if n > parquet.MaxColumnIndex {
		return nil, fmt.Errorf("%d columns is too many for Parquet", n)
	}
	sch := parquet.NewSchema("eventlogging", node(root))
	// The row builder relies on our column numbering matching parquet-go's.
	var paths [][]string
	collectPaths(root, nil, &paths)
	if !slices.EqualFunc(paths, sch.Columns(), slices.Equal) {
		return nil, errors.New("internal error: column order differs from parquet-go's")
	}
	return &pqSchema{key: key, schema: sch, root: root, columns: n}, nil
}

// fromColumns converts a classified JSON Schema node to a field.
func fromColumns(c *columns.Field) *pqField {
	f := &pqField{name: c.Name, kind: c.Kind}
	for _, m := range c.Fields {
		f.fields = append(f.fields, fromColumns(m))
	}
	return f
}

// number assigns leaf column indexes and definition levels below f (whose
// own definition level is def), returning the next free column index.
func number(f *pqField, next, def int) int {
	f.def = def
	f.leaf = next
	if f.kind != kindGroup {
		f.leaves = 1
		return next + 1
	}
	for _, c := range f.fields {
		next = number(c, next, def+1)
	}
	f.leaves = next - f.leaf
	return next
}

// node builds the parquet-go node of a group's members (the root is
// required, everything below optional).
func node(f *pqField) parquet.Node {
	g := make(parquet.Group, len(f.fields))
	for _, c := range f.fields {
		var n parquet.Node
		switch c.kind {
		case kindGroup:
			n = node(c)
		case kindString, kindJSON:
			n = parquet.String()
		case kindInt:
			n = parquet.Int(64)
		case kindDouble:
			n = parquet.Leaf(parquet.DoubleType)
		case kindBool:
			n = parquet.Leaf(parquet.BooleanType)
		}
		g[c.name] = parquet.Optional(n)
	}
	return g
}

// collectPaths lists the leaf column paths below f in our numbering.
func collectPaths(f *pqField, prefix []string, out *[][]string) {
	for _, c := range f.fields {
		p := append(slices.Clip(prefix), c.name)
		if c.kind == kindGroup {
			collectPaths(c, p, out)
		} else {
			*out = append(*out, p)
		}
	}
}

// row converts a decoded record to a Parquet row. Members the schema does
// not declare are not stored; a value whose type does not fit its column is
// an error (the record is poison).
func (pq *pqSchema) row(m map[string]any) (parquet.Row, error) {
	row := make(parquet.Row, pq.columns)
	if err := fillGroup(row, pq.root, m); err != nil {
		return nil, err
	}
	return row, nil
}

// fillGroup sets the columns of a present group's members.
func fillGroup(row parquet.Row, g *pqField, m map[string]any) error {
	for _, f := range g.fields {
		v := m[f.name]
		if v == nil {
			setNull(row, f, g.def)
			continue
		}
		if err := fill(row, f, v); err != nil {
			var fe *fitError
			if errors.As(err, &fe) {
				fe.Path = append(fe.Path, f.name)
			}
			return err
		}
	}
	return nil
}

// setNull sets every column under f to null at definition level def (the
// level of f's parent, which is present).
func setNull(row parquet.Row, f *pqField, def int) {
	for i := f.leaf; i < f.leaf+f.leaves; i++ {
		row[i] = parquet.NullValue().Level(0, def, i)
	}
}

// fill sets the columns of a present field.
func fill(row parquet.Row, f *pqField, v any) error {
	var pv parquet.Value
	switch f.kind {
	case kindGroup:
		m, ok := v.(map[string]any)
		if !ok {
			return misfit(f, v)
		}
		return fillGroup(row, f, m)
	case kindString:
		s, ok := v.(string)
		if !ok {
			return misfit(f, v)
		}
		pv = parquet.ByteArrayValue(stringBytes(s))
	case kindInt:
		n, ok := columns.Int(v)
		if !ok {
			return misfit(f, v)
		}
		pv = parquet.Int64Value(n)
	case kindDouble:
		x, ok := columns.Float(v)
		if !ok {
			return misfit(f, v)
		}
		pv = parquet.DoubleValue(x)
	case kindBool:
		b, ok := v.(bool)
		if !ok {
			return misfit(f, v)
		}
		pv = parquet.BooleanValue(b)
	case kindJSON:
		pv = parquet.ByteArrayValue(capsule.AppendValue(nil, v))
	}
	row[f.leaf] = pv.Level(0, f.def, f.leaf)
	return nil
}

// stringBytes returns the bytes of s without copying. parquet-go copies
// byte array values into its column buffers and never writes to them.
func stringBytes(s string) []byte {
	if s == "" {
		return []byte{}
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// fitError is a value that does not fit its Parquet column.
type fitError = columns.FitError

func misfit(f *pqField, v any) error { return columns.Misfit(f.kind, v, "Parquet column") }

// fileTag turns a schema key into a file name part: "Edit/17" → "Edit_17",
// "/analytics/button_click/1.0.0" → "analytics_button_click_1.0.0".
func fileTag(key string) string {
	b := []byte(strings.TrimPrefix(key, "/"))
	for i, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '-', c == '_':
		default:
			b[i] = '_'
		}
	}
	if len(b) > 100 {
		sum := sha256.Sum256([]byte(key))
		b = append(b[:80], "-"+hex.EncodeToString(sum[:6])...)
	}
	return string(b)
}

// parquetWriter writes one Parquet file. Memory: the rows of the current
// row group (flushed at Config.RowGroupBytes, uncompressed) plus one page
// buffer per column.
type parquetWriter struct {
	cw            countingWriter
	pw            *parquet.GenericWriter[any]
	rows          []parquet.Row
	rowGroupBytes int64
}

// parquetPending is how many rows are handed to parquet-go at once.
const parquetPending = 256

func newParquetWriter(f io.Writer, pq *pqSchema, topic string, rowGroupBytes int64) *parquetWriter {
	w := &parquetWriter{rowGroupBytes: rowGroupBytes}
	w.cw.w = f
	w.pw = parquet.NewGenericWriter[any](&w.cw, pq.schema,
		parquet.Compression(&parquet.Snappy),
		parquet.DataPageVersion(1), // the most widely read (Hive, older Spark)
		parquet.DataPageStatistics(true),
		parquet.KeyValueMetadata("eventlogging.schema", pq.key),
		parquet.KeyValueMetadata("eventlogging.topic", topic),
	)
	return w
}

func (w *parquetWriter) append(pl *placed) error {
	w.rows = append(w.rows, pl.row)
	if len(w.rows) >= parquetPending {
		return w.flush()
	}
	return nil
}

func (w *parquetWriter) flush() error {
	if len(w.rows) > 0 {
		if _, err := w.pw.WriteRows(w.rows); err != nil {
			return err
		}
		clear(w.rows)
		w.rows = w.rows[:0]
	}
	if w.pw.Size()-w.cw.n >= w.rowGroupBytes {
		return w.pw.Flush()
	}
	return nil
}

func (w *parquetWriter) size() int64 { return w.pw.Size() }

func (w *parquetWriter) finish() error {
	if err := w.flush(); err != nil {
		return err
	}
	return w.pw.Close()
}
