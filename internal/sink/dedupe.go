package sink

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"

	"github.com/eventlogging/eventlogging/internal/kafka"
)

// A schema topic can hold an event twice: a processor killed after
// producing a batch and before committing its offsets processes the batch
// again, and the intake spools and produces again a synchronous POST whose
// produce failed after Kafka had written it. Both copies carry the same
// uuid, which is the record's key, so they are in the same partition. The
// SQL sink drops the second by its unique uuid column; the file and
// Iceberg sinks, exactly once per Kafka record, would store both.
//
// dedupe drops them for a Resumer: it remembers the keys of the last
// window records of each assigned partition and drops a record whose key
// it holds. So that a restart, or a partition moving to another sink of
// the group, remembers as much, each assignment resumes window records
// before the sink's own start offset: those records only fill the window
// (the sink stored them already). A copy further than window records from
// the first (in its partition) is stored again; the SQL sink has no such
// limit.
//
// The window changes only after the sink stored a batch: a batch written
// again after an error is filtered the same way.
type dedupe struct {
	window int

	mu    sync.Mutex
	parts map[topicPart]*keyWindow
}

type topicPart struct {
	topic string
	part  int32
}

// keyWindow is one partition's: the keys of its last records, oldest
// first from next in ring.
type keyWindow struct {
	// start is the sink's own start offset: records below it are only
	// remembered; -1 when the sink named none (resumed from the group's
	// committed offset, nothing before it is read).
	start int64
	seen  map[[16]byte]struct{}
	ring  [][16]byte
	next  int
}

func newDedupe(window int) *dedupe {
	return &dedupe{window: window, parts: map[topicPart]*keyWindow{}}
}

// startOffsets wraps a Resumer's StartOffsets: a fresh window for each
// assigned partition, resumed window records early.
func (d *dedupe) startOffsets(inner func(context.Context, map[string][]int32) (map[string]map[int32]int64, error)) func(context.Context, map[string][]int32) (map[string]map[int32]int64, error) {
	return func(ctx context.Context, assigned map[string][]int32) (map[string]map[int32]int64, error) {
		offs, err := inner(ctx, assigned)
		if err != nil {
			return nil, err
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		for t, ps := range assigned {
			for _, p := range ps {
				w := &keyWindow{start: -1, seen: map[[16]byte]struct{}{}}
				if o, ok := offs[t][p]; ok {
					w.start = o
					// Below the log's start Kafka resets to its start.
					offs[t][p] = max(0, o-int64(d.window))
				}
				d.parts[topicPart{t, p}] = w
			}
		}
		return offs, nil
	}
}

// revoked forgets the windows of partitions taken away, then tells inner
// (nil: nobody).
func (d *dedupe) revoked(inner func(context.Context, map[string][]int32, bool)) func(context.Context, map[string][]int32, bool) {
	return func(ctx context.Context, revoked map[string][]int32, lost bool) {
		d.mu.Lock()
		for t, ps := range revoked {
			for _, p := range ps {
				delete(d.parts, topicPart{t, p})
			}
		}
		d.mu.Unlock()
		if inner != nil {
			inner(ctx, revoked, lost)
		}
	}
}

// pendingKey is a key to remember once the batch is stored.
type pendingKey struct {
	w   *keyWindow
	key [16]byte
}

// filter returns the records of batch to store (appended to keep[:0]) and
// the keys to remember once they are stored: records below their
// partition's start offset and copies of a key in the window (or earlier
// in the batch) are left out. Records without a key are kept.
func (d *dedupe) filter(batch []kafka.Record, keep []kafka.Record) ([]kafka.Record, []pendingKey, int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	keep = keep[:0]
	var add []pendingKey
	var inBatch map[pendingKey]struct{}
	dups := 0
	for _, r := range batch {
		w := d.parts[topicPart{r.Topic, r.Partition}]
		if w == nil {
			// Not assigned through StartOffsets (no Resumer offsets):
			// remember from here on.
			w = &keyWindow{start: -1, seen: map[[16]byte]struct{}{}}
			d.parts[topicPart{r.Topic, r.Partition}] = w
		}
		k, ok := keyID(r.Key)
		if !ok {
			if r.Offset >= w.start {
				keep = append(keep, r)
			}
			continue
		}
		pk := pendingKey{w, k}
		_, dup := w.seen[k]
		if !dup {
			_, dup = inBatch[pk]
		}
		if !dup {
			if inBatch == nil {
				inBatch = map[pendingKey]struct{}{}
			}
			inBatch[pk] = struct{}{}
			add = append(add, pk)
		}
		switch {
		case r.Offset < w.start:
			// Stored already: only remembered.
		case dup:
			dups++
		default:
			keep = append(keep, r)
		}
	}
	return keep, add, dups
}

// remember adds the keys of a stored batch to their windows, evicting the
// oldest beyond the window. A window replaced meanwhile (a rebalance) is
// not touched: the pending keys name the old one.
func (d *dedupe) remember(add []pendingKey) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, pk := range add {
		w := pk.w
		if len(w.ring) < d.window {
			w.ring = append(w.ring, pk.key)
		} else {
			delete(w.seen, w.ring[w.next])
			w.ring[w.next] = pk.key
			w.next = (w.next + 1) % d.window
		}
		w.seen[pk.key] = struct{}{}
	}
}

// keyID is the 16 bytes a key is remembered by: a uuid's own (32 hex
// digits, hyphenated or not), else the first 16 bytes of the key's
// SHA-256. false: no key.
func keyID(key []byte) ([16]byte, bool) {
	var id [16]byte
	if len(key) == 0 {
		return id, false
	}
	if parseUUID(key, &id) {
		return id, true
	}
	sum := sha256.Sum256(key)
	copy(id[:], sum[:16])
	return id, true
}

// parseUUID decodes 32 hex digits, or a uuid in RFC 4122 form, into id.
func parseUUID(key []byte, id *[16]byte) bool {
	var hexd [32]byte
	switch len(key) {
	case 32:
		copy(hexd[:], key)
	case 36:
		if key[8] != '-' || key[13] != '-' || key[18] != '-' || key[23] != '-' {
			return false
		}
		n := copy(hexd[:], key[:8])
		n += copy(hexd[n:], key[9:13])
		n += copy(hexd[n:], key[14:18])
		n += copy(hexd[n:], key[19:23])
		copy(hexd[n:], key[24:])
	default:
		return false
	}
	// Upper and lower case decode alike: they are one uuid.
	_, err := hex.Decode(id[:], hexd[:])
	return err == nil
}
