package process

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/iphash"
	"github.com/eventlogging/eventlogging/internal/lineformat"
	"github.com/eventlogging/eventlogging/internal/record"
	"github.com/eventlogging/eventlogging/internal/schema"
)

// Resolver finds the compiled schema of an event, by (name, revision) for
// legacy capsules and by $schema URI for Event Platform events. It returns
// an error wrapping schema.ErrNotFound for unknown schemas. Safe for
// concurrent use.
type Resolver interface {
	Resolve(ctx context.Context, id schema.ID) (*schema.Schema, error)
	ResolveURI(ctx context.Context, uri string) (*schema.Schema, error)
}

// IPHasher hashes a client IP with the shared key. Safe for concurrent use.
type IPHasher interface {
	Hash(ip string) string
}

// Output is one record to produce (the pipeline's one record shape). Value
// is owned by the Output; outputs of one input may share a Value slice (the
// same capsule in two topics).
type Output = record.Message

// Processor is the one processing function: raw record in, capsule or
// EventError out. Safe for concurrent use.
type Processor struct {
	res     Resolver
	hasher  IPHasher
	cfg     Config
	topics  capsule.TopicTemplate
	scratch sync.Pool
	topicMu sync.RWMutex
	topicOf map[string]schemaTopics // schema name -> its output topics

	names interner // registered schema names (fastpath.go)
	hosts interner // wiki and webHost values
	// streamNames and uris: Event Platform stream names and schema URIs
	// (platformfast.go); only those configured or resolved are added.
	streamNames interner
	uris        interner
	dt          dtCache
	noFastPath  bool // tests: every record takes the general path
}

type schemaTopics struct {
	own  string
	list []string // own, and the mixed topic unless excluded
}

// New builds a Processor. hasher may be nil when the policy is not hash.
func New(res Resolver, hasher IPHasher, cfg Config) (*Processor, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if res == nil {
		return nil, errors.New("process: nil schema resolver")
	}
	if cfg.IPPolicy == IPHash && hasher == nil {
		return nil, errors.New("process: ip policy hash needs a hasher")
	}
	tt, err := capsule.ParseTopicTemplate(cfg.TopicTemplate)
	if err != nil {
		return nil, fmt.Errorf("process config: %w", err)
	}
	p := &Processor{res: res, hasher: hasher, cfg: cfg, topics: tt, topicOf: map[string]schemaTopics{}}
	p.scratch.New = func() any { return new(scratch) }
	return p, nil
}

// ErrorTopic is where EventErrors go.
func (p *Processor) ErrorTopic() string { return p.cfg.ErrorTopic }

type scratch struct {
	fields lineformat.Fields
	out    []byte // the fast path's output, before it is copied
	// borrow: the fast path's value is out itself, valid until the next
	// record processed with this scratch (never for pooled scratch).
	borrow bool
	ipMemo *IPMemo // ProcessEvent's Meta.IPMemo, for the event being processed
	arena  *[]byte // ProcessEvent's Meta.Arena, for the event being processed
	// resolved: the $schema URI resolved for the record being built, and
	// the answer (resolveURI).
	resolved resolvedURI
}

type resolvedURI struct {
	uri string
	sch *schema.Schema
	err error
	ok  bool
}

// knownNamed are the capsule fields a line format may carry by name.
var knownNamed = map[string]byte{
	"recvFrom": 's', "seqId": 'd', "userAgent": 's', "wiki": 's', "webHost": 's',
	"clientIp": 's', "timestamp": 'd', "dt": 's',
}

var namedSpec = regexp.MustCompile(`%\{([^}]*)\}([a-z])`)

// CheckFormat reports line formats whose named fields are not capsule fields
// (they would be rejected as additional properties on every event).
func CheckFormat(format string) error {
	for _, m := range namedSpec.FindAllStringSubmatch(format, -1) {
		if _, ok := knownNamed[m[1]]; !ok {
			return fmt.Errorf("line format %q: field %q is not a capsule field (known: recvFrom, seqId, userAgent, wiki, webHost, clientIp, timestamp, dt)", format, m[1])
		}
	}
	return nil
}

