package process

import (
	"context"
	"errors"
	"fmt"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/schema"
)

// buildPlatform handles an Event Platform event: {"$schema": "/title/1.0.0",
// "meta": {"stream": "..."}, ...}. The event itself is the output record:
// the processor fills meta.id (the uuid), meta.dt (receive time) and, when
// the schema declares "http", http.client_ip (per the IP policy) and the
// user agent; then validates the whole event against $schema and routes it
// to the stream's topic.
func (p *Processor) buildPlatform(ctx context.Context, s *scratch, ev map[string]any, c *capsule.Capsule) (route, *failure) {
	fl := &s.fields
	// Server fields only: an Event Platform event cannot set them.
	if fail := p.serverFields(c, fl, nil, s.ipMemo, true); fail != nil {
		return route{}, fail
	}
	uri, ok := ev["$schema"].(string)
	if !ok {
		return route{}, invalid("/$schema", "got "+schema.JSONKind(ev["$schema"])+", want string")
	}
	c.Schema = uri
	meta, ok := ev["meta"].(map[string]any)
	if !ok {
		if _, present := ev["meta"]; present {
			return route{}, invalid("/meta", "got "+schema.JSONKind(ev["meta"])+", want object")
		}
		return route{}, invalid("/meta", "required property missing (meta.stream names the event's stream)")
	}
	name, ok := meta["stream"].(string)
	if !ok {
		return route{}, invalid("/meta/stream", "required string property missing")
	}
	stream, err := p.cfg.Streams.LookupErr(name)
	switch {
	case errors.Is(err, ErrTooManyStreams):
		return route{}, invalid("/meta/stream", fmt.Sprintf("stream %q is not admitted: %v; configure the stream by name, or give the regex stream a topic", name, err))
	case err != nil:
		return route{}, invalid("/meta/stream", fmt.Sprintf("stream %q is not configured", name))
	}
	label := stream.MetricLabel
	sch, err := p.resolveURI(ctx, s, uri)
	switch {
	case errors.Is(err, schema.ErrNotFound):
		return route{}, labelled(label, processorFailure("unknown schema %s", uri))
	case err != nil:
		return route{}, labelled(label, processorFailure("resolve schema %s: %v", uri, err))
	}
	if stream.SchemaTitle != "" && sch.Title() != stream.SchemaTitle {
		return route{}, labelled(label, invalid("/$schema", fmt.Sprintf("stream %q accepts schema title %q, but %s has title %q", name, stream.SchemaTitle, uri, sch.Title())))
	}
	// meta.id: the client's, as EventGate keeps it (so a client can
	// de-duplicate its retries, and the schema judges it); else the
	// event's deterministic uuid in RFC 4122 form (a replay gets the same).
	id, fail := metaID(meta["id"], c.UUID)
	if fail != nil {
		return route{}, labelled(label, fail)
	}
	meta["id"] = id
	meta["dt"] = c.DT
	if sch.HasProperty("http") {
		h, _ := ev["http"].(map[string]any)
		if h == nil {
			h = map[string]any{}
		}
		if c.ClientIP != "" {
			h["client_ip"] = c.ClientIP
		} else {
			delete(h, "client_ip") // never keep a client-sent IP
		}
		if c.UserAgent != "" {
			hdrs, _ := h["request_headers"].(map[string]any)
			if hdrs == nil {
				hdrs = map[string]any{}
			}
			hdrs["user-agent"] = c.UserAgent
			h["request_headers"] = hdrs
		}
		ev["http"] = h
	}
	var ve *schema.ValidationError
	if err := sch.Validate(ev); errors.As(err, &ve) {
		viol := make([]capsule.Violation, len(ve.Violations))
		for i, x := range ve.Violations {
			viol[i] = capsule.Violation{Pointer: x.Pointer, Reason: x.Reason}
		}
		return route{}, &failure{code: capsule.CodeValidation, message: summarize(viol), violations: viol, label: label}
	} else if err != nil {
		return route{}, labelled(label, invalid("", err.Error()))
	}
	// A valid event's name takes its place in its regex stream's
	// max_streams now, not before: invalid events cannot use them up.
	if err := stream.AdmitErr(); err != nil {
		return route{}, labelled(label, invalid("/meta/stream", fmt.Sprintf("stream %q is not admitted: %v; configure the stream by name, or give the regex stream a topic", name, err)))
	}
	label = stream.MetricLabel
	// A valid event is known by its meta.id (what the sinks store and
	// de-duplicate on, and the per-event answer reports).
	c.UUID = id
	if stream.Format == "avro" {
		if p.cfg.Avro == nil {
			return route{}, labelled(label, processorFailure("stream %q is Avro but no schema registry is configured for Avro output", name))
		}
		value, err := p.encodeAvro(ctx, name, stream.AvroSubject, ev)
		if err != nil {
			return route{}, labelled(label, processorFailure("stream %q: %v", name, err))
		}
		return route{topic: stream.Topic, value: value, label: label}, nil
	}
	return route{topic: stream.Topic, value: capsule.AppendValue(make([]byte, 0, len(fl.Capsule)+256), ev), label: label}, nil
}

