package lineformat

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"time"
)

// Fields is the result of parsing one line. Parse overwrites it and reuses
// the capacity of its slices, so a caller can parse many lines with one
// Fields and no allocations in the steady state beyond the strings of
// changed field values. After a failed Parse its contents are unspecified.
type Fields struct {
	// Capsule is the capsule JSON from %q (decoded) or %j (as is), not
	// parsed or validated; nil when the format has neither. It is
	// Fields' own buffer, overwritten by the next Parse, never the line.
	Capsule []byte
	// Timestamp is the %t time in epoch seconds; HasTimestamp reports
	// whether the format has %t.
	Timestamp    int64
	HasTimestamp bool
	// DT is the %D text, checked to be RFC 3339 and kept as given; empty
	// when the format has no %D.
	DT string
	// ClientIP is the %h text, not hashed; HasClientIP reports whether the
	// format has %h.
	ClientIP    string
	HasClientIP bool
	// Named holds the %{name}s, %{name}d and %{name}i fields in format
	// order (see Format.Names and Format.NamedIndex).
	Named []Field

	spans []span // scratch: the match of each format element
	// The last DT and ClientIP, kept across Reset so that a repeated
	// value is not allocated again.
	prevDT, prevIP string
}

// Reset clears fs for the next Parse (or for filling by hand) while keeping
// its buffers: Capsule's storage, the named fields' storage and their last
// values (reused when the next line repeats them), and Parse's scratch.
func (fs *Fields) Reset() {
	prevDT, prevIP := fs.prevDT, fs.ClientIP
	if fs.DT != "" {
		prevDT = fs.DT
	}
	if prevIP == "" {
		prevIP = fs.prevIP
	}
	*fs = Fields{Capsule: fs.Capsule[:0], Named: fs.Named[:0], spans: fs.spans, prevDT: prevDT, prevIP: prevIP}
}

// Field is one named field of a line.
type Field struct {
	// Name is the name in the format's %{name}.
	Name string
	// Str is the matched text: the value of %{name}s and %{name}i, the
	// digits of %{name}d.
	Str string
	// Int is the value of %{name}d.
	Int int64
	// IsInt reports whether the field is a %{name}d.
	IsInt bool
}

