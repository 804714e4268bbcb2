package process

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/schema"
)

// The fast path. Nearly every record is a legacy capsule as the JavaScript
// client writes it: compact JSON holding event, schema, revision and
// perhaps wiki and webHost. buildFast reads such a capsule in one pass over
// its bytes, validates the event's bytes against the compiled schema
// (schema.Schema.ValidJSON) and splices them into the output capsule as
// they are: no map is built and the event is not re-encoded, so its keys
// keep the client's order (key order is not part of the output contract).
// Anything else, and every event it does not find valid, goes to build's
// general path, which explains failures exactly as before.
// fastpath_test.go checks that both paths give the same verdicts and
// events.

// capsuleFields are the top-level capsule fields the fast path reads.
type capsuleFields struct {
	event, name, wiki, webHost []byte
	revision                   int64
	hasWiki, hasWebHost        bool
}

// buildFast is build for the common record. ok false means "take the
// general path" (c may then hold partial values: reset it).
func (p *Processor) buildFast(ctx context.Context, c *capsule.Capsule, s *scratch) (route, bool) {
	if p.noFastPath {
		return route{}, false
	}
	fl := &s.fields
	var cf capsuleFields
	if !readCapsuleTail(fl.Capsule, &cf) && !readCapsule(fl.Capsule, &cf) {
		return route{}, false
	}
	name, known := p.names.lookup(cf.name)
	if !known {
		name = string(cf.name)
	}
	id := schema.ID{Name: name, Revision: cf.revision}
	if id.Validate() != nil {
		return route{}, false
	}
	sc, err := p.res.Resolve(ctx, id)
	if err != nil {
		return route{}, false
	}
	if !known {
		p.names.add(name) // a registered schema: the names are bounded
	}
	if !sc.ValidJSON(cf.event) {
		return route{}, false
	}
	c.Schema, c.Revision, c.EventJSON = name, cf.revision, cf.event
	if cf.hasWiki {
		c.Wiki = p.hosts.get(cf.wiki)
	}
	if cf.hasWebHost {
		c.WebHost = p.hosts.get(cf.webHost)
	}
	if fail := p.serverFields(c, fl, nil, s.ipMemo, true); fail != nil {
		return route{}, false
	}
	t := p.topicsFor(c.Schema, c.Revision)
	c.Topic = t.own
	s.out = c.AppendJSON(s.out[:0])
	return route{topics: t.list, value: s.value(), label: name}, true
}

// value is the fast path's output: out itself when borrowed, else a copy,
// in the arena when there is one (out is then kept for the next record,
// unless it grew large).
func (s *scratch) value() []byte {
	if s.borrow {
		return s.out
	}
	var value []byte
	if s.arena != nil {
		a := *s.arena
		start := len(a)
		a = append(a, s.out...)
		*s.arena = a
		value = a[start:len(a):len(a)] // an append to it cannot reach the next value
	} else {
		value = make([]byte, len(s.out))
		copy(value, s.out)
	}
	if cap(s.out) > maxPooledOutput {
		s.out = nil
	}
	return value
}

// maxPooledOutput bounds the output buffer a scratch keeps.
const maxPooledOutput = 64 << 10

// readCapsule reads a compact capsule object whose members are event (an
// object), schema, wiki and webHost (strings without escapes) and revision
// (an integer), each at most once, schema, revision and event present; the
// event is compact JSON (schema.CompactValueEnd).
func readCapsule(b []byte, cf *capsuleFields) bool {
	end, _, seen := members(b, 0, 0, func(key []byte, i int) (end int, bit uint8) {
		switch string(key) {
		case "event":
			if i >= len(b) || b[i] != '{' {
				return -1, 0
			}
			if end = schema.CompactValueEnd(b[i:]); end < 0 {
				return -1, 0
			}
			end += i
			cf.event = b[i:end]
			return end, 1
		case "schema":
			cf.name, end = plainString(b, i)
			return end, 2
		case "revision":
			cf.revision, end = positiveInt(b, i)
			return end, 4
		case "wiki":
			cf.wiki, end = plainString(b, i)
			cf.hasWiki = true
			return end, 8
		case "webHost":
			cf.webHost, end = plainString(b, i)
			cf.hasWebHost = true
			return end, 16
		}
		return -1, 0
	})
	return end == len(b) && seen&7 == 7
}

// members reads the members of the compact JSON object at b[i], whose
// keys are strings without escapes: for each, member gets the key and the
// offset of its value, and returns the offset after the value, or -1 to
// stop (as for an unknown key), and the key's bit (0 for keys that may
// repeat). members returns the offsets after the object and of its
// closing brace, and the bits seen; -1, -1 when the object is not read to
// its end or a bit is seen twice. Once the bits seen are stop (not 0), it
// returns at once: the offset after that member, closing -1.
func members(b []byte, i int, stop uint8, member func(key []byte, value int) (int, uint8)) (end, closing int, seen uint8) {
	if i+1 >= len(b) || b[i] != '{' {
		return -1, -1, 0
	}
	i++
	for {
		key, end := plainString(b, i)
		if end < 0 || end >= len(b) || b[end] != ':' {
			return -1, -1, seen
		}
		end, bit := member(key, end+1)
		if end < 0 || end >= len(b) || seen&bit != 0 {
			return -1, -1, seen
		}
		seen |= bit
		if stop != 0 && seen == stop {
			return end, -1, seen
		}
		switch b[end] {
		case ',':
			i = end + 1
		case '}':
			return end + 1, end, seen
		default:
			return -1, -1, seen
		}
	}
}