// AvroEncoder encodes a validated event with the latest Avro schema of a
// subject, in the Confluent wire format (avrowire.Codec). Safe for
// concurrent use. An encoder that also has the method of
// AvroFieldReporter (avrowire.Codec does) is used through it, so that the
// members of the event the Avro schema has no field for are counted
// (eventlogging_process_avro_dropped_fields_total) and named in a warning
// at most once a minute per stream.
type AvroEncoder interface {
	Encode(ctx context.Context, subject string, event map[string]any) ([]byte, error)
}

// AvroFieldReporter is an AvroEncoder that also reports the members of
// the event its encoding leaves out, as JSON pointers ("*" for array
// elements and map values), sorted, each once.
type AvroFieldReporter interface {
	EncodeEvent(ctx context.Context, subject string, event map[string]any) (value []byte, dropped []string, err error)
}

// encodeAvro encodes the event of stream with the stream's Avro subject
// and counts (and, rate-limited, logs) the members the encoding drops.
func (p *Processor) encodeAvro(ctx context.Context, stream, subject string, ev map[string]any) ([]byte, error) {
	r, ok := p.cfg.Avro.(AvroFieldReporter)
	if !ok {
		return p.cfg.Avro.Encode(ctx, subject, ev)
	}
	value, dropped, err := r.EncodeEvent(ctx, subject, ev)
	if err != nil || len(dropped) == 0 {
		return value, err
	}
	if p.cfg.Metrics.avroDropped(stream, len(dropped), p.cfg.Now()) {
		p.cfg.Logger.Warn("fields of the event are not in the stream's Avro schema and were dropped from the record",
			"component", "process", "stream", stream, "subject", subject, "fields", dropped)
	}
	return value, nil
}

// maxMetaID bounds a client's meta.id: the sinks' uuid column.
const maxMetaID = 64

// metaID returns the meta.id an Event Platform event is stored with: the
// client's string as sent, or, when it sent none (or an empty one), the
// event's uuid (32 hex digits) hyphenated as RFC 4122 writes it.
func metaID(client any, uuid string) (string, *failure) {
	switch v := client.(type) {
	case nil:
	case string:
		if len(v) > maxMetaID {
			return "", invalid("/meta/id", fmt.Sprintf("%d characters, more than the %d an event id may have", len(v), maxMetaID))
		}
		if v != "" {
			return v, nil
		}
	default:
		return "", invalid("/meta/id", "got "+schema.JSONKind(v)+", want string")
	}
	return capsule.Hyphenated(uuid), nil
}

// invalid is a validation failure with one violation.
func invalid(pointer, reason string) *failure {
	v := []capsule.Violation{{Pointer: pointer, Reason: reason}}
	return &failure{code: capsule.CodeValidation, message: summarize(v), violations: v}
}

// labelled marks a failure of a configured stream, for metrics.
func labelled(stream string, f *failure) *failure {
	f.label = stream
	return f
}
