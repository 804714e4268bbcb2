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
		apps := make([]appender, len(sc.Fields()))
		names := make([]string, len(sc.Fields()))
		for i, f := range sc.Fields() {
			apps[i] = appenderFor(f.Type, b.Field(i))
			names[i] = f.Name
		}
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
		return func(v any) error {
			switch x := v.(type) {
			case nil:
				bb.AppendNull()
			case string:
				bb.Append(x)
			default:
				return fmt.Errorf("got %T, want string", v)
			}
			return nil
		}
	case *array.LargeStringBuilder:
		return func(v any) error {
			switch x := v.(type) {
			case nil:
				bb.AppendNull()
			case string:
				bb.Append(x)
			default:
				return fmt.Errorf("got %T, want string", v)
			}
			return nil
		}
	case *array.Int64Builder:
		return func(v any) error {
			switch x := v.(type) {
			case nil:
				bb.AppendNull()
			case int64:
				bb.Append(x)
			default:
				return fmt.Errorf("got %T, want int64", v)
			}
			return nil
		}
	case *array.Int32Builder:
		return func(v any) error {
			switch x := v.(type) {
			case nil:
				bb.AppendNull()
			case int64:
				bb.Append(int32(x))
			default:
				return fmt.Errorf("got %T, want int32", v)
			}
			return nil
		}
	case *array.Float64Builder:
		return func(v any) error {
			switch x := v.(type) {
			case nil:
				bb.AppendNull()
			case float64:
				bb.Append(x)
			default:
				return fmt.Errorf("got %T, want float64", v)
			}
			return nil
		}
	case *array.BooleanBuilder:
		return func(v any) error {
			switch x := v.(type) {
			case nil:
				bb.AppendNull()
			case bool:
				bb.Append(x)
			default:
				return fmt.Errorf("got %T, want bool", v)
			}
			return nil
		}
	case *array.TimestampBuilder:
		unit := t.(*arrow.TimestampType).Unit
		return func(v any) error {
			switch x := v.(type) {
			case nil:
				bb.AppendNull()
			case time.Time:
				ts, err := arrow.TimestampFromTime(x, unit)
				if err != nil {
					return err
				}
				bb.Append(ts)
			default:
				return fmt.Errorf("got %T, want time", v)
			}
			return nil
		}
	case *array.StructBuilder:
		st := t.(*arrow.StructType)
		apps := make([]appender, st.NumFields())
		names := make([]string, st.NumFields())
		for i, f := range st.Fields() {
			apps[i] = appenderFor(f.Type, bb.FieldBuilder(i))
			names[i] = f.Name
		}
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
