package filesink

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"slices"
	"time"

	"github.com/eventlogging/eventlogging/internal/vfs"
)

// maxHoursPerPass bounds how many hours of one topic a CloseHours call
// marks, so a long backlog is closed over several calls.
const maxHoursPerPass = 7 * 24

// hourState is the durable closing state of a topic: every hour before
// NextHour has its _SUCCESS marker.
type hourState struct {
	Topic string `json:"topic"`
	// NextHour is the first hour not closed yet. Before any hour is closed
	// it is the earliest hour with published data.
	NextHour time.Time `json:"next_hour"`
	// AnyClosed is set once an hour was closed; from then on data published
	// before NextHour is late.
	AnyClosed bool `json:"any_closed"`
}

// CloseHours publishes the files due for rotation by age (MaxFileAge), then
// closes the hours that are complete: it publishes their remaining open
// files and writes an empty _SUCCESS file in each of their directories.
// Call it on a timer, about every minute; it is cheap when there is nothing
// to do.
//
// The rule: hour [H, H+1h) of a topic is closed when
//
//	H+1h+Lateness <= now, and
//	H+1h+Lateness <= the watermark of every active partition of the topic,
//
// where a partition is active if it was assigned to this sink (StartOffsets)
// or delivered records since Open, and delivered a record within IdleAfter;
// its watermark is the greatest receive time (dt) it delivered. So an hour
// closes once every partition has moved Lateness past it, or gone quiet.
// Hours close in order, from the first hour with data in this root; hours
// without data get a directory holding only _SUCCESS, so batch jobs never
// wait for an hour that will stay empty. A record that arrives for a closed
// hour is still published there (nothing is dropped) and logged as late.
//
// Files of a partition with unacknowledged poison (see Write) cannot be
// published yet; hours they cover wait for the next call.
func (s *Sink) CloseHours(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	now := s.cfg.Now()
	if err := s.rotate(now, false); err != nil {
		return s.fail(err)
	}
	topics := make([]string, 0, len(s.hours))
	for t := range s.hours {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	for _, topic := range topics {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.closeTopic(topic, now); err != nil {
			return s.fail(err)
		}
	}
	return nil
}

// closeTopic closes the complete hours of one topic.
func (s *Sink) closeTopic(topic string, now time.Time) error {
	hs := s.hours[topic]
	limit := now.Add(-s.cfg.Lateness)
	active := 0
	var parts []*partState
	for _, st := range s.sortedParts() {
		if st.topic != topic {
			continue
		}
		parts = append(parts, st)
		if st.seenAt.IsZero() || now.Sub(st.seenAt) >= s.cfg.IdleAfter {
			continue
		}
		active++
		if wm := st.watermark.Add(-s.cfg.Lateness); wm.Before(limit) {
			limit = wm
		}
	}
	if active == 0 && !s.consumed(topic) {
		return nil // not consumed by this process: nobody knows when its hours end
	}
	end := limit.Truncate(time.Hour)
	if lim := hs.NextHour.Add(maxHoursPerPass * time.Hour); end.After(lim) {
		end = lim
	}
	if !end.After(hs.NextHour) {
		return nil
	}
	// Publish what is still open for the hours to close.
	for _, st := range parts {
		oldest := int64(-1)
		for k := range st.files {
			if oldest < 0 || k.hour < oldest {
				oldest = k.hour
			}
		}
		if oldest < 0 || oldest >= end.Unix() {
			continue
		}
		if len(st.pending) > 0 {
			if h := time.Unix(oldest, 0).UTC(); h.Before(end) {
				end = h
			}
			continue
		}
		if err := s.checkpoint(st); err != nil {
			return err
		}
	}
	if !end.After(hs.NextHour) {
		return nil
	}
	n := 0
	for h := hs.NextHour; h.Before(end); h = h.Add(time.Hour) {
		if err := s.writeSuccess(topic, h); err != nil {
			return err
		}
		n++
	}
	from := hs.NextHour
	next := *hs
	next.NextHour, next.AnyClosed = end, true
	if err := s.saveHours(&next); err != nil {
		return err
	}
	*hs = next
	s.log.Info("hours closed", "topic", topic, "from", from, "to", end, "hours", n)
	return nil
}

// consumed reports whether a partition of topic was assigned to or
// delivered records to this process.
func (s *Sink) consumed(topic string) bool {
	for key, st := range s.parts {
		if key.topic == topic && !st.seenAt.IsZero() {
			return true
		}
	}
	return false
}

// writeSuccess writes the _SUCCESS marker of one hour.
func (s *Sink) writeSuccess(topic string, hour time.Time) error {
	dir := hourDir(topic, hour.Unix())
	if s.store != nil {
		return s.putState(dir+"/"+successFile, nil)
	}
	if err := mkdirAllSync(s.fs, s.root, dir); err != nil {
		return err
	}
	f, err := s.fs.OpenFile(s.abs(dir+"/"+successFile), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return syncDir(s.fs, s.abs(dir))
}

// noteHours records, before a checkpoint publishes files, the hours they
// fill: the first hour with data starts the topic's closing state, and data
// for a closed hour is logged as late.
func (s *Sink) noteHours(topic string, files []*openFile) error {
	if len(files) == 0 {
		return nil
	}
	oldest := files[0].key.hour
	for _, f := range files {
		oldest = min(oldest, f.key.hour)
	}
	h := time.Unix(oldest, 0).UTC()
	hs := s.hours[topic]
	switch {
	case hs == nil:
		hs = &hourState{Topic: topic, NextHour: h}
		if err := s.saveHours(hs); err != nil {
			return err
		}
		s.hours[topic] = hs
	case !h.Before(hs.NextHour):
	case !hs.AnyClosed:
		next := *hs
		next.NextHour = h
		if err := s.saveHours(&next); err != nil {
			return err
		}
		*hs = next
	default:
		for _, f := range files {
			if f.key.hour < hs.NextHour.Unix() {
				s.log.Warn("late records published in a closed hour", "topic", topic, "partition", f.st.partition,
					"hour", time.Unix(f.key.hour, 0).UTC(), "records", f.records, "first_offset", f.first)
			}
		}
	}
	return nil
}

// saveHours writes a topic's closing state atomically.
func (s *Sink) saveHours(hs *hourState) error {
	b, err := json.MarshalIndent(hs, "", "  ")
	if err != nil {
		return err
	}
	key := path.Join(hoursDir, hs.Topic+".json")
	if s.store != nil {
		return s.putState(key, append(b, '\n'))
	}
	return writeFileAtomic(s.fs, s.abs(key), append(b, '\n'))
}

// loadHours reads every topic's closing state.
func (s *Sink) loadHours() error {
	return s.eachStateFile(hoursDir, func(name string) error {
		b, err := vfs.ReadFile(s.fs, s.abs(path.Join(hoursDir, name)))
		if err != nil {
			return err
		}
		return s.addHours(name, b)
	})
}

// addHours loads one topic's closing state, read from the file name.
func (s *Sink) addHours(name string, b []byte) error {
	var hs hourState
	if err := json.Unmarshal(b, &hs); err != nil {
		return fmt.Errorf("hours state %s: %w", name, err)
	}
	if hs.Topic+".json" != name || hs.NextHour.IsZero() {
		return fmt.Errorf("hours state %s: bad content", name)
	}
	s.hours[hs.Topic] = &hs
	return nil
}
