package icebergsink

import (
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// BenchmarkWrite feeds 1,000-record batches of capsules (one table, one
// hour per 3,600 records) and commits every 100 batches, on a SQLite
// catalog and a local warehouse: rows/s includes decoding, conversion,
// Parquet writing and the commits.
//
//	go test -run '^$' -bench Write -benchtime 200x ./internal/sink/icebergsink/
func BenchmarkWrite(b *testing.B) {
	e := sqliteEnv(b)
	cfg := e.config(b)
	cfg.MaxBufferedRows = 100_000
	s := openSink(b, cfg)
	defer s.Close()
	const batch = 1000
	records := make([]kafka.Record, batch)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		for j := range records {
			off := int64(i*batch + j)
			records[j] = testsupport.CapsuleRecord("eventlogging_Test", 0, off, base.Add(time.Duration(off)*time.Second))
		}
		b.StartTimer()
		if _, err := s.WriteRecords(b.Context(), records); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Flush(b.Context()); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "rows/s")
}