// Lookup returns the named field called name.
func (fs *Fields) Lookup(name string) (Field, bool) {
	for _, f := range fs.Named {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// span is the match of one format element, line[start:end]. For a string
// field, arena is where its new text starts in the line's arena string, or
// -1 when the field keeps its previous value.
type span struct{ start, end, arena int }

// Parse parses line by the format into out. It returns nil or a
// *ParseError: the line does not match (errors.Is(err, ErrNoMatch)), or a
// field matched but its text is unusable (ErrBadEscape, ErrInvalidUTF8,
// ErrIntRange, ErrBadTimestamp). Parse keeps no reference to line. Its work
// is linear in the length of the line for every format the fast matcher
// handles, and bounded by package regexp's guarantees for the others.
func (f *Format) Parse(line []byte, out *Fields) error {
	if cap(out.spans) < len(f.elems) {
		out.spans = make([]span, len(f.elems))
	}
	spans := out.spans[:len(f.elems)]
	if f.re == nil {
		if i, pos, ok := f.matchFast(line, spans); !ok {
			return newParseError(line, &f.elems[i], pos, len(line), ErrNoMatch)
		}
	} else if !f.matchRegexp(line, spans) {
		return f.diagnose(line, spans)
	}
	return f.extract(line, spans, out)
}

// matchFast matches line greedily, element by element, without
// backtracking, recording each element's match in spans. It is exact when
// f.fastExact(). On failure it returns the failing element and the byte
// offset where it failed.
func (f *Format) matchFast(line []byte, spans []span) (failElem, failPos int, ok bool) {
	p := 0
	for i := range f.elems {
		e := &f.elems[i]
		start := p
		switch e.kind {
		case kindLiteral:
			if len(line)-p < len(e.lit) || string(line[p:p+len(e.lit)]) != e.lit {
				return i, p, false
			}
			p += len(e.lit)
		case kindSpace:
			p = scan(line, p, &wsSet)
			if p-start < e.n {
				return i, start, false
			}
			if e.spaceBeforeLastTab && p == len(line) {
				// The regexp gives back whitespace to the final
				// [^\t]+: the longest run of at least n that is
				// followed by a non-TAB byte.
				q := p - 1
				for q >= start+e.n && line[q] == '\t' {
					q--
				}
				if q < start+e.n {
					return i + 1, p, false
				}
				p = q
			}
		case kindQuery:
			if p >= len(line) || line[p] != '?' {
				return i, p, false
			}
			p = scanNonWS(line, p+1)
			if p == start+1 {
				return i, start, false
			}
		case kindTime:
			if !isNCSA(line[p:]) {
				return i, p, false
			}
			p += ncsaLen
		case kindInt:
			p = scan(line, p, &digitSet)
			if p == start {
				return i, p, false
			}
		case kindTab:
			if k := bytes.IndexByte(line[p:], '\t'); k >= 0 {
				p += k
			} else {
				p = len(line)
			}
			if p == start {
				return i, p, false
			}
		default: // %j %D %h %o %{name}s
			p = scanNonWS(line, p)
			if p == start {
				return i, p, false
			}
		}
		spans[i] = span{start, p, -1}
	}
	return 0, 0, true
}

// scan returns the end of the run of bytes in set that starts at line[p].
func scan(line []byte, p int, set *byteSet) int {
	for p < len(line) && set[line[p]] {
		p++
	}
	return p
}

// scanNonWS is scan(line, p, &nonWSSet) that skips eight bytes at a time
// while none of them is below 0x21, as every whitespace byte is: capsules
// are long.
func scanNonWS(line []byte, p int) int {
	const highs, below = 0x8080808080808080, 0x21 * 0x0101010101010101
	for {
		for p+8 <= len(line) {
			x := binary.LittleEndian.Uint64(line[p:])
			if (x-below)&^x&highs != 0 { // some byte is below 0x21
				break
			}
			p += 8
		}
		for end := min(p+8, len(line)); p < end; p++ {
			if !nonWSSet[line[p]] {
				return p
			}
		}
		if p == len(line) {
			return p
		}
	}
}

// matchRegexp matches line with the fallback regexp, recording the match
// of each capturing element in spans.
func (f *Format) matchRegexp(line []byte, spans []span) bool {
	loc := f.re.FindSubmatchIndex(line)
	if loc == nil {
		return false
	}
	for i, g := range f.reGroup {
		if g > 0 {
			spans[i] = span{loc[2*g], loc[2*g+1], -1}
		}
	}
	return true
}

// diagnose builds the error for a line the regexp did not match: the
// greedy matcher's view of where it fails, which is a fair account of it.
func (f *Format) diagnose(line []byte, spans []span) error {
	if i, pos, ok := f.matchFast(line, spans); !ok {
		return newParseError(line, &f.elems[i], pos, len(line), ErrNoMatch)
	}
	// Unreachable: a greedy match is a match of the regexp too.
	return &ParseError{Spec: f.format, Excerpt: excerpt(line, 0), Err: ErrNoMatch}
}

// extract converts the matched text into out. The text of the string
// fields (%D, %h, %{name}s, %{name}i, %{name}d) that differs from the
// previous line's is copied into one new string, which the fields share.
func (f *Format) extract(line []byte, spans []span, out *Fields) error {
	prevDT, prevIP := out.DT, out.ClientIP
	if prevDT == "" {
		prevDT = out.prevDT
	}
	if prevIP == "" {
		prevIP = out.prevIP
	}
	out.Timestamp, out.HasTimestamp = 0, f.hasTime
	out.DT, out.ClientIP, out.HasClientIP = "", "", f.hasClientIP
	if !f.hasCapsule {
		out.Capsule = nil
	}
	if cap(out.Named) < len(f.names) {
		named := make([]Field, len(f.names))
		copy(named, out.Named) // keep old values for reuse
		out.Named = named
	}
	out.Named = out.Named[:len(f.names)]

	// The new text of the string fields, in one allocation.
	var arena string
	n := 0
	for i := range f.elems {
		spans[i].arena = -1
		if old, ok := f.oldText(i, out, prevDT, prevIP); ok {
			if text := line[spans[i].start:spans[i].end]; old != string(text) {
				spans[i].arena = n
				n += len(text)
			}
		}
	}
	if n > 0 {
		var b strings.Builder
		b.Grow(n)
		for i := range f.elems {
			if spans[i].arena >= 0 {
				b.Write(line[spans[i].start:spans[i].end])
			}
		}
		arena = b.String()
	}
	str := func(old string, s span) string {
		if s.arena < 0 {
			if text := line[s.start:s.end]; old != string(text) {
				return string(text) // a name twice in the format
			}
			return old
		}
		return arena[s.arena : s.arena+s.end-s.start]
	}

	for i := range f.elems {
		e := &f.elems[i]
		s := spans[i]
		text := line[s.start:s.end]
		switch e.kind {
		case kindQuery:
			if out.Capsule == nil {
				out.Capsule = make([]byte, 0, len(text))
			}
			buf, pos, err := decodeQuery(out.Capsule[:0], text)
			if err != nil {
				return newParseError(line, e, s.start+pos, s.end, err)
			}
			out.Capsule = buf
		case kindJSON:
			out.Capsule = append(out.Capsule[:0], text...)
		case kindTime:
			ts, err := parseNCSA(text)
			if err != nil {
				return newParseError(line, e, s.start, s.end, err)
			}
			out.Timestamp = ts
		case kindDT:
			out.DT = str(prevDT, s)
			if _, err := time.Parse(time.RFC3339, out.DT); err != nil {
				return newParseError(line, e, s.start, s.end, fmt.Errorf("%w: not RFC 3339", ErrBadTimestamp))
			}
		case kindClientIP:
			out.ClientIP = str(prevIP, s)
		case kindString, kindTab:
			fl := &out.Named[e.slot]
			*fl = Field{Name: f.names[e.slot], Str: str(fl.Str, s)}
		case kindInt:
			v, ok := atoi(text)
			if !ok {
				return newParseError(line, e, s.start, s.end, ErrIntRange)
			}
			fl := &out.Named[e.slot]
			*fl = Field{Name: f.names[e.slot], Str: str(fl.Str, s), Int: v, IsInt: true}
		}
	}
	return nil
}

// oldText returns the previous value of element i when it is a string
// field, the value its text is compared with.
func (f *Format) oldText(i int, out *Fields, prevDT, prevIP string) (string, bool) {
	e := &f.elems[i]
	switch e.kind {
	case kindDT:
		return prevDT, true
	case kindClientIP:
		return prevIP, true
	case kindString, kindTab, kindInt:
		return out.Named[e.slot].Str, true
	}
	return "", false
}

// atoi converts ASCII digits to an int64; ok is false on overflow.
func atoi(b []byte) (v int64, ok bool) {
	const cutoff = (1<<63 - 1) / 10
	for _, c := range b {
		d := int64(c - '0')
		if v > cutoff || v*10 > 1<<63-1-d {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}
