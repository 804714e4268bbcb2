package filesink

import (
	"context"
	"encoding/json"
	"time"
	"unsafe"

	"github.com/parquet-go/parquet-go"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/schema"
	"github.com/eventlogging/eventlogging/internal/sink"
	"github.com/eventlogging/eventlogging/internal/sink/columns"
)

// The direct path. A record the processor wrote is compact JSON: place
// reads its receive time and schema from the text, and fills its Parquet
// row from the text, in two passes over the bytes, without the map
// capsule.Decode builds. It takes only text it reads exactly as the map
// path would: compact UTF-8 JSON (schema.SkipCompact's grammar) without
// escaped or repeated names where it reads members, a receive time in a
// plain string, values that fit their columns. Anything else, and every record
// it cannot write (no schema, a value that does not fit), goes to the map
// path, which gives the reason. direct_test.go holds the two paths to the
// same rows.

// header is what the first pass finds at the top level of a record.
type header struct {
	uri      []byte // $schema's content: an Event Platform event
	platform bool
	name     []byte // legacy capsule: schema's content
	revision []byte // legacy capsule: revision's number text
	dt       []byte // the receive time: dt's content, or meta.dt's for an Event Platform event
}

// maxDirectDepth bounds the nesting the direct path reads (as
// schema.SkipCompact does); deeper text goes to the map path (whose limit,
// capsule.MaxDecodeDepth, is higher).
const maxDirectDepth = 128

// readHeader checks that b is one compact JSON object the direct path can
// read (RFC 8259 grammar, UTF-8, no whitespace, no escaped key at the top
// level or in meta, each header member once) and finds its header. false:
// take the map path.
func readHeader(b []byte, h *header) bool {
	*h = header{}
	if len(b) < 2 || b[0] != '{' {
		return false
	}
	var dt, metaDT []byte
	var seen uint8
	once := func(bit uint8) bool {
		dup := seen&bit != 0
		seen |= bit
		return !dup
	}
	end := members(b, 0, func(key []byte, escaped bool, i int) int {
		if escaped {
			return -1 // it may spell a header member
		}
		var ok bool
		switch string(key) {
		case "$schema":
			h.uri, h.platform = plainString(b, i)
			ok = h.platform && once(1)
		case "schema":
			h.name, ok = plainString(b, i)
			ok = ok && once(2)
		case "revision":
			end := schema.ScanNumber(b, i)
			if end < 0 || !once(4) {
				return -1
			}
			h.revision = b[i:end]
			return end
		case "dt":
			dt, ok = plainString(b, i)
			ok = ok && once(8)
		case "meta":
			if !once(16) {
				return -1
			}
			if b[i] != '{' {
				return skip(b, i, 1) // not an Event Platform event's meta: read as the map path reads it
			}
			var dtSeen bool
			return members(b, i, func(key []byte, escaped bool, i int) int {
				if escaped || string(key) == "dt" && dtSeen {
					return -1
				}
				if string(key) == "dt" {
					dtSeen = true
					if metaDT, ok = plainString(b, i); !ok {
						return -1
					}
				}
				return skip(b, i, 2)
			})
		default:
			ok = true
		}
		if !ok {
			return -1
		}
		return skip(b, i, 1)
	})
	if end != len(b) {
		return false
	}
	h.dt = dt
	if h.platform {
		h.dt = metaDT
	}
	return h.dt != nil
}

// members calls fn with each member of the object at b[i]: its key
// (escaped: as written, with its escapes) and where its value starts; fn
// returns where the value ends, or -1 to stop. members returns where the
// object ends, or -1 when fn stopped or the text is not compact JSON.
func members(b []byte, i int, fn func(key []byte, escaped bool, start int) int) int {
	i++ // past '{'
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return -1
		}
		kEnd, escaped := schema.ScanString(b, i)
		if kEnd < 0 || kEnd+1 >= len(b) || b[kEnd] != ':' {
			return -1
		}
		end := fn(b[i+1:kEnd-1], escaped, kEnd+1)
		if end < 0 || end >= len(b) {
			return -1
		}
		switch b[end] {
		case ',':
			i = end + 1
		case '}':
			return end + 1
		default:
			return -1
		}
	}
}

// skip returns where the JSON value at b[i] ends, checking its grammar
// and UTF-8 (compact text; depth is its nesting, at most 128 in all), or
// -1. Its keys are not read.
func skip(b []byte, i, depth int) int { return schema.SkipCompact(b, i, depth) }

// plainString returns the content of the string at b[i] when it has no
// escape; false when it is not a string, not valid, or has one.
func plainString(b []byte, i int) ([]byte, bool) {
	if b[i] != '"' {
		return nil, false
	}
	end, escaped := schema.ScanString(b, i)
	if end < 0 || escaped {
		return nil, false
	}
	return b[i+1 : end-1], true
}

// placeDirect places r by the direct path; false: take the map path (pl is
// then as place received it).
func (s *Sink) placeDirect(ctx context.Context, value []byte, pl *placed) (bool, error) {
	var h header
	if !readHeader(value, &h) {
		return false, nil
	}
	dt, ok := sink.ReceiveTimeText(string(h.dt))
	if !ok {
		return false, nil
	}
	if s.cfg.Format == JSONLines {
		pl.dt, pl.hour, pl.line = dt, dt.Truncate(time.Hour).Unix(), value
		return true, nil
	}
	pq, reason, err := s.directSchema(ctx, &h)
	if err != nil {
		return false, err
	}
	if reason != "" {
		// Never writable, as the map path would say (with the same
		// schema and revision, or $schema): not looked up again there.
		pl.dt, pl.hour, pl.reason = dt, dt.Truncate(time.Hour).Unix(), reason
		return true, nil
	}
	if pq == nil {
		return false, nil
	}
	// The row's strings point into one copy of the record (the map path's
	// strings do too): the rows wait in the writer for parquet-go, which
	// copies them, and the record's own bytes may be reused before that.
	text := append([]byte(nil), value...)
	row := make(parquet.Row, pq.columns)
	if fillDirect(row, pq.root, text, 0, 0) != len(text) {
		return false, nil
	}
	pl.dt, pl.hour = dt, dt.Truncate(time.Hour).Unix()
	pl.pq, pl.tag, pl.row = pq, pq.key, row
	return true, nil
}

