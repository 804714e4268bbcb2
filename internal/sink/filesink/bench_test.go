package filesink

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/sink/columns"
)

// BenchmarkWrite measures Write with 1,000-record batches of ~450-byte
// capsules (12 capsule fields, an event of 8 fields with two levels of
// nesting), decoding, placing, encoding and compressing each record, up to
// and including the checkpoint (fsync, manifest, rename) of the final
// Close; rows/s is the figure to quote:
//
//	go test -run '^$' -bench BenchmarkWrite -benchtime 200x ./internal/sink/filesink
func BenchmarkWrite(b *testing.B) {
	for _, format := range []Format{JSONLines, Parquet} {
		name := "jsonl"
		if format == Parquet {
			name = "parquet"
		}
		b.Run(name, func(b *testing.B) {
			benchWrite(b, Config{Root: b.TempDir(), Format: format, Schemas: testSchemas(b), Logger: slog.New(slog.DiscardHandler)})
		})
	}
}

// benchWrite writes b.N batches of 1,000 BenchmarkWrite capsules through a
// sink opened with cfg, Close included, and reports rows/s.
func benchWrite(b *testing.B, cfg Config) {
	tmpl := spread([]string{"eventlogging_Test"}, 1, 1000, 1)
	s, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	batch := make([]kafka.Record, len(tmpl))
	var bytes int64
	for _, r := range tmpl {
		bytes += int64(len(r.Value))
	}
	b.SetBytes(bytes)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		for j := range tmpl {
			batch[j] = tmpl[j]
			batch[j].Offset = int64(i*len(tmpl) + j)
		}
		if _, err := s.Write(b.Context(), batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N*len(tmpl))/time.Since(start).Seconds(), "rows/s")
}

// BenchmarkParquetRows compares the two ways to hand rows to parquet-go:
// building parquet.Row values from the decoded record (what the sink does)
// and letting parquet-go deconstruct a map[string]any.
func BenchmarkParquetRows(b *testing.B) {
	tmpl := spread([]string{"eventlogging_Test"}, 1, 1000, 1)
	pq := testParquetSchema(b)
	maps := make([]map[string]any, len(tmpl))
	for i, r := range tmpl {
		v, err := capsule.Decode(r.Value)
		if err != nil {
			b.Fatal(err)
		}
		maps[i] = v.(map[string]any)
	}
	b.Run("row", func(b *testing.B) {
		b.ReportAllocs()
		w := parquet.NewGenericWriter[any](io.Discard, pq.schema, parquet.Compression(&parquet.Snappy))
		rows := make([]parquet.Row, len(maps))
		var err error
		for b.Loop() {
			for i, m := range maps {
				if rows[i], err = pq.row(m); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := w.WriteRows(rows); err != nil {
				b.Fatal(err)
			}
		}
		w.Close()
		b.ReportMetric(float64(b.N*len(maps))/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("map", func(b *testing.B) {
		// parquet-go cannot take json.Number for INT64/DOUBLE columns, so
		// the map writer needs a conversion pass first; it is not counted.
		conv := make([]map[string]any, len(maps))
		for i, m := range maps {
			conv[i] = convertNumbers(m).(map[string]any)
		}
		b.ReportAllocs()
		w := parquet.NewGenericWriter[map[string]any](io.Discard, pq.schema, parquet.Compression(&parquet.Snappy))
		for b.Loop() {
			if _, err := w.Write(conv); err != nil {
				b.Fatal(err)
			}
		}
		w.Close()
		b.ReportMetric(float64(b.N*len(maps))/b.Elapsed().Seconds(), "rows/s")
	})
}

// convertNumbers turns json.Numbers into int64 or float64.
func convertNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = convertNumbers(e)
		}
		return out
	case []any:
		return string(capsule.AppendValue(nil, x)) // arrays are JSON text columns
	default:
		if n, ok := columns.Int(v); ok {
			return n
		}
		if f, ok := columns.Float(v); ok {
			return f
		}
		return v
	}
}
