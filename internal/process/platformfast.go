package process

import (
	"bytes"
	"context"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/schema"
)

// The Event Platform fast path. An Event Platform event as EventGate's
// clients send it is compact JSON whose $schema, meta.stream and meta.id
// are strings without escapes. buildPlatformFast reads such an event once
// to find its meta object, copies the client's bytes with meta.id and
// meta.dt set (spliced in, as buildPlatform sets them in the decoded
// event), and validates the copy against the compiled schema
// (schema.Schema.ValidJSON): no map is built and the event is not
// re-encoded, so its keys keep the client's order (key order is not part
// of the output contract). When the schema declares http, it adds
// http.client_ip and the user agent as buildPlatform does; an event that
// sent its own http goes to buildPlatform (the general path), as do
// events of Avro streams and every event it does not find valid.
// platformfast_test.go checks that both paths give the same verdicts and
// events.

// schemaKey marks an Event Platform event; a legacy capsule (which the
// fast path for those did not take) is not read further.
var schemaKey = []byte(`"$schema":`)

// platformFields is where readPlatform found an event's members.
type platformFields struct {
	schema, stream []byte // $schema and meta.stream, without their quotes
	metaEnd        int    // offset of meta's closing brace
	// The spans of meta.id's and meta.dt's values, start -1 when absent.
	idStart, idEnd int
	dtStart, dtEnd int
}

// buildPlatformFast is buildPlatform for the common Event Platform event.
// ok false means "take the general path" (c may then hold partial values:
// reset it).
func (p *Processor) buildPlatformFast(ctx context.Context, c *capsule.Capsule, s *scratch) (route, bool) {
	if p.noFastPath {
		return route{}, false
	}
	fl := &s.fields
	b := fl.Capsule
	var pf platformFields
	if !bytes.Contains(b, schemaKey) || !readPlatform(b, &pf) {
		return route{}, false
	}
	// In buildPlatform's order: the stream must be configured before its
	// schema is looked up, so that a client cannot make the resolver
	// fetch any URI it names.
	name, known := p.streamNames.lookup(pf.stream)
	if !known {
		name = string(pf.stream)
	}
	stream, ok := p.cfg.Streams.Lookup(name)
	if !ok || stream.Format == "avro" {
		return route{}, false
	}
	if !known {
		p.streamNames.add(name)
	}
	uri, known := p.uris.lookup(pf.schema)
	if !known {
		uri = string(pf.schema)
	}
	sch, err := p.resolveURI(ctx, s, uri)
	if err != nil || !sch.HasJSONFastPath() {
		return route{}, false
	}
	if !known {
		p.uris.add(uri)
	}
	if stream.SchemaTitle != "" && sch.Title() != stream.SchemaTitle {
		return route{}, false
	}
	// meta.id: the client's when it sent a non-empty one (metaID), else
	// the event's uuid, computed only then.
	n := pf.idEnd - pf.idStart - 2
	clientID := pf.idStart >= 0 && n > 0
	if clientID && n > maxMetaID {
		return route{}, false
	}
	if fail := p.serverFields(c, fl, nil, s.ipMemo, !clientID); fail != nil {
		return route{}, false
	}
	var id string
	setID := !clientID
	if clientID {
		id = string(b[pf.idStart+1 : pf.idEnd-1])
	} else {
		id = capsule.Hyphenated(c.UUID)
	}
	s.out = splicePlatform(s.out[:0], b, &pf, setID, id, c.DT, sch.HasProperty("http"), c.ClientIP, c.UserAgent)
	if !sch.ValidJSON(s.out) {
		if cap(s.out) > maxPooledOutput {
			s.out = nil // as value() does: a pooled scratch keeps no large buffer
		}
		return route{}, false
	}
	if !stream.Admit() {
		return route{}, false // the general path says why
	}
	c.Schema, c.UUID = uri, id
	return route{topic: stream.Topic, value: s.value(), label: stream.MetricLabel}, true
}

// resolveURI is ResolveURI, once per event: the general path, taken after
// the fast path gave up, reuses the fast path's answer (a fetch that timed
// out is not tried twice).
func (p *Processor) resolveURI(ctx context.Context, s *scratch, uri string) (*schema.Schema, error) {
	if r := &s.resolved; r.ok && r.uri == uri {
		return r.sch, r.err
	}
	sch, err := p.res.ResolveURI(ctx, uri)
	s.resolved = resolvedURI{uri: uri, sch: sch, err: err, ok: true}
	return sch, err
}