// readCapsuleTail is readCapsule for the browser client's layout, event
// first: {"event":{…},"revision":…,"schema":…,…}. It reads the members
// after the event from the end, so the event is read once, by
// schema.Schema.ValidJSON, which checks that it is exactly one object
// (the capsule is then valid JSON with exactly these members).
func readCapsuleTail(b []byte, cf *capsuleFields) bool {
	const head = `{"event":`
	if len(b) < len(head)+3 || string(b[:len(head)]) != head || b[len(head)] != '{' || b[len(b)-1] != '}' {
		return false
	}
	var seen uint8
	e := len(b) - 1 // the ',' or '}' after the member being read
	for {
		if b[e-1] == '}' { // the event's end
			cf.event = b[len(head):e]
			return seen&6 == 6
		}
		// The value: a string without escapes, or a positive integer.
		var start int
		if b[e-1] == '"' {
			start = bytes.LastIndexByte(b[:e-1], '"')
		} else {
			start = e - 1
			for start > 0 && '0' <= b[start-1] && b[start-1] <= '9' {
				start--
			}
		}
		if start < 2 || b[start-1] != ':' || b[start-2] != '"' {
			return false
		}
		open := bytes.LastIndexByte(b[:start-2], '"')
		if open < 1 || b[open-1] != ',' {
			return false
		}
		var bit uint8
		var end int
		switch string(b[open+1 : start-2]) {
		case "schema":
			bit = 2
			cf.name, end = plainString(b, start)
		case "revision":
			bit = 4
			cf.revision, end = positiveInt(b, start)
		case "wiki":
			bit = 8
			cf.wiki, end = plainString(b, start)
			cf.hasWiki = true
		case "webHost":
			bit = 16
			cf.webHost, end = plainString(b, start)
			cf.hasWebHost = true
		default:
			return false
		}
		if end != e || seen&bit != 0 {
			return false
		}
		seen |= bit
		e = open - 1
	}
}

// plainString returns the content of the JSON string at b[i] and the offset
// after it, or end -1 when it is not a string of valid UTF-8 without
// escapes or control characters.
func plainString(b []byte, i int) (content []byte, end int) {
	if i >= len(b) || b[i] != '"' {
		return nil, -1
	}
	ascii := true
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			content = b[i+1 : j]
			if !ascii && !utf8.Valid(content) {
				return nil, -1
			}
			return content, j + 1
		case c == '\\' || c < 0x20:
			return nil, -1
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, -1
}

// positiveInt reads a JSON integer of at most 18 digits, without sign or
// leading zero, at b[i].
func positiveInt(b []byte, i int) (n int64, end int) {
	j := i
	for j < len(b) && '0' <= b[j] && b[j] <= '9' && j-i < 19 {
		n = n*10 + int64(b[j]-'0')
		j++
	}
	if j == i || j-i > 18 || b[i] == '0' {
		return 0, -1
	}
	return n, j
}

// interner hands out one string per distinct short text (schema names,
// wikis, web hosts), so that the fast path does not allocate them per
// record. Reads take no lock; it stops growing at maxInterned entries.
type interner struct {
	mu sync.Mutex
	m  atomic.Pointer[map[string]string]
}

const (
	maxInterned    = 4096
	maxInternedLen = 256
)

// lookup returns the held string equal to b.
func (in *interner) lookup(b []byte) (string, bool) {
	if m := in.m.Load(); m != nil {
		s, ok := (*m)[string(b)]
		return s, ok
	}
	return "", false
}

// get returns the held string equal to b, adding it when there is room.
func (in *interner) get(b []byte) string {
	if s, ok := in.lookup(b); ok {
		return s
	}
	s := string(b)
	in.add(s)
	return s
}

// add holds s, unless the table is full or s is long.
func (in *interner) add(s string) {
	if len(s) > maxInternedLen {
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	old := in.m.Load()
	n := 0
	if old != nil {
		if _, ok := (*old)[s]; ok {
			return
		}
		n = len(*old)
	}
	if n >= maxInterned {
		return
	}
	m := make(map[string]string, n+1)
	if old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	m[s] = s
	in.m.Store(&m)
}

// dtCache remembers the dt of the last timestamp formatted: consecutive
// records mostly share their second.
type dtCache struct {
	last atomic.Pointer[cachedDT]
}

type cachedDT struct {
	ts int64
	dt string
}

func (d *dtCache) format(ts int64) string {
	if c := d.last.Load(); c != nil && c.ts == ts {
		return c.dt
	}
	dt := capsule.FormatDT(time.Unix(ts, 0))
	d.last.Store(&cachedDT{ts: ts, dt: dt})
	return dt
}
