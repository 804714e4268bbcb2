package spool

import (
	"bytes"
	"fmt"
	"testing"
)

// BenchmarkAppend appends batches of 300-byte records, one write and one
// fsync per batch, so it measures this disk's fsync as much as the code.
func BenchmarkAppend(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			q := open(b, b.TempDir(), Config{})
			batch := make([]Record, n)
			for i := range batch {
				batch[i] = Record{Topic: "eventlogging-client-side", Value: bytes.Repeat([]byte{'x'}, 300)}
			}
			b.SetBytes(int64(n * 300))
			b.ReportAllocs()
			for b.Loop() {
				if err := q.Append(batch); err != nil {
					b.Fatal(err)
				}
				if q.Bytes() > 256<<20 {
					b.StopTimer()
					drain(b, q)
					b.StartTimer()
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
		})
	}
}

// BenchmarkPeekAck replays 100-record batches: Peek, then Ack (which
// writes and fsyncs the cursor).
func BenchmarkPeekAck(b *testing.B) {
	q := open(b, b.TempDir(), Config{SegmentBytes: 1 << 20})
	batch := make([]Record, 100)
	for i := range batch {
		batch[i] = Record{Topic: "eventlogging-client-side", Value: bytes.Repeat([]byte{'x'}, 300)}
	}
	b.SetBytes(100 * 300)
	b.ReportAllocs()
	for b.Loop() {
		if q.Len() == 0 {
			b.StopTimer()
			for range 100 {
				if err := q.Append(batch); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
		}
		got, err := q.Peek(100)
		if err != nil {
			b.Fatal(err)
		}
		if err := q.Ack(len(got)); err != nil {
			b.Fatal(err)
		}
	}
}

func drain(b *testing.B, q *Queue) {
	b.Helper()
	for q.Len() > 0 {
		if err := q.Ack(min(q.Len(), 100000)); err != nil {
			b.Fatal(err)
		}
	}
}
