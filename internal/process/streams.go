package process

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/yamlerr"
)

// Stream configures one Event Platform stream (or a family of streams by
// regex): the schema title its events must have and the topic they go to.
type Stream struct {
	// Name is the stream name, or a regex between slashes ("/^a\..+$/").
	Name string `yaml:"name" json:"name"`
	// SchemaTitle is the title the event's $schema must have; "" allows any.
	SchemaTitle string `yaml:"schema_title" json:"schema_title"`
	// Topic receives the stream's events; default: the stream name.
	Topic string `yaml:"topic" json:"topic,omitempty"`
	// SampleRate in [0, 1] is served to clients; the intake does not drop
	// events by it. Default 1.
	SampleRate float64 `yaml:"sample_rate" json:"sample_rate"`
	// Format of the records written to Topic: "json" (default) or "avro"
	// (Confluent wire format, with the latest Avro schema registered for
	// AvroSubject).
	Format string `yaml:"format" json:"format,omitempty"`
	// AvroSubject holds the stream's Avro schema; default "<topic>-value"
	// (Confluent's topic name strategy).
	AvroSubject string `yaml:"avro_subject" json:"avro_subject,omitempty"`
	// MaxStreams bounds the distinct stream names a regex stream without
	// a fixed Topic admits (each gets a topic of its own, a sink table and
	// metric series): the first MaxStreams names a process sees are
	// admitted, events of further names become EventErrors saying so.
	// Default DefaultMaxStreams; not allowed with a fixed Topic or on a
	// stream configured by name.
	MaxStreams int `yaml:"max_streams" json:"max_streams,omitempty"`
	// MetricLabel labels the stream's metrics (set by Lookup): the name,
	// or, for a regex stream with a fixed topic (whose names are not
	// bounded) or a name not admitted yet, the regex.
	MetricLabel string `yaml:"-" json:"-"`
	// names, set by Lookup for a name of a regex stream not admitted yet,
	// is where Admit adds it; regex is that stream's configured name.
	names *nameSet
	regex string
}

// AdmitErr is Admit's refusal as an error (ErrTooManyStreams), nil when
// the stream is admitted.
func (s *Stream) AdmitErr() error {
	if s.Admit() {
		return nil
	}
	return tooManyStreams(s.regex, s.names.limit())
}

// Admit admits the stream's name to its regex stream's max_streams, once
// an event of it is valid (so that invalid events cannot use the places
// up), and reports whether it is admitted; on success the metrics count
// under the name. A stream looked up as admitted, or not bounded, is.
func (s *Stream) Admit() bool {
	if s.names == nil {
		return true
	}
	if !s.names.admit(s.Name) {
		return false
	}
	s.MetricLabel, s.names = s.Name, nil
	return true
}

// tooManyStreams is the error for a name past the max_streams of the
// regex stream named regex.
func tooManyStreams(regex string, maxStreams int) error {
	return fmt.Errorf("%w: regex stream %s admits %d distinct stream names (max_streams), and has them", ErrTooManyStreams, regex, maxStreams)
}

// DefaultMaxStreams is Stream.MaxStreams' default.
const DefaultMaxStreams = 20

// ErrStreamNotConfigured and ErrTooManyStreams are LookupErr's errors.
var (
	ErrStreamNotConfigured = errors.New("stream is not configured")
	ErrTooManyStreams      = errors.New("stream limit reached")
)

// Streams looks stream names up: exact names first, then regexes in order.
// Its configuration can be replaced while it is in use ([Streams.Replace]),
// so a reload reaches every holder at once. Safe for concurrent use.
type Streams struct {
	t atomic.Pointer[streamTable]
}

// streamTable is one configuration; never modified once stored.
type streamTable struct {
	exact    map[string]Stream
	patterns []streamPattern
}

