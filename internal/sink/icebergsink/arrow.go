package icebergsink

import (
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// maxBatchRows bounds the rows of one Arrow record batch handed to the
// Parquet writer.
const maxBatchRows = 64 << 10

// appender appends one value (nil: null) to an Arrow builder.
type appender func(v any) error

// arrowBatches converts rows to Arrow record batches of schema sc (the
// table's current schema, with field ids). Columns a row does not have are
// null.
func arrowBatches(sc *arrow.Schema, rows []row) ([]arrow.RecordBatch, error) {
	var out []arrow.RecordBatch
	release := func() {
		for _, b := range out {
			b.Release()
		}
	}
	for start := 0; start < len(rows); start += maxBatchRows {
		end := min(start+maxBatchRows, len(rows))
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		apps, names := fieldAppenders(sc.Fields(), b.Field)
		b.Reserve(end - start)
		for _, r := range rows[start:end] {
			for i, app := range apps {
				if err := app(r.values[names[i]]); err != nil {
					b.Release()
					release()
					return nil, fmt.Errorf("column %s: %w", names[i], err)
				}
			}
		}
		out = append(out, b.NewRecordBatch())
		b.Release()
	}
	return out, nil
}

// appenderFor returns the appender of a builder of type t.
func appenderFor(t arrow.DataType, b array.Builder) appender {
	switch bb := b.(type) {
	case *array.StringBuilder:
		return scalar(bb, "string", same[string])
	case *array.LargeStringBuilder:
		return scalar(bb, "string", same[string])
	case *array.Int64Builder:
		return scalar(bb, "int64", same[int64])
	case *array.Int32Builder:
		return scalar(bb, "int32", func(x int64) (int32, error) { return int32(x), nil })
	case *array.Float64Builder:
		return scalar(bb, "float64", same[float64])
	case *array.BooleanBuilder:
		return scalar(bb, "bool", same[bool])
	case *array.TimestampBuilder:
		unit := t.(*arrow.TimestampType).Unit
		return scalar(bb, "time", func(x time.Time) (arrow.Timestamp, error) {
			return arrow.TimestampFromTime(x, unit)
		})
	case *array.StructBuilder:
		st := t.(*arrow.StructType)
		apps, names := fieldAppenders(st.Fields(), bb.FieldBuilder)
		return func(v any) error {
			switch x := v.(type) {
			case nil:
				bb.AppendNull()
			case map[string]any:
				bb.Append(true)
				for i, app := range apps {
					if err := app(x[names[i]]); err != nil {
						return fmt.Errorf("%s: %w", names[i], err)
					}
				}
			default:
				return fmt.Errorf("got %T, want struct", v)
			}
			return nil
		}
	}
	// A column type the sink never creates (another writer added it):
	// always null.
	return func(any) error {
		b.AppendNull()
		return nil
	}
}

// fieldAppenders returns the appenders of the builders of fields (builder
// returns the i-th) and the fields' names.
func fieldAppenders(fields []arrow.Field, builder func(i int) array.Builder) ([]appender, []string) {
	apps := make([]appender, len(fields))
	names := make([]string, len(fields))
	for i, f := range fields {
		apps[i] = appenderFor(f.Type, builder(i))
		names[i] = f.Name
	}
	return apps, names
}

// builderOf is an Arrow builder of values of type E.
type builderOf[E any] interface {
	Append(E)
	AppendNull()
}

// scalar returns the appender of a builder of E taking values of type V
// (converted by conv) or nil; want names V in errors.
func scalar[V, E any](b builderOf[E], want string, conv func(V) (E, error)) appender {
	return func(v any) error {
		switch x := v.(type) {
		case nil:
			b.AppendNull()
		case V:
			e, err := conv(x)
			if err != nil {
				return err
			}
			b.Append(e)
		default:
			return fmt.Errorf("got %T, want %s", v, want)
		}
		return nil
	}
}

// same is the conversion of a value appended as it is.
func same[T any](x T) (T, error) { return x, nil }