// splicePlatform appends b to out with meta.dt's value replaced by dt
// and, when setID, meta.id's by id; each is added at the end of meta when
// the client did not send it. With http (the client sent none), it adds
// http.client_ip (when ip is not "") and http.request_headers.user-agent
// (when ua is not "") at the end of the event, as buildPlatform does.
func splicePlatform(out, b []byte, pf *platformFields, setID bool, id, dt string, http bool, ip, ua string) []byte {
	type edit struct {
		start, end int
		key, val   string // key "": replace the value at start:end
	}
	var edits [4]edit
	n := 0
	addID, addDT := setID && pf.idStart < 0, pf.dtStart < 0
	if setID && pf.idStart >= 0 {
		edits[n] = edit{start: pf.idStart, end: pf.idEnd, val: id}
		n++
	}
	if !addDT {
		edits[n] = edit{start: pf.dtStart, end: pf.dtEnd, val: dt}
		n++
	}
	if n == 2 && edits[1].start < edits[0].start {
		edits[0], edits[1] = edits[1], edits[0]
	}
	if addID {
		edits[n] = edit{start: pf.metaEnd, end: pf.metaEnd, key: "id", val: id}
		n++
	}
	if addDT {
		edits[n] = edit{start: pf.metaEnd, end: pf.metaEnd, key: "dt", val: dt}
		n++
	}
	prev := 0
	for _, e := range edits[:n] {
		out = append(out, b[prev:e.start]...)
		if e.key != "" {
			out = append(out, ',', '"')
			out = append(out, e.key...)
			out = append(out, '"', ':')
		}
		out = capsule.AppendString(out, e.val)
		prev = e.end
	}
	if !http {
		return append(out, b[prev:]...)
	}
	last := len(b) - 1 // the event's closing brace
	out = append(out, b[prev:last]...)
	out = append(out, `,"http":{`...)
	if ip != "" {
		out = append(out, `"client_ip":`...)
		out = capsule.AppendString(out, ip)
		if ua != "" {
			out = append(out, ',')
		}
	}
	if ua != "" {
		out = append(out, `"request_headers":{"user-agent":`...)
		out = capsule.AppendString(out, ua)
		out = append(out, '}')
	}
	return append(out, '}', '}')
}

// readPlatform reads a compact JSON object, ending in '}', up to its
// members $schema (a string without escapes) and meta (an object holding
// stream, a string without escapes, and perhaps id, a string without
// escapes, and dt), each once, and no http before them. The members
// before those are checked as compact JSON and skipped; the rest is not
// read. It need not be: ValidJSON reads the whole spliced copy, whose
// bytes outside meta are the client's, with only complete members
// changed or added (meta's, an http at the end), so the copy is valid
// JSON without duplicate keys exactly when the event is (a second meta,
// $schema or http after them is a duplicate key).
func readPlatform(b []byte, pf *platformFields) bool {
	*pf = platformFields{idStart: -1, idEnd: -1, dtStart: -1, dtEnd: -1, metaEnd: -1}
	if len(b) < 2 || b[len(b)-1] != '}' {
		return false
	}
	end, _, seen := members(b, 0, 3, func(key []byte, i int) (end int, bit uint8) {
		switch string(key) {
		case "$schema":
			pf.schema, end = plainString(b, i)
			return end, 1
		case "meta":
			return readMeta(b, i, pf), 2
		case "http":
			return -1, 0 // the general path replaces what the client sent
		}
		return valueEnd(b, i), 0
	})
	return end > 0 && seen == 3
}

// readMeta reads the meta object at b[i] into pf and returns the offset
// after it, or -1.
func readMeta(b []byte, i int, pf *platformFields) int {
	end, closing, seen := members(b, i, 0, func(key []byte, i int) (end int, bit uint8) {
		switch string(key) {
		case "stream":
			pf.stream, end = plainString(b, i)
			return end, 1
		case "id":
			_, end = plainString(b, i)
			pf.idStart, pf.idEnd = i, end
			return end, 2
		case "dt":
			end = valueEnd(b, i)
			pf.dtStart, pf.dtEnd = i, end
			return end, 4
		}
		return valueEnd(b, i), 0
	})
	if end < 0 || seen&1 == 0 {
		return -1
	}
	pf.metaEnd = closing
	return end
}

// valueEnd returns the offset after the compact JSON value at b[i], or -1.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	n := schema.CompactValueEnd(b[i:])
	if n < 0 {
		return -1
	}
	return i + n
}
