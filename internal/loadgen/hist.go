package loadgen

import (
	"math"
	"math/bits"
	"time"
)

// Histogram records durations in HDR-style log-linear buckets: values below
// 128 µs exactly, larger ones with 64 sub-buckets per power of two, so a
// reported percentile is within 1.6% of the recorded value it stands for.
// Its size is fixed (about 30 KB) whatever the number of values. The zero
// value is ready; it is not safe for concurrent use (give each goroutine
// one and Merge them).
type Histogram struct {
	counts   [histBuckets]uint64
	n        uint64
	sum      float64 // µs
	min, max int64   // µs
}

const (
	subBits     = 6
	subCount    = 1 << subBits // 64
	linearLimit = 2 * subCount // values below are exact
	// histBuckets covers every non-negative int64.
	histBuckets = linearLimit + (63-subBits-1)*subCount
)

func bucketOf(us int64) int {
	if us < linearLimit {
		return int(us)
	}
	shift := bits.Len64(uint64(us)) - subBits - 1 // us>>shift is in [64, 128)
	return linearLimit + (shift-1)*subCount + int(us>>shift) - subCount
}

// bucketRange is the [lo, hi] of values a bucket holds.
func bucketRange(i int) (lo, hi int64) {
	if i < linearLimit {
		return int64(i), int64(i)
	}
	i -= linearLimit
	shift := i/subCount + 1
	m := int64(i%subCount + subCount)
	return m << shift, (m+1)<<shift - 1
}

// Record adds one duration (negative ones count as 0).
func (h *Histogram) Record(d time.Duration) {
	us := max(d.Microseconds(), 0)
	h.counts[bucketOf(us)]++
	if h.n == 0 || us < h.min {
		h.min = us
	}
	h.max = max(h.max, us)
	h.n++
	h.sum += float64(us)
}

// Merge adds o's values to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}

// Count is the number of recorded values.
func (h *Histogram) Count() uint64 { return h.n }

// Max is the largest recorded value (exact).
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) * time.Microsecond }

// Mean is the average of the recorded values.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum/float64(h.n)) * time.Microsecond
}

// Quantile returns the value below or at which a share q (0 < q ≤ 1) of
// the recorded values lie (nearest rank): the middle of the value's bucket,
// clamped to the recorded minimum and maximum. 0 when nothing was recorded.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, hi := bucketRange(i)
			v := lo + (hi-lo)/2
			v = min(max(v, h.min), h.max)
			return time.Duration(v) * time.Microsecond
		}
	}
	return h.Max()
}