// Process handles one raw record read with format f and appends its outputs
// to out: the capsule for its schema topic (and the mixed topic), the event
// for its stream's topic (Event Platform style), or one EventError. src
// locates the record (nil offline). It never fails: every problem becomes an
// EventError.
func (p *Processor) Process(ctx context.Context, f *lineformat.Format, raw []byte, src *capsule.Source, out []Output) []Output {
	out, _ = p.processRaw(ctx, f, raw, src, out)
	return out
}

// processRaw is Process, also reporting the outcome.
func (p *Processor) processRaw(ctx context.Context, f *lineformat.Format, raw []byte, src *capsule.Source, out []Output) ([]Output, Result) {
	s := p.scratch.Get().(*scratch)
	defer p.scratch.Put(s)
	return p.processWith(ctx, s, f, raw, src, out)
}

// processWith is processRaw with the caller's scratch.
func (p *Processor) processWith(ctx context.Context, s *scratch, f *lineformat.Format, raw []byte, src *capsule.Source, out []Output) ([]Output, Result) {
	s.fields.Reset()
	var fail *failure
	line := &rawLine{f: f}
	switch {
	case len(raw) > p.cfg.MaxEventBytes:
		fail = processorFailure("raw event of %d bytes exceeds the %d-byte limit", len(raw), p.cfg.MaxEventBytes)
	default:
		if err := f.Parse(raw, &s.fields); err != nil {
			fail = p.parseFailure(f, raw, err)
		} else {
			line.parsed = true
			if s.fields.Capsule == nil {
				fail = processorFailure("line format %q has no capsule (%%q or %%j)", f.String())
			}
		}
	}
	return p.finish(ctx, s, raw, line, src, fail, out)
}

// Meta is what the HTTP intake knows about an event it received, in place
// of the fields of a raw line.
type Meta struct {
	RecvFrom  string    // the intake host
	SeqID     int64     // per-process sequence number
	Received  time.Time // receive time
	ClientIP  string    // "" when unknown
	UserAgent string
	// IPMemo, when set, keeps ClientIP's hash for the next events
	// processed with the same memo: the events of one request share
	// their IP, which is then hashed once. Nil: hashed for each event.
	IPMemo *IPMemo
	// Arena, when set, receives the values of the fast paths' records,
	// appended to it (it may move; earlier values stay where they were),
	// instead of one allocation each. The caller must not write to the
	// arena's bytes while the records' values are in use.
	Arena *[]byte
}

// IPMemo holds the hash of one client IP (Meta.IPMemo), for the events of
// one request, processed one after another. Not safe for concurrent use.
type IPMemo struct{ ip, hash string }

// hashIP returns the hash of ip, from memo when it holds ip's.
func (p *Processor) hashIP(ip string, memo *IPMemo) string {
	if memo != nil && memo.hash != "" && memo.ip == ip {
		return memo.hash
	}
	h := p.hasher.Hash(ip)
	if memo != nil {
		memo.ip, memo.hash = ip, h
	}
	return h
}

// Result is the outcome of one event, for per-event HTTP answers.
type Result struct {
	UUID    string              // the event's uuid (also for most invalid events)
	Topic   string              // where a valid event goes
	Code    string              // "" when valid; else capsule.CodeValidation or CodeProcessor
	Message string              // why it is invalid
	Errors  []capsule.Violation // JSON pointer + reason
}

// Valid reports whether the event was accepted.
func (r Result) Valid() bool { return r.Code == "" }

