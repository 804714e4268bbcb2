package loadgen

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestHistogramKnownData: percentiles of known data — exact below 128 µs,
// within the bucket precision (1.6%) above, max and mean exact.
func TestHistogramKnownData(t *testing.T) {
	us := time.Microsecond
	tests := []struct {
		name   string
		values func(record func(time.Duration))
		want   map[float64]time.Duration // quantile -> value
		tol    float64                   // relative
		max    time.Duration
		mean   time.Duration
	}{
		{
			name: "1..100 µs, exact",
			values: func(rec func(time.Duration)) {
				for v := 1; v <= 100; v++ {
					rec(time.Duration(v) * us)
				}
			},
			want: map[float64]time.Duration{0.5: 50 * us, 0.95: 95 * us, 0.99: 99 * us, 1: 100 * us, 0.001: 1 * us},
			max:  100 * us, mean: 50 * us, // 50.5 truncated to whole µs
		},
		{
			name: "1..100,000 µs uniform",
			values: func(rec func(time.Duration)) {
				for v := 1; v <= 100_000; v++ {
					rec(time.Duration(v) * us)
				}
			},
			want: map[float64]time.Duration{0.5: 50 * time.Millisecond, 0.95: 95 * time.Millisecond, 0.99: 99 * time.Millisecond},
			tol:  0.016,
			max:  100 * time.Millisecond, mean: 50000 * us,
		},
		{
			name: "99 fast and one slow",
			values: func(rec func(time.Duration)) {
				for range 99 {
					rec(400 * us)
				}
				rec(2 * time.Second)
			},
			want: map[float64]time.Duration{0.5: 400 * us, 0.99: 400 * us, 0.995: 2 * time.Second},
			tol:  0.016,
			max:  2 * time.Second, mean: (99*400 + 2_000_000) / 100 * us,
		},
		{
			name:   "negative counts as zero",
			values: func(rec func(time.Duration)) { rec(-time.Second) },
			want:   map[float64]time.Duration{0.5: 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h Histogram
			tt.values(h.Record)
			for q, want := range tt.want {
				got := h.Quantile(q)
				if diff := math.Abs(float64(got-want)) / math.Max(float64(want), 1); diff > tt.tol {
					t.Errorf("q%.3f = %v, want %v (±%.1f%%)", q, got, want, tt.tol*100)
				}
			}
			if h.Max() != tt.max {
				t.Errorf("max %v, want %v", h.Max(), tt.max)
			}
			if h.Mean() != tt.mean {
				t.Errorf("mean %v, want %v", h.Mean(), tt.mean)
			}
		})
	}
	var empty Histogram
	if empty.Quantile(0.99) != 0 || empty.Max() != 0 || empty.Mean() != 0 {
		t.Error("empty histogram reports values")
	}
}

// TestHistogramAgainstSort compares quantiles of random log-normal data
// with the exact nearest-rank values of the sorted data, and checks that
// merging per-goroutine histograms equals recording into one.
func TestHistogramAgainstSort(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var all Histogram
	parts := make([]Histogram, 4)
	var values []time.Duration
	for i := range 50_000 {
		d := time.Duration(math.Exp(r.NormFloat64()*1.5+6)) * time.Microsecond
		values = append(values, d)
		all.Record(d)
		parts[i%4].Record(d)
	}
	var merged Histogram
	for i := range parts {
		merged.Merge(&parts[i])
	}
	if merged != all {
		t.Error("merged histogram differs from the one recorded directly")
	}
	slices.Sort(values)
	for _, q := range []float64{0.5, 0.9, 0.95, 0.99, 0.999} {
		exact := values[int(math.Ceil(q*float64(len(values))))-1]
		got := all.Quantile(q)
		if diff := math.Abs(float64(got-exact)) / float64(exact); diff > 0.016 {
			t.Errorf("q%v = %v, exact %v", q, got, exact)
		}
	}
}

// TestBuckets: every bucket's range maps back to it, ranges are
// contiguous, and the whole int64 range is covered.
func TestBuckets(t *testing.T) {
	var next int64
	for i := range histBuckets {
		lo, hi := bucketRange(i)
		if lo != next || hi < lo {
			t.Fatalf("bucket %d: [%d, %d], want it to start at %d", i, lo, hi, next)
		}
		if bucketOf(lo) != i || bucketOf(hi) != i {
			t.Fatalf("bucket %d: [%d, %d] maps to %d and %d", i, lo, hi, bucketOf(lo), bucketOf(hi))
		}
		if i >= linearLimit && float64(hi-lo)/float64(lo) > 1.0/subCount {
			t.Fatalf("bucket %d: [%d, %d] wider than 1/%d", i, lo, hi, subCount)
		}
		next = hi + 1
		if hi == math.MaxInt64 {
			if i != histBuckets-1 {
				t.Fatalf("int64 range ends at bucket %d of %d", i, histBuckets)
			}
			return
		}
	}
	t.Fatalf("buckets end at %d", next)
}