// directSchema returns the Parquet schema of a record's header, or
// parquetSchema's reason why it has none; neither when the header has no
// schema and revision (the map path then says why). The schemas are
// cached by the header's bytes, looked up without allocating; reasons are
// not cached (a schema registered later is found).
func (s *Sink) directSchema(ctx context.Context, h *header) (*pqSchema, string, error) {
	k := s.directKey[:0]
	if h.platform {
		k = append(append(k, 'u'), h.uri...)
	} else {
		if h.name == nil || h.revision == nil {
			return nil, "", nil
		}
		k = append(append(append(append(k, 'i'), h.name...), 0), h.revision...)
	}
	s.directKey = k
	if pq, ok := s.pqDirect[string(k)]; ok {
		return pq, "", nil
	}
	var pq *pqSchema
	var reason string
	var err error
	if h.platform {
		pq, reason, err = s.parquetSchema(ctx, true, string(h.uri), nil, nil)
	} else {
		pq, reason, err = s.parquetSchema(ctx, false, "", string(h.name), json.Number(h.revision))
	}
	if err != nil || reason != "" {
		return nil, reason, err
	}
	s.pqDirect[string(k)] = pq
	return pq, "", nil
}

// fillDirect sets the columns of the group g from the object at b[i], as
// fillGroup does from its decoded map, and returns where the object ends;
// -1 when a value does not fit its column or is one the direct path does
// not convert (the map path then says why, or converts it), and for an
// escaped or repeated member name.
func fillDirect(row parquet.Row, g *pqField, b []byte, i, depth int) int {
	if depth >= maxDirectDepth {
		return -1
	}
	var seenBuf [64]bool
	seen := seenBuf[:0]
	if len(g.fields) <= len(seenBuf) {
		seen = seenBuf[:len(g.fields)]
	} else {
		seen = make([]bool, len(g.fields))
	}
	end := members(b, i, func(key []byte, escaped bool, start int) int {
		if escaped {
			return -1 // it may spell a declared name
		}
		j, declared := g.field(key)
		if !declared {
			return skip(b, start, depth+1) // not stored
		}
		if seen[j] {
			return -1 // the map path keeps the last
		}
		seen[j] = true
		f := g.fields[j]
		if b[start] == 'n' { // null: as absent
			setNull(row, f, g.def)
			return skip(b, start, depth+1)
		}
		return fillValue(row, f, b, start, depth+1)
	})
	if end < 0 {
		return -1
	}
	for j, f := range g.fields {
		if !seen[j] {
			setNull(row, f, g.def)
		}
	}
	return end
}

// fillValue is fill for the value at b[i]: it returns where the value
// ends, or -1.
func fillValue(row parquet.Row, f *pqField, b []byte, i, depth int) int {
	var pv parquet.Value
	var end int
	switch f.kind {
	case kindGroup:
		if b[i] != '{' {
			return -1
		}
		return fillDirect(row, f, b, i, depth)
	case kindString:
		if b[i] != '"' {
			return -1
		}
		var escaped bool
		if end, escaped = schema.ScanString(b, i); end < 0 {
			return -1
		}
		if escaped {
			v, err := capsule.Decode(b[i:end])
			if err != nil {
				return -1
			}
			pv = parquet.ByteArrayValue(stringBytes(v.(string)))
		} else {
			pv = parquet.ByteArrayValue(b[i+1 : end-1])
		}
	case kindInt:
		if end = schema.ScanNumber(b, i); end < 0 {
			return -1
		}
		n, ok := columns.IntText(unsafeString(b[i:end]))
		if !ok {
			return -1
		}
		pv = parquet.Int64Value(n)
	case kindDouble:
		if end = schema.ScanNumber(b, i); end < 0 {
			return -1
		}
		x, ok := columns.FloatText(unsafeString(b[i:end]))
		if !ok {
			return -1
		}
		pv = parquet.DoubleValue(x)
	case kindBool:
		if b[i] != 't' && b[i] != 'f' {
			return -1
		}
		if end = skip(b, i, depth); end < 0 {
			return -1
		}
		pv = parquet.BooleanValue(b[i] == 't')
	case kindJSON:
		// JSON text as the map path writes it (capsule.AppendValue of the
		// decoded value), not the record's bytes.
		if end = skip(b, i, depth); end < 0 {
			return -1
		}
		v, err := capsule.Decode(b[i:end])
		if err != nil {
			return -1
		}
		pv = parquet.ByteArrayValue(capsule.AppendValue(nil, v))
	default:
		return -1
	}
	row[f.leaf] = pv.Level(0, f.def, f.leaf)
	return end
}

// unsafeString is b as a string without copying, for parsing: the string
// does not outlive the call.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// field returns the index of g's member named key. Members are sorted by
// name (buildSchema, columns.Build): a binary search, without allocating.
func (g *pqField) field(key []byte) (int, bool) {
	lo, hi := 0, len(g.fields)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if g.fields[m].name < string(key) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(g.fields) && g.fields[lo].name == string(key)
}