// ProcessEvent handles one JSON event received by the HTTP intake (a legacy
// capsule or an Event Platform event), exactly as Process would handle the
// same event read from a raw topic, and reports the outcome.
func (p *Processor) ProcessEvent(ctx context.Context, event []byte, m Meta, out []Output) ([]Output, Result) {
	s := p.scratch.Get().(*scratch)
	s.ipMemo, s.arena = m.IPMemo, m.Arena
	defer func() {
		s.ipMemo, s.arena = nil, nil
		p.scratch.Put(s)
	}()
	fl := &s.fields
	fl.Reset()
	fl.Capsule = append(fl.Capsule, event...)
	fl.Timestamp, fl.HasTimestamp = m.Received.Unix(), true
	fl.ClientIP, fl.HasClientIP = m.ClientIP, m.ClientIP != ""
	fl.Named = append(fl.Named,
		lineformat.Field{Name: "recvFrom", Str: m.RecvFrom},
		lineformat.Field{Name: "seqId", Int: m.SeqID, IsInt: true},
		lineformat.Field{Name: "userAgent", Str: m.UserAgent},
	)
	var fail *failure
	if len(event) > p.cfg.MaxEventBytes {
		fail = processorFailure("event of %d bytes exceeds the %d-byte limit", len(event), p.cfg.MaxEventBytes)
	}
	return p.finish(ctx, s, event, nil, nil, fail, out)
}

// finish builds and routes one parsed record (or its EventError). line is
// nil for events from the HTTP intake (raw is then the JSON event).
func (p *Processor) finish(ctx context.Context, s *scratch, raw []byte, line *rawLine, src *capsule.Source, fail *failure, out []Output) ([]Output, Result) {
	fl := &s.fields
	c := &capsule.Capsule{Revision: -1}
	var r route
	if fail == nil {
		r, fail = p.build(ctx, s, c)
	}
	if fail == nil && len(r.value) > p.cfg.MaxRecordBytes {
		// Escapes and the server's fields can make a capsule larger than
		// the event it came from: one Kafka would refuse becomes an
		// EventError here, before it is produced.
		fail = &failure{code: capsule.CodeProcessor, message: fmt.Sprintf("the encoded event of %d bytes exceeds the %d-byte record limit", len(r.value), p.cfg.MaxRecordBytes), label: r.label}
	}
	if fail != nil {
		// Bounded before anything is produced or answered: a violation
		// quotes a prefix of a bad value, and at most MaxViolations are
		// listed.
		fail.violations = capsule.BoundViolations(fail.violations)
		fail.message = capsule.Truncate(fail.message, capsule.MaxMessageBytes)
		p.cfg.Metrics.count(fail.label, fail.code)
		ev := p.errorValue(p.storedRaw(raw, line, fl), len(raw), src, fl, c, fail)
		out = append(out, Output{Topic: p.cfg.ErrorTopic, Key: uuidKey(ev, c.UUID), Value: ev})
		return out, Result{UUID: c.UUID, Code: fail.code, Message: fail.message, Errors: fail.violations}
	}
	p.cfg.Metrics.count(r.label, "")
	key := uuidKey(r.value, c.UUID)
	if r.topics == nil {
		out = append(out, Output{Topic: r.topic, Key: key, Value: r.value})
		return out, Result{UUID: c.UUID, Topic: r.topic}
	}
	for _, t := range r.topics {
		out = append(out, Output{Topic: t, Key: key, Value: r.value})
	}
	return out, Result{UUID: c.UUID, Topic: r.topics[0]}
}

// uuidKey is the Kafka key of an event's record of value: its uuid (nil
// when it has none). Every copy of an event (a batch processed again
// after a crash, a synchronous POST spooled after an ambiguous produce)
// then goes to the same partition of its topic, where the file and
// Iceberg sinks drop the copies (sink.Config.DedupeWindow). The key is
// the uuid's bytes in value, which holds it, so that it costs no
// allocation; a copy when it does not.
func uuidKey(value []byte, uuid string) []byte {
	if uuid == "" {
		return nil
	}
	if i := bytes.Index(value, unsafe.Slice(unsafe.StringData(uuid), len(uuid))); i >= 0 {
		return value[i : i+len(uuid) : i+len(uuid)]
	}
	return []byte(uuid)
}

// route is where a valid record goes: the same value in every topic.
type route struct {
	// topic is the only topic when topics is nil (an Event Platform
	// stream's: no slice to allocate per event).
	topic  string
	topics []string
	value  []byte
	label  string // the schema (legacy) or stream (Event Platform), for metrics
}

