package process

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"

	"go.yaml.in/yaml/v3"

	"github.com/eventlogging/eventlogging/internal/capsule"
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
}

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
			st.patterns = append(st.patterns, streamPattern{re: re, s: s})
			continue
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

// Lookup returns the configuration of stream name, with Topic filled in.
func (st *Streams) Lookup(name string) (Stream, bool) {
	t := st.table()
	if t == nil {
		return Stream{}, false
	}
	s, ok := t.exact[name]
	if !ok {
		for _, p := range t.patterns {
			if p.re.MatchString(name) {
				s, ok = p.s, true
				break
			}
		}
	}
	if !ok || !capsule.ValidTopicName(name) {
		return Stream{}, false
	}
	if s.Topic == "" {
		s.Topic = name
	}
	if s.AvroSubject == "" && s.Format == "avro" { // not built per JSON event
		s.AvroSubject = s.Topic + "-value"
	}
	s.Name = name
	return s, true
}

// ParseStreams reads a stream configuration file:
//
//	streams:
//	  - name: analytics.edit_funnel
//	    schema_title: analytics/edit_funnel
//	    topic: eventlogging_analytics.edit_funnel
//	  - name: /^analytics\.test\..+$/
func ParseStreams(data []byte) (*Streams, error) {
	var f struct {
		Streams []Stream `yaml:"streams"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
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