// Replace puts next's configuration in force in st (for a reload): every
// later Lookup and List answers from it. A nil next empties st.
func (st *Streams) Replace(next *Streams) {
	t := &streamTable{exact: map[string]Stream{}}
	if next != nil {
		t = next.table()
	}
	// A regex stream kept by the reload keeps the names it admitted (its
	// new max_streams applies): a reload must not admit max_streams more.
	if old := st.table(); old != nil {
		for i := range t.patterns {
			for _, op := range old.patterns {
				if op.s.Name == t.patterns[i].s.Name && op.names != nil && t.patterns[i].names != nil {
					op.names.setMax(t.patterns[i].s.MaxStreams)
					t.patterns[i].names = op.names
				}
			}
		}
	}
	st.t.Store(t)
}

// table returns the configuration in force; nil for a nil or zero Streams.
func (st *Streams) table() *streamTable {
	if st == nil {
		return nil
	}
	return st.t.Load()
}

type streamPattern struct {
	re *regexp.Regexp
	s  Stream
	// names are the stream names admitted (a topic each), at most
	// s.MaxStreams; nil for a pattern with a fixed topic.
	names *nameSet
}

// nameSet is a bounded set of names. Safe for concurrent use.
type nameSet struct {
	mu    sync.Mutex
	names map[string]struct{}
	max   int
}

// has reports whether name is in the set, and whether the set is full.
func (n *nameSet) has(name string) (in, full bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, in = n.names[name]
	return in, len(n.names) >= n.max
}

// limit is the set's bound.
func (n *nameSet) limit() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.max
}

// setMax changes the set's bound (names already in stay).
func (n *nameSet) setMax(m int) {
	n.mu.Lock()
	n.max = m
	n.mu.Unlock()
}

// admit reports whether name is in the set, adding it if there is room.
func (n *nameSet) admit(name string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.names[name]; ok {
		return true
	}
	if len(n.names) >= n.max {
		return false
	}
	n.names[name] = struct{}{}
	return true
}

// NewStreams validates and indexes stream configurations.
func NewStreams(list []Stream) (*Streams, error) {
	st := &streamTable{exact: map[string]Stream{}}
	for i, s := range list {
		if s.SampleRate == 0 {
			s.SampleRate = 1
		}
		if !(s.SampleRate >= 0 && s.SampleRate <= 1) { // also refuses NaN
			return nil, fmt.Errorf("streams[%d] %q: sample_rate %v is not in [0, 1]", i, s.Name, s.SampleRate)
		}
		switch s.Format {
		case "", "json", "avro":
		default:
			return nil, fmt.Errorf("streams[%d] %q: format %q: want json or avro", i, s.Name, s.Format)
		}
		if s.Topic != "" && !capsule.ValidTopicName(s.Topic) {
			return nil, fmt.Errorf("streams[%d] %q: topic %q is not a valid topic name", i, s.Name, s.Topic)
		}
		if len(s.Name) > 2 && strings.HasPrefix(s.Name, "/") && strings.HasSuffix(s.Name, "/") {
			re, err := regexp.Compile(s.Name[1 : len(s.Name)-1])
			if err != nil {
				return nil, fmt.Errorf("streams[%d] %q: %w", i, s.Name, err)
			}
			sp := streamPattern{re: re, s: s}
			switch {
			case s.Topic != "" && s.MaxStreams != 0:
				return nil, fmt.Errorf("streams[%d] %q: max_streams bounds the topics a regex stream creates, one a name; this stream writes every name to topic %q: remove max_streams", i, s.Name, s.Topic)
			case s.MaxStreams < 0:
				return nil, fmt.Errorf("streams[%d] %q: max_streams %d: want a positive number of stream names (default %d)", i, s.Name, s.MaxStreams, DefaultMaxStreams)
			case s.Topic == "":
				if sp.s.MaxStreams == 0 {
					sp.s.MaxStreams = DefaultMaxStreams
				}
				sp.names = &nameSet{names: map[string]struct{}{}, max: sp.s.MaxStreams}
			}
			st.patterns = append(st.patterns, sp)
			continue
		}
		if s.MaxStreams != 0 {
			return nil, fmt.Errorf("streams[%d] %q: max_streams applies to a regex stream (a name between slashes) only", i, s.Name)
		}
		if !capsule.ValidTopicName(s.Name) {
			return nil, fmt.Errorf("streams[%d]: name %q: want letters, digits, '.', '_', '-' (or a /regex/)", i, s.Name)
		}
		if _, dup := st.exact[s.Name]; dup {
			return nil, fmt.Errorf("streams[%d]: stream %q configured twice", i, s.Name)
		}
		st.exact[s.Name] = s
	}
	out := &Streams{}
	out.t.Store(st)
	return out, nil
}