func (p *Processor) topicsFor(name string, revision int64) schemaTopics {
	p.topicMu.RLock()
	t, ok := p.topicOf[name]
	p.topicMu.RUnlock()
	if ok {
		return t
	}
	t = schemaTopics{own: p.topics.Format(name, revision)}
	t.list = []string{t.own}
	if p.cfg.MixedTopic != "" && (p.cfg.MixedExclude == nil || !p.cfg.MixedExclude.MatchString(name)) {
		t.list = append(t.list, p.cfg.MixedTopic)
	}
	if strings.Contains(p.cfg.TopicTemplate, "{revision}") {
		return t // one topic per revision: not cached per name
	}
	p.topicMu.Lock()
	p.topicOf[name] = t
	p.topicMu.Unlock()
	return t
}

// The range of client timestamps: 0001-01-01T00:00:00Z to
// 9999-12-31T23:59:59Z in Unix seconds.
const (
	minTimestamp = -62135596800
	maxTimestamp = 253402300799
)

// failure is why a record became an EventError.
type failure struct {
	code       string
	message    string
	violations []capsule.Violation
	// label is the schema or stream for metrics once it is known to be
	// registered or configured; "" counts as unknown.
	label string
}

func processorFailure(format string, args ...any) *failure {
	return &failure{code: capsule.CodeProcessor, message: fmt.Sprintf(format, args...)}
}

// build decodes, merges, resolves and validates a parsed record into c and
// returns its route, or the failure (c then holds what was learnt, for the
// EventError's schema and revision).
func (p *Processor) build(ctx context.Context, s *scratch, c *capsule.Capsule) (route, *failure) {
	defer func() { s.resolved = resolvedURI{} }() // no schema kept in a pooled scratch
	fl := &s.fields
	if r, ok := p.buildFast(ctx, c, s); ok {
		return r, nil
	}
	*c = capsule.Capsule{Revision: -1}
	if r, ok := p.buildPlatformFast(ctx, c, s); ok {
		return r, nil
	}
	*c = capsule.Capsule{Revision: -1}
	if !utf8.Valid(fl.Capsule) {
		return route{}, processorFailure("decode capsule: invalid UTF-8")
	}
	v, err := capsule.Decode(fl.Capsule)
	if err != nil {
		return route{}, processorFailure("decode capsule JSON: %v", err)
	}
	client, ok := v.(map[string]any)
	if !ok {
		return route{}, processorFailure("decode capsule JSON: capsule is %s, not an object", schema.JSONKind(v))
	}
	if _, platform := client["$schema"]; platform {
		return p.buildPlatform(ctx, s, client, c)
	}

	var viol []capsule.Violation
	addViol := func(ptr, reason string) { viol = append(viol, capsule.Violation{Pointer: ptr, Reason: reason}) }
	label := "" // set once the schema resolved

	// Capsule root: additionalProperties false, typed fields; keys in
	// order, so the same record always gives the same EventError.
	for _, k := range slices.Sorted(maps.Keys(client)) {
		val := client[k]
		switch k {
		case "event", "schema", "revision", "recvFrom", "seqId", "timestamp", "dt", "uuid", "userAgent", "clientIp", "topic":
		case "clientValidated", "isTruncated":
			// Flags of the 2013-2016 JavaScript client, dropped before
			// validation as the original did; counted, never stored.
			p.cfg.Metrics.legacyFlag(k)
		case "wiki", "webHost":
			if str, ok := val.(string); ok {
				if k == "wiki" {
					c.Wiki = str
				} else {
					c.WebHost = str
				}
			} else {
				addViol("/"+escapePointer(k), "got "+schema.JSONKind(val)+", want string")
			}
		default:
			addViol("/"+escapePointer(k), "additional property not allowed in the capsule")
		}
	}
	name, nameOK := client["schema"].(string)
	if !nameOK {
		if _, present := client["schema"]; present {
			addViol("/schema", "got "+schema.JSONKind(client["schema"])+", want string")
		} else {
			addViol("/schema", "required property missing")
		}
	}
	c.Schema = name
	revOK := false
	if rv, present := client["revision"]; !present {
		addViol("/revision", "required property missing")
	} else if n, ok := jsonInt(rv); ok {
		c.Revision, revOK = n, true
	} else {
		addViol("/revision", "got "+schema.JSONKind(rv)+", want integer")
	}
	event, eventOK := client["event"].(map[string]any)
	if !eventOK {
		if ev, present := client["event"]; present {
			addViol("/event", "got "+schema.JSONKind(ev)+", want object")
		} else {
			addViol("/event", "required property missing")
		}
	}
	c.Event = event

	if fail := p.serverFields(c, fl, client, s.ipMemo, true); fail != nil {
		return route{}, fail
	}
	if nameOK && revOK {
		id := schema.ID{Name: name, Revision: c.Revision}
		if err := id.Validate(); err != nil {
			ptr := "/schema"
			if c.Revision < 1 {
				ptr = "/revision"
			}
			addViol(ptr, err.Error())
		} else if eventOK {
			sc, err := p.res.Resolve(ctx, id)
			switch {
			case errors.Is(err, schema.ErrNotFound):
				return route{}, processorFailure("unknown schema %s revision %d", name, c.Revision)
			case err != nil:
				return route{}, processorFailure("resolve schema %s revision %d: %v", name, c.Revision, err)
			}
			label = name
			var ve *schema.ValidationError
			if err := sc.Validate(event); errors.As(err, &ve) {
				for _, x := range ve.Violations {
					addViol("/event"+x.Pointer, x.Reason)
				}
			} else if err != nil {
				addViol("/event", err.Error())
			}
		}
	}
	if len(viol) > 0 {
		return route{}, &failure{code: capsule.CodeValidation, message: summarize(viol), violations: viol, label: label}
	}
	t := p.topicsFor(c.Schema, c.Revision)
	c.Topic = t.own
	r := route{topics: t.list, value: c.AppendJSON(make([]byte, 0, len(fl.Capsule)+256)), label: label}
	return r, nil
}

