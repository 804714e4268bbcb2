package icebergsink

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/schema"
	"github.com/eventlogging/eventlogging/internal/sink"
	"github.com/eventlogging/eventlogging/internal/sink/columns"
)

// row is one buffered record, converted: values holds the columns its
// schema version declares (string, int64, float64, bool, time.Time, or a
// map for a struct); a missing or null value is absent.
type row struct {
	tp     tp
	offset int64
	topic  string
	values map[string]any
}

// version is a schema version seen, and the table its events go to.
type version struct {
	key    string // "Name/revision", or the $schema path
	table  string // the table name
	source string // what the table holds: "schema:Name" or "stream:name"
	root   *field
}

// decode reads a record value: a JSON object, or an event in the Avro wire
// format decoded through Config.Avro. A reason makes the record poison; an
// error is transient.
func (s *Sink) decode(ctx context.Context, value []byte) (map[string]any, string, error) {
	if sink.IsAvro(value) {
		return sink.DecodeAvro(ctx, s.cfg.Avro, value,
			"Avro wire format (magic byte 0), but the Iceberg sink has no schema registry to decode it", "icebergsink")
	}
	m, _, reason := sink.DecodeJSON(value)
	return m, reason, nil
}

// place decodes and converts a record: its version (and so table) and row.
// A non-empty reason means the record can never be stored; an error is
// transient (schema lookup).
func (s *Sink) place(ctx context.Context, r *kafka.Record) (*version, map[string]any, string, error) {
	m, reason, err := s.decode(ctx, r.Value)
	if err != nil || reason != "" {
		return nil, nil, reason, err
	}
	uri, platform := m["$schema"].(string)
	v, reason, err := s.version(ctx, m, platform, uri)
	if err != nil || reason != "" {
		return nil, nil, reason, err
	}
	dt, ok := sink.ReceiveTime(m, platform, r.Timestamp)
	if !ok {
		return nil, nil, "no receive time: neither dt, meta.dt nor a Kafka timestamp", nil
	}
	if platform {
		if own, ok := m["dt"]; ok {
			m[clientDT] = own
		} else {
			delete(m, clientDT)
		}
	}
	m["dt"] = dt
	values, err := convertGroup(v.root, m)
	if err != nil {
		return nil, nil, err.Error(), nil
	}
	return v, values, "", nil
}

// version returns the schema version of a decoded event, resolving it and
// building its columns on first use.
func (s *Sink) version(ctx context.Context, m map[string]any, platform bool, uri string) (*version, string, error) {
	var (
		lookup string
		id     schema.ID
		stream string
	)
	if platform {
		meta, _ := m["meta"].(map[string]any)
		stream, _ = meta["stream"].(string)
		if stream == "" {
			return nil, "Event Platform event without meta.stream: no table to write it to", nil
		}
		lookup = "uri:" + uri + "\x00" + stream
	} else {
		var err error
		id, err = schema.IDFromJSON(m["schema"], m["revision"])
		if err != nil {
			return nil, "no schema: " + err.Error(), nil
		}
		lookup = "id:" + id.String()
	}
	if v, ok := s.versions[lookup]; ok {
		return v, "", nil
	}
	var (
		sch *schema.Schema
		err error
	)
	if s.cfg.Schemas == nil {
		return nil, "no schema registry configured (Config.Schemas)", nil
	}
	if platform {
		sch, err = s.cfg.Schemas.ResolveURI(ctx, uri)
	} else {
		sch, err = s.cfg.Schemas.Resolve(ctx, id)
	}
	switch {
	case err == nil:
	case sink.PermanentSchemaError(err):
		return nil, "schema: " + err.Error(), nil
	default:
		return nil, "", fmt.Errorf("icebergsink: resolve schema: %w", err)
	}
	root, err := buildFields(sch.Document(), platform)
	if err != nil {
		return nil, "schema " + sch.ID().String() + ": " + err.Error(), nil
	}
	v := &version{key: sch.ID().String(), root: root}
	if platform {
		v.key = sch.ID().Name
		v.table, v.source = TableName(stream), "stream:"+stream
	} else {
		v.table, v.source = TableName(id.Name), "schema:"+id.Name
	}
	s.versions[lookup] = v
	return v, "", nil
}

// maxTableName bounds a table name; longer names are cut and given a hash.
const maxTableName = 128

// TableName is the table a schema name (legacy EventLogging) or a stream
// name (Event Platform) is written to: every character other than an ASCII
// letter, digit or underscore becomes an underscore
// ("mediawiki.page-create" → "mediawiki_page_create"), a leading digit gets
// an underscore before it, and a name longer than 128 characters is cut
// to 115 and ends with "_" and 12 hex digits of its SHA-256. Case is kept.
// Two sources with one table name are told apart by the table property
// eventlogging.source: the second one's records are poison.
func TableName(name string) string {
	b := []byte(name)
	for i, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_':
		default:
			b[i] = '_'
		}
	}
	if len(b) > 0 && '0' <= b[0] && b[0] <= '9' {
		b = append([]byte{'_'}, b...)
	}
	if len(b) > maxTableName {
		sum := sha256.Sum256([]byte(name))
		b = append(b[:maxTableName-13], "_"+hex.EncodeToString(sum[:6])...)
	}
	return string(b)
}

// convertGroup converts the members of an object a struct declares.
// Members not declared are not stored; a value that does not fit its
// column is an error.
func convertGroup(g *field, m map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(g.fields))
	for _, f := range g.fields {
		v := m[f.name]
		if v == nil {
			continue
		}
		cv, err := convert(f, v)
		if err != nil {
			var fe *fitError
			if errors.As(err, &fe) {
				fe.Path = append(fe.Path, f.name)
			}
			return nil, err
		}
		out[f.name] = cv
	}
	return out, nil
}

// convert converts a present value to its column's Go value.
func convert(f *field, v any) (any, error) {
	switch f.kind {
	case kindStruct:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, misfit(f, v)
		}
		return convertGroup(f, m)
	case kindString:
		return convertAs(f, v, asType[string])
	case kindLong:
		return convertAs(f, v, columns.Int)
	case kindDouble:
		return convertAs(f, v, columns.Float)
	case kindBool:
		return convertAs(f, v, asType[bool])
	case kindTimestamp:
		return convertAs(f, v, asType[time.Time])
	default:
		return string(capsule.AppendValue(nil, v)), nil
	}
}

// convertAs converts v with conv to the value of column f, or returns why it
// does not fit.
func convertAs[T any](f *field, v any, conv func(any) (T, bool)) (any, error) {
	x, ok := conv(v)
	if !ok {
		return nil, misfit(f, v)
	}
	return x, nil
}

// asType is the conversion of a value that must already be a T.
func asType[T any](v any) (T, bool) {
	x, ok := v.(T)
	return x, ok
}

// fitError is a value that does not fit its column.
type fitError = columns.FitError

func misfit(f *field, v any) error {
	e := columns.Misfit(columns.Kind(f.kind), v, "column")
	e.WantName = kindNames[f.kind]
	return e
}