// Lookup returns the configuration of stream name, with Topic filled in;
// false when it is not configured or over its regex's max_streams.
func (st *Streams) Lookup(name string) (Stream, bool) {
	s, err := st.LookupErr(name)
	return s, err == nil
}

// LookupErr is Lookup, saying why a name is refused: ErrStreamNotConfigured,
// or ErrTooManyStreams (wrapped, with the regex and its limit) when the
// regex stream it matches has admitted its max_streams names already.
func (st *Streams) LookupErr(name string) (Stream, error) {
	t := st.table()
	if t == nil || !capsule.ValidTopicName(name) {
		return Stream{}, ErrStreamNotConfigured
	}
	s, ok := t.exact[name]
	s.MetricLabel = name
	if !ok {
		for _, p := range t.patterns {
			if !p.re.MatchString(name) {
				continue
			}
			s, ok = p.s, true
			// Metrics of a name not admitted (yet) count under the
			// regex: names are bounded only once admitted.
			s.MetricLabel = p.s.Name
			if p.names != nil {
				in, full := p.names.has(name)
				switch {
				case in:
					s.MetricLabel = name
				case full:
					return Stream{}, tooManyStreams(p.s.Name, p.s.MaxStreams)
				default:
					s.names, s.regex = p.names, p.s.Name // admitted by Admit, once an event of it is valid
				}
			}
			break
		}
	}
	if !ok {
		return Stream{}, ErrStreamNotConfigured
	}
	if s.Topic == "" {
		s.Topic = name
	}
	if s.AvroSubject == "" && s.Format == "avro" { // not built per JSON event
		s.AvroSubject = s.Topic + "-value"
	}
	s.Name = name
	return s, nil
}

// ParseStreams reads a stream configuration file:
//
//	streams:
//	  - name: analytics.edit_funnel
//	    schema_title: analytics/edit_funnel
//	    topic: eventlogging_analytics.edit_funnel
//	  - name: /^analytics\.test\..+$/
func ParseStreams(data []byte) (*Streams, error) {
	return parseStreams("", data)
}

// parseStreams is ParseStreams of the file named file ("" for none): a
// YAML error names the file, line and column and the key as written.
func parseStreams(file string, data []byte) (*Streams, error) {
	var f struct {
		Streams []Stream `yaml:"streams"`
	}
	if err := yamlerr.Decode(file, data, &f); err != nil {
		if file != "" {
			return nil, err
		}
		return nil, fmt.Errorf("stream config: %w", err)
	}
	st, err := NewStreams(f.Streams)
	if err != nil {
		return nil, fmt.Errorf("stream config: %w", err)
	}
	return st, nil
}

// List returns the configured streams, exact names first, for clients that
// fetch the stream configuration.
func (st *Streams) List() []Stream {
	t := st.table()
	if t == nil {
		return nil
	}
	out := make([]Stream, 0, len(t.exact)+len(t.patterns))
	for _, s := range t.exact {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Stream) int { return strings.Compare(a.Name, b.Name) })
	for _, p := range t.patterns {
		out = append(out, p.s)
	}
	return out
}