// secondsOf returns a client timestamp in milliseconds (13 digits, past
// year 9999 as seconds) as Unix seconds, as the original's uuid rule reads
// it: its first 10 digits. Others are returned as they are.
func secondsOf(n int64) int64 {
	if n > maxTimestamp && n < 1e13 {
		return n / 1000 // 13 digits: the first 10
	}
	return n
}

// serverFields fills recvFrom, seqId, timestamp, dt, userAgent, clientIp and
// uuid from the line and (per policy) the client capsule.
//
// wantUUID false skips computing c.UUID (left empty), for an event whose
// uuid is the client's own (an Event Platform meta.id); every check is made
// as with true.
func (p *Processor) serverFields(c *capsule.Capsule, fl *lineformat.Fields, client map[string]any, memo *IPMemo, wantUUID bool) *failure {
	var haveRecv, haveSeq, haveTS bool
	if fl.HasTimestamp {
		c.Timestamp, haveTS = fl.Timestamp, true
	}
	c.DT = fl.DT
	var clientIP string
	var haveIP, ipFromClient bool
	if fl.HasClientIP && fl.ClientIP != "" && fl.ClientIP != "-" {
		clientIP, haveIP = fl.ClientIP, true
	}
	for i := range fl.Named {
		nf := &fl.Named[i]
		switch nf.Name {
		case "recvFrom":
			c.RecvFrom, haveRecv = nf.Str, true
		case "seqId":
			if !nf.IsInt {
				return processorFailure("seqId %q is not an integer", nf.Str)
			}
			c.SeqID, haveSeq = nf.Int, true
		case "timestamp":
			if !nf.IsInt {
				return processorFailure("timestamp %q is not an integer", nf.Str)
			}
			c.Timestamp, haveTS = nf.Int, true
		case "dt":
			c.DT = nf.Str
		case "userAgent":
			c.UserAgent = nf.Str
		case "clientIp":
			if nf.Str != "" && nf.Str != "-" {
				clientIP, haveIP = nf.Str, true
			}
		case "wiki":
			c.Wiki = nf.Str
		case "webHost":
			c.WebHost = nf.Str
		}
	}
	trust := p.cfg.TrustClientCapsuleFields
	// Client values: always fill what the line lacks; override only in trust mode.
	if v, ok := client["recvFrom"]; ok && (trust || !haveRecv) {
		str, isStr := v.(string)
		if !isStr {
			return &failure{code: capsule.CodeValidation, message: "/recvFrom: want string", violations: []capsule.Violation{{Pointer: "/recvFrom", Reason: "got " + schema.JSONKind(v) + ", want string"}}}
		}
		c.RecvFrom, haveRecv = str, true
	}
	if v, ok := client["seqId"]; ok && (trust || !haveSeq) {
		n, isInt := jsonInt(v)
		if !isInt {
			return &failure{code: capsule.CodeValidation, message: "/seqId: want integer", violations: []capsule.Violation{{Pointer: "/seqId", Reason: "got " + schema.JSONKind(v) + ", want integer"}}}
		}
		c.SeqID, haveSeq = n, true
	}
	if v, ok := client["timestamp"]; ok && (trust || !haveTS) {
		n, isInt := jsonInt(v)
		if !isInt {
			return &failure{code: capsule.CodeValidation, message: "/timestamp: want integer", violations: []capsule.Violation{{Pointer: "/timestamp", Reason: "got " + schema.JSONKind(v) + ", want integer"}}}
		}
		// A timestamp in milliseconds (the 2013 server-side clients and
		// the original's own fixtures: 1358791834912) is read as the uuid
		// rule reads every timestamp, by its first 10 digits; what is
		// still out of range is refused below.
		n = secondsOf(n)
		// Years 1 to 9999: dt and the file sink's hour partitions need
		// a four-digit year.
		if n < minTimestamp || n > maxTimestamp {
			return &failure{code: capsule.CodeValidation, message: "/timestamp: out of range", violations: []capsule.Violation{{Pointer: "/timestamp", Reason: fmt.Sprintf("%d is not a time between years 1 and 9999 (Unix seconds)", n)}}}
		}
		c.Timestamp, haveTS = n, true
	}
	if v, ok := client["dt"].(string); ok && (trust || c.DT == "") {
		c.DT = v
	}
	if v, ok := client["userAgent"].(string); ok && (trust || c.UserAgent == "") {
		c.UserAgent = v
	}
	if v, ok := client["clientIp"].(string); ok && trust {
		clientIP, haveIP, ipFromClient = v, true, true
	}
	c.HasSeqID = haveSeq
	if !haveRecv {
		return processorFailure("cannot compute uuid: no recvFrom in the line or the capsule")
	}
	if !haveSeq {
		return processorFailure("cannot compute uuid: no seqId in the line or the capsule")
	}
	switch {
	case haveTS:
		if wantUUID {
			c.UUID = capsule.UUID(c.RecvFrom, c.SeqID, c.Timestamp)
		}
		if c.DT == "" {
			c.DT = p.dt.format(c.Timestamp)
		}
	case c.DT != "":
		t, err := time.Parse(time.RFC3339Nano, c.DT)
		if err != nil {
			return processorFailure("dt %q is not an ISO-8601 time: %v", c.DT, err)
		}
		c.Timestamp = t.Unix()
		if wantUUID {
			c.UUID = capsule.UUIDFromDT(c.RecvFrom, c.SeqID, c.DT)
		}
	default:
		return processorFailure("cannot compute uuid: no timestamp or dt in the line or the capsule")
	}
	if haveIP {
		hashed, marked := "", false
		if !ipFromClient {
			// A field the processor itself marked as hashed, in the raw
			// line of an EventError that is replayed: the hash as it is.
			hashed, marked = iphash.Unmark(clientIP)
		}
		switch {
		case p.cfg.IPPolicy == IPDrop:
		case marked:
			c.ClientIP = hashed
		case ipFromClient || p.cfg.IPPolicy == IPKeep:
			c.ClientIP = clientIP
		default:
			c.ClientIP = p.hashIP(clientIP, memo)
		}
	}
	return nil
}

