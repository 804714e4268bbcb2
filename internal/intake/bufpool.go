package intake

import (
	"math/bits"
	"sync"

	"github.com/eventlogging/eventlogging/internal/process"
)

// pooledBuf is a byte buffer kept in bufPools between requests: a POST's
// body, then its records' values and its answer. The pointer itself is
// pooled, so that Put does not allocate.
type pooledBuf struct{ b []byte }

const (
	minBufShift = 10 // the smallest pooled buffer: 1 KiB
	bufClasses  = 8  // 1 KiB, 2 KiB … 128 KiB
)

// maxPooledBuf is the size of the largest class.
const maxPooledBuf = 1 << (minBufShift + bufClasses - 1)

// bufPools[c] holds buffers of a capacity of at least 1 << (minBufShift+c)
// bytes, and less than twice that.
var bufPools [bufClasses]sync.Pool

// getBuf returns an empty buffer with room for at least n bytes: a pooled
// one when n is at most the largest class, else a new one that putBuf
// will drop.
func getBuf(n int) *pooledBuf {
	c := 0
	if n > 1<<minBufShift {
		c = bits.Len(uint(n-1)) - minBufShift // the class whose size is n rounded up to a power of two
	}
	if c >= bufClasses {
		return &pooledBuf{b: make([]byte, 0, n)}
	}
	if v := bufPools[c].Get(); v != nil {
		pb := v.(*pooledBuf)
		pb.b = pb.b[:0]
		return pb
	}
	return &pooledBuf{b: make([]byte, 0, 1<<(minBufShift+c))}
}

// putBuf returns pb for reuse, in the class its capacity fills (a buffer
// that grew may have moved up), unless it is smaller than the smallest
// class or larger than the largest: memory kept between requests stays
// bounded by the requests in flight. Nothing may use pb.b afterwards.
func putBuf(pb *pooledBuf) {
	c := bits.Len(uint(cap(pb.b))) - 1 - minBufShift // the largest class it fills
	if c < 0 || c >= bufClasses {
		return
	}
	pb.b = pb.b[:0]
	bufPools[c].Put(pb)
}

// postScratch holds the slices of one POST's handling (its events, their
// records and their answers), pooled between requests.
type postScratch struct {
	events  [][]byte
	outs    []process.Output
	results []EventResult
	first   []int // each event's first output (firstOuts)
	memo    process.IPMemo
}

var postScratches = sync.Pool{New: func() any { return new(postScratch) }}

// maxPooledEvents bounds the slices a pooled postScratch keeps.
const maxPooledEvents = 1024

// resultsFor returns n zeroed results.
func (ps *postScratch) resultsFor(n int) []EventResult {
	if cap(ps.results) < n {
		ps.results = make([]EventResult, n)
	}
	return ps.results[:n]
}

// firstOuts returns n ints for each event's first output index.
func (ps *postScratch) firstOuts(n int) []int {
	if cap(ps.first) < n {
		ps.first = make([]int, n)
	}
	return ps.first[:n]
}

// release clears what ps holds (no event, record or answer outlives its
// request through the pool) and returns it for reuse.
func (ps *postScratch) release() {
	clear(ps.events[:cap(ps.events)])
	clear(ps.outs[:cap(ps.outs)])
	clear(ps.results[:cap(ps.results)])
	ps.memo = process.IPMemo{}
	if cap(ps.events) > maxPooledEvents || cap(ps.outs) > 2*maxPooledEvents || cap(ps.results) > maxPooledEvents || cap(ps.first) > maxPooledEvents {
		return // an unusually large request: left to the collector
	}
	ps.events, ps.outs, ps.results = ps.events[:0], ps.outs[:0], ps.results[:0]
	postScratches.Put(ps)
}
