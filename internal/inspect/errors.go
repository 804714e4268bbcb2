package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/lineformat"
	"github.com/eventlogging/eventlogging/internal/schema"
)

// ErrNotFound is wrapped by errors for a schema, topic or record that does
// not exist.
var ErrNotFound = errors.New("not found")

// errorEntry is an EventError with what replaying it needs.
type errorEntry struct {
	rec   ErrorRecord
	ec    capsule.ErrorCapsule
	topic string // the raw topic its record came from, if any
}

// Errors returns the latest EventErrors matching f, newest first.
//
// While Run is running, a filter without Scan or Offsets is answered from
// the window of the latest EventErrors held in memory; otherwise the error
// topic is read.
func (i *Inspector) Errors(ctx context.Context, f ErrorFilter) ([]ErrorRecord, error) {
	entries, ok := []errorEntry(nil), false
	if f.Scan == 0 && !f.Offsets {
		entries, ok = i.recent.query(f)
	}
	if !ok {
		var err error
		if entries, err = i.scanErrors(ctx, f); err != nil {
			return nil, err
		}
	}
	out := make([]ErrorRecord, len(entries))
	for k, e := range entries {
		out[k] = e.rec
	}
	return out, nil
}

func (i *Inspector) scanErrors(ctx context.Context, f ErrorFilter) ([]errorEntry, error) {
	replayed, err := i.replayed(ctx)
	if err != nil {
		return nil, err
	}
	rc := kafka.ReadConfig{Kafka: i.cfg.Kafka, Topic: i.cfg.ErrorTopic, Since: f.Since, AllPartitions: !f.Offsets}
	switch {
	case f.Scan == 0:
		rc.LastN = i.cfg.ScanPerPartition
	case f.Scan > 0:
		rc.LastN = f.Scan
	}
	if f.Offsets {
		rc.Partition, rc.FromOffset, rc.ToOffset = f.Partition, f.FromOffset, f.ToOffset
	}
	var out []errorEntry
	err = kafka.Read(ctx, rc, func(r kafka.Record) error {
		if e, ok := decodeError(r, replayed); ok && f.match(e) {
			out = append(out, e)
		}
		return nil
	})
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return nil, nil // no error was ever produced
	}
	if err != nil {
		return nil, err
	}
	return newestFirst(out, f.Limit), nil
}

// decodeError reads an EventError record; ok is false for a record that
// is not one.
func decodeError(r kafka.Record, replayed map[string]capsule.ReplayOutcome) (errorEntry, bool) {
	var ec capsule.ErrorCapsule
	if json.Unmarshal(r.Value, &ec) != nil || ec.UUID == "" {
		return errorEntry{}, false
	}
	when := time.Unix(ec.Timestamp, 0).UTC()
	if y := when.Year(); y < 1 || y > 9999 {
		// A client-supplied timestamp out of RFC 3339's range would make
		// every answer listing this record fail to encode: use the time
		// the record was written instead.
		when = r.Timestamp.UTC()
	}
	e := errorEntry{ec: ec, rec: ErrorRecord{
		UUID: ec.UUID, Time: when, Schema: ec.Event.Schema, Revision: ec.Event.Revision,
		Code: ec.Event.Code, Message: ec.Event.Message, RawEvent: ec.Event.RawEvent,
		Partition: r.Partition, Offset: r.Offset,
		Replayable: ec.Event.RawEventBytes == 0,
	}}
	o, ok := replayed[ec.UUID]
	e.rec.noteReplay(o, ok)
	e.rec.Subject, e.rec.Label = subjectOf(ec.Event.Schema, ec.Event.Revision)
	for _, v := range ec.Event.Errors {
		e.rec.Errors = append(e.rec.Errors, Violation{Path: v.Pointer, Message: v.Reason})
	}
	if src := ec.Event.Source; src != nil {
		e.topic = src.Topic
		e.rec.Event = eventOfRawLine(ec.Event.RawEvent)
	} else if json.Valid([]byte(ec.Event.RawEvent)) {
		e.rec.Event = json.RawMessage(ec.Event.RawEvent)
	}
	return e, true
}

// subjectOf is the registry subject of an EventError's schema and the
// label of its version (see ErrorRecord): an Event Platform $schema
// "/analytics/edit_funnel/1.0.0" (or a URL ending so) is subject
// "analytics/edit_funnel", version "1.0.0", as the registry registers it
// and the processor resolves it; a legacy name is its own subject, with
// its revision when known.
func subjectOf(name string, revision int64) (subject, label string) {
	if strings.Contains(name, "/") {
		p, err := schema.Path(name)
		if err != nil {
			return "", ""
		}
		title, version := path.Split(p)
		title = strings.Trim(title, "/")
		if title == "" {
			return "", ""
		}
		return title, version
	}
	if revision > 0 {
		label = strconv.FormatInt(revision, 10)
	}
	return name, label
}

// match reports whether e passes the filter's schema and time bounds.
func (f ErrorFilter) match(e errorEntry) bool {
	t := e.rec.Time
	return (f.Schema == "" || e.rec.Schema == f.Schema) && (f.Until.IsZero() || !t.After(f.Until)) && (f.Since.IsZero() || !t.Before(f.Since))
}