// errorValue encodes the EventError for a failed record: raw is the record
// as stored (client IP rewritten per the policy), rawLen the size it had.
func (p *Processor) errorValue(raw []byte, rawLen int, src *capsule.Source, fl *lineformat.Fields, c *capsule.Capsule, fail *failure) []byte {
	ee := capsule.EventError{
		Message:     fail.message,
		Code:        fail.code,
		Schema:      c.Schema,
		Revision:    c.Revision,
		Errors:      fail.violations,
		ProcessorID: p.cfg.ProcessorID,
		Source:      src,
	}
	if ee.Schema == "" || ee.Revision < 1 {
		s, r := capsule.RecoverSchema(raw)
		if ee.Schema == "" {
			ee.Schema = s
		}
		if c.Revision == -1 {
			ee.Revision = r
		}
	}
	cut := raw
	if len(cut) > p.cfg.MaxRawErrorBytes {
		cut = cut[:p.cfg.MaxRawErrorBytes]
		ee.RawEventBytes = len(raw)
		if rawLen > p.cfg.MaxRawErrorBytes {
			ee.RawEventBytes = rawLen // the size as received, not as rewritten
		}
	}
	ee.RawEvent = string(cut)
	if !utf8.Valid(cut) {
		ee.RawEventBase64 = cut
	}
	ec := capsule.ErrorCapsule{
		Event:     ee,
		Schema:    capsule.EventErrorSchema,
		Revision:  capsule.EventErrorRevision,
		RecvFrom:  c.RecvFrom,
		Timestamp: c.Timestamp,
		DT:        c.DT,
		UUID:      c.UUID,
		UserAgent: c.UserAgent,
		Topic:     p.cfg.ErrorTopic,
	}
	if c.HasSeqID {
		seq := c.SeqID
		ec.SeqID = &seq
	}
	if ec.Timestamp == 0 && fl.HasTimestamp {
		ec.Timestamp = fl.Timestamp
	}
	if ec.Timestamp == 0 {
		ec.Timestamp = p.cfg.Now().Unix()
	}
	if ec.DT == "" {
		ec.DT = capsule.FormatDT(time.Unix(ec.Timestamp, 0))
	}
	if ec.UUID == "" {
		// Deterministic, so a reprocessed record gives the same error uuid.
		if src != nil {
			ec.UUID = capsule.UUIDFromURL("kafka://" + src.Topic + "/" + strconv.Itoa(int(src.Partition)) + "/" + strconv.FormatInt(src.Offset, 10))
		} else {
			ec.UUID = capsule.UUIDFromURL("raw:" + string(raw))
		}
	}
	// One allocation for the record: the raw text and the messages, a
	// little more for escapes, and the capsule's other fields.
	size := len(cut) + len(ee.Message) + min(len(ec.UserAgent), capsule.MaxAgentBytes) + 512
	for _, v := range ee.Errors {
		size += len(v.Pointer) + len(v.Reason) + 32
	}
	// Fit cuts what could still make the record too large for Kafka.
	return ec.Fit(make([]byte, 0, min(size+size/8, p.cfg.MaxRecordBytes)), p.cfg.MaxRecordBytes)
}

func summarize(viol []capsule.Violation) string {
	var b strings.Builder
	for i, v := range viol {
		if i == 5 {
			fmt.Fprintf(&b, "; and %d more", len(viol)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		ptr := v.Pointer
		if ptr == "" {
			ptr = "/"
		}
		b.WriteString(ptr)
		b.WriteString(": ")
		b.WriteString(v.Reason)
	}
	return b.String()
}

// jsonInt accepts json.Number (or float64) values that are whole numbers.
func jsonInt(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return n, true
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err == nil && f == float64(int64(f)) {
			return int64(f), true
		}
	case float64:
		if x == float64(int64(x)) {
			return int64(x), true
		}
	}
	return 0, false
}

func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
