package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
)

// Format is how lines are written.
type Format string

// The formats of log.format.
const (
	// Text writes key=value lines (slog's TextHandler).
	Text Format = "text"
	// JSON writes one JSON object per line (slog's JSONHandler).
	JSON Format = "json"
)

// ParseFormat reads a log.format value; "" is Text.
func ParseFormat(s string) (Format, error) {
	switch Format(s) {
	case "", Text:
		return Text, nil
	case JSON:
		return JSON, nil
	}
	return Text, fmt.Errorf("log format %q, want text or json", s)
}

// NewHandler returns a handler writing records at or above level to w in
// format f. Unlike slog's own handlers, it writes each key at most once per
// line: an attribute given again — by a later With, or in the record —
// replaces the earlier one, and a record attribute named like a built-in
// key (time, level, msg, source) is written as attr_<key>. It is safe for
// concurrent use; every line is one Write to w.
func NewHandler(w io.Writer, f Format, level slog.Leveler) slog.Handler {
	opts := &slog.HandlerOptions{Level: level}
	var base slog.Handler
	if f == JSON {
		base = slog.NewJSONHandler(w, opts)
	} else {
		base = slog.NewTextHandler(w, opts)
	}
	return &handler{base: base, inner: base, frames: []frame{{}}}
}

// frame is the attributes of one group level: frames[0] the top level,
// each later one a group opened with WithGroup.
type frame struct {
	group string
	attrs []slog.Attr
}

// handler keeps the With attributes itself, merged key by key, and hands
// them to the base handler once per With (inner), so that a repeated key
// replaces the earlier value instead of being written twice.
type handler struct {
	base   slog.Handler
	inner  slog.Handler // base with frames applied
	frames []frame
}

// builtin are the keys the base handlers write at the top level.
var builtin = []string{slog.TimeKey, slog.LevelKey, slog.MessageKey, slog.SourceKey}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.base.Enabled(ctx, l) }

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	frames := slices.Clone(h.frames)
	last := &frames[len(frames)-1]
	last.attrs = h.clean(slices.Concat(last.attrs, attrs), len(frames) == 1)
	return &handler{base: h.base, inner: build(h.base, frames), frames: frames}
}

func (h *handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	frames := append(slices.Clone(h.frames), frame{group: name})
	return &handler{base: h.base, inner: h.inner.WithGroup(name), frames: frames}
}

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	if !h.collides(r) {
		return h.inner.Handle(ctx, r)
	}
	// Rare: the record repeats a key (of its own, of the innermost With
	// attributes, or a built-in one). Write it through a handler without
	// the With attributes it replaces.
	top := len(h.frames) == 1
	var attrs []slog.Attr
	r.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, a)
		return true
	})
	attrs = h.clean(attrs, top)
	frames := slices.Clone(h.frames)
	last := &frames[len(frames)-1]
	last.attrs = slices.DeleteFunc(slices.Clone(last.attrs), func(a slog.Attr) bool {
		return slices.ContainsFunc(attrs, func(b slog.Attr) bool { return b.Key == a.Key })
	})
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	out.AddAttrs(attrs...)
	return build(h.base, frames).Handle(ctx, out)
}

// collides reports whether r's attributes repeat a key: among themselves,
// of the innermost With attributes, or a built-in key at the top level;
// or hold a group, whose keys are checked by the slow path.
func (h *handler) collides(r slog.Record) bool {
	if r.NumAttrs() == 0 {
		return false
	}
	with := h.frames[len(h.frames)-1].attrs
	top := len(h.frames) == 1
	var seen [8]string
	keys := seen[:0]
	found := false
	r.Attrs(func(a slog.Attr) bool {
		k := a.Key
		if a.Value.Kind() == slog.KindGroup || a.Value.Kind() == slog.KindLogValuer ||
			slices.Contains(keys, k) || (top && slices.Contains(builtin, k)) ||
			slices.ContainsFunc(with, func(w slog.Attr) bool { return w.Key == k }) {
			found = true
			return false
		}
		keys = append(keys, k)
		return true
	})
	return found
}

// clean resolves values, inlines groups without a key, renames built-in
// keys at the top level and keeps the last attribute of each key (in the
// place of the last one); groups are cleaned inside too.
func (h *handler) clean(attrs []slog.Attr, top bool) []slog.Attr {
	flat := make([]slog.Attr, 0, len(attrs))
	var add func(as []slog.Attr)
	add = func(as []slog.Attr) {
		for _, a := range as {
			a.Value = a.Value.Resolve()
			if a.Value.Kind() == slog.KindGroup {
				if a.Key == "" {
					add(a.Value.Group())
					continue
				}
				a.Value = slog.GroupValue(h.clean(a.Value.Group(), false)...)
			}
			if a.Equal(slog.Attr{}) {
				continue // slog drops empty attributes too
			}
			if top && slices.Contains(builtin, a.Key) {
				a.Key = "attr_" + a.Key
			}
			flat = append(flat, a)
		}
	}
	add(attrs)
	out := flat[:0:0]
	for i, a := range flat {
		if !slices.ContainsFunc(flat[i+1:], func(b slog.Attr) bool { return b.Key == a.Key }) {
			out = append(out, a)
		}
	}
	return out
}

// build applies frames to base.
func build(base slog.Handler, frames []frame) slog.Handler {
	h := base
	for _, f := range frames {
		if f.group != "" {
			h = h.WithGroup(f.group)
		}
		if len(f.attrs) > 0 {
			h = h.WithAttrs(f.attrs)
		}
	}
	return h
}