// newestFirst sorts entries newest first and keeps limit of them (0: 100,
// -1: all).
func newestFirst(out []errorEntry, limit int) []errorEntry {
	slices.SortFunc(out, func(a, b errorEntry) int {
		if c := b.rec.Time.Compare(a.rec.Time); c != 0 {
			return c
		}
		if a.rec.Partition != b.rec.Partition {
			return int(a.rec.Partition - b.rec.Partition)
		}
		return int(b.rec.Offset - a.rec.Offset)
	})
	if limit == 0 {
		limit = 100
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// eventOfRawLine extracts the client's JSON from a raw line whose first
// field is the url-encoded capsule "?<json>;"; nil when it is not one.
func eventOfRawLine(line string) json.RawMessage {
	first, _, _ := strings.Cut(line, "\t")
	first = strings.TrimSuffix(strings.TrimPrefix(first, "?"), ";")
	s, err := url.QueryUnescape(first)
	if err != nil || !json.Valid([]byte(s)) {
		return nil
	}
	return json.RawMessage(s)
}

// replayed reads the replay log: the latest outcome of each EventError
// replayed, which tells whether it counts as replayed (valid or forced) or
// may be replayed again (it failed again).
func (i *Inspector) replayed(ctx context.Context) (map[string]capsule.ReplayOutcome, error) {
	set := map[string]capsule.ReplayOutcome{}
	err := kafka.Read(ctx, kafka.ReadConfig{Kafka: i.cfg.Kafka, Topic: i.cfg.ReplayTopic, AllPartitions: true}, func(r kafka.Record) error {
		if len(r.Key) > 0 {
			set[string(r.Key)] = capsule.ParseReplayOutcome(r.Value)
		}
		return nil
	})
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return set, nil
	}
	return set, err
}

// Replay re-submits the EventErrors with these uuids to the raw topic they
// came from; see ReplayMatching.
func (i *Inspector) Replay(ctx context.Context, uuids []string, opt ReplayOptions) (ReplayResult, error) {
	if len(uuids) == 0 {
		return ReplayResult{}, nil
	}
	entries, ok := i.recent.lookup(uuids)
	if !ok || len(entries) < len(uuids) {
		var err error
		if entries, err = i.scanErrors(ctx, ErrorFilter{Limit: -1}); err != nil {
			return ReplayResult{}, err
		}
	}
	want := map[string]bool{}
	for _, u := range uuids {
		want[u] = true
	}
	entries = slices.DeleteFunc(entries, func(e errorEntry) bool { return !want[e.rec.UUID] })
	res, err := i.replay(ctx, entries, opt)
	for _, e := range entries {
		delete(want, e.rec.UUID)
	}
	for u := range want {
		res.Skipped++
		res.Reasons = append(res.Reasons, u+": not among the recent EventErrors")
	}
	return res, err
}

// ReplayMatching re-submits every EventError matching f (unless
// opt.DryRun, which only counts) — after a schema fix, so they are
// processed again. Each goes back through the raw path exactly as it was
// received, marked as a replay (header capsule.HeaderReplayOf): the
// processor resolves its schema afresh, gives it the same uuid (so the
// sinks store it once even if it was stored before) and records the
// outcome in the replay log. Only a replay that came out valid (or a
// forced one) closes an EventError; one that failed again stays
// replayable. Replay waits up to opt.Wait for the outcomes and reports
// them. Errors already replayed (unless opt.Force) and errors whose raw
// event was cut to size are skipped.
//
// Unlike Errors, a zero f.Limit means no limit.
func (i *Inspector) ReplayMatching(ctx context.Context, f ErrorFilter, opt ReplayOptions) (ReplayResult, error) {
	if f.Limit == 0 {
		f.Limit = -1
	}
	entries, err := i.scanErrors(ctx, f)
	if err != nil {
		return ReplayResult{}, err
	}
	return i.replay(ctx, entries, opt)
}

func (i *Inspector) replay(ctx context.Context, entries []errorEntry, opt ReplayOptions) (ReplayResult, error) {
	var res ReplayResult
	var raw, forced []kafka.Message
	var sent []string
	seen := map[string]capsule.ReplayOutcome{}
	now := time.Now().UTC()
	// An EventError that failed again on replay is in the error topic
	// twice, with the same uuid: each uuid is considered once.
	considered := map[string]bool{}
	for _, e := range entries {
		if considered[e.rec.UUID] {
			continue
		}
		considered[e.rec.UUID] = true
		switch {
		case e.rec.Replayed && !opt.Force:
			res.Skipped++
			res.Reasons = append(res.Reasons, e.rec.UUID+": already replayed")
			continue
		case !e.rec.Replayable:
			res.Skipped++
			res.Reasons = append(res.Reasons, fmt.Sprintf("%s: the raw event was cut to size (%d bytes), it cannot be replayed", e.rec.UUID, e.ec.Event.RawEventBytes))
			continue
		}
		seen[e.rec.UUID] = capsule.ReplayOutcome{Status: capsule.ReplayForced, Time: now}
		sent = append(sent, e.rec.UUID)
		raw = append(raw, i.rawRecord(e))
		if opt.Force {
			v, _ := json.Marshal(capsule.ReplayOutcome{Status: capsule.ReplayForced, Time: now})
			forced = append(forced, kafka.Message{Topic: i.cfg.ReplayTopic, Key: []byte(e.rec.UUID), Value: v})
		}
	}
	res.Replayed = len(raw)
	if opt.DryRun || len(raw) == 0 {
		return res, nil
	}
	if err := i.prod.Topics(kafka.TopicDefaults{Partitions: 1, Configs: map[string]*string{"cleanup.policy": ptr("compact")}}).Ensure(ctx, i.cfg.ReplayTopic); err != nil {
		return ReplayResult{}, fmt.Errorf("replay log: %w", err)
	}
	if opt.Force {
		// Forced: recorded first, so the processors' outcomes (which come
		// after) still tell what happened.
		if err := i.prod.ProduceSync(ctx, forced); err != nil {
			return ReplayResult{}, fmt.Errorf("replay log: %w", err)
		}
		i.recent.setReplayed(seen)
		res.Forced = true
	}
	outcomes, err := i.replayAndWait(ctx, raw, sent, opt.Wait)
	if err != nil {
		return res, err
	}
	done := map[string]capsule.ReplayOutcome{}
	for _, u := range sent {
		o, ok := outcomes[u]
		switch {
		case !ok:
			res.Pending = append(res.Pending, u)
		case o.Status == capsule.ReplayValid:
			res.Valid++
			done[u] = o
		default:
			res.Failed = append(res.Failed, ReplayFailure{UUID: u, Code: o.Code, Message: o.Message})
			if opt.Force {
				// Closed all the same; what came of it is kept.
				o.Status = capsule.ReplayForced
			}
			done[u] = o
		}
	}
	i.recent.setReplayed(done)
	return res, nil
}

// replayAndWait produces the raw records, marked as replays, and collects
// the processors' outcomes for the uuids sent until all are in or wait has
// passed. The replay log is followed from before the produce, so no
// outcome is missed.
func (i *Inspector) replayAndWait(ctx context.Context, raw []kafka.Message, sent []string, wait time.Duration) (map[string]capsule.ReplayOutcome, error) {
	for k := range raw {
		raw[k].Headers = []kafka.Header{{Key: capsule.HeaderReplayOf, Value: []byte(sent[k])}}
	}
	if wait <= 0 {
		if err := i.prod.ProduceSync(ctx, raw); err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
		return nil, nil
	}
	want := make(map[string]bool, len(sent))
	for _, u := range sent {
		want[u] = true
	}
	var mu sync.Mutex
	outcomes := map[string]capsule.ReplayOutcome{}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	started := make(chan struct{})
	tailed := make(chan error, 1)
	go func() {
		tailed <- kafka.Tail(wctx, kafka.TailConfig{Kafka: i.cfg.Kafka, Topics: []string{i.cfg.ReplayTopic}, OnStart: func() { close(started) }},
			func(r kafka.Record) error {
				u := string(r.Key)
				o := capsule.ParseReplayOutcome(r.Value)
				if !want[u] || o.Status == capsule.ReplayForced {
					return nil
				}
				mu.Lock()
				defer mu.Unlock()
				outcomes[u] = o
				if len(outcomes) == len(want) {
					return kafka.ErrStopTail
				}
				return nil
			})
	}()
	select {
	case <-started:
	case err := <-tailed:
		return nil, fmt.Errorf("replay: following %s: %w", i.cfg.ReplayTopic, err)
	}
	if err := i.prod.ProduceSync(ctx, raw); err != nil {
		cancel()
		if terr := <-tailed; terr != nil {
			err = errors.Join(err, terr)
		}
		return nil, fmt.Errorf("replay: %w", err)
	}
	if err := <-tailed; err != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("replay: following %s: %w", i.cfg.ReplayTopic, err)
	}
	mu.Lock()
	defer mu.Unlock()
	return outcomes, nil
}

// rawRecord rebuilds the raw record of an EventError.
func (i *Inspector) rawRecord(e errorEntry) kafka.Message {
	ev := e.ec.Event
	if e.topic != "" {
		v := []byte(ev.RawEvent)
		if ev.RawEventBase64 != nil {
			v = ev.RawEventBase64
		}
		return kafka.Message{Topic: e.topic, Value: v}
	}
	// From the synchronous POST: the event itself, wrapped the way the
	// intake wraps a hasty POST, with the original intake fields.
	var seq int64
	if e.ec.SeqID != nil {
		seq = *e.ec.SeqID
	}
	line := lineformat.RawLine([]byte(ev.RawEvent), e.ec.RecvFrom, seq, time.Unix(e.ec.Timestamp, 0), "", e.ec.UserAgent)
	return kafka.Message{Topic: i.cfg.RawTopics[0], Value: line}
}

func ptr(s string) *string { return &s }
