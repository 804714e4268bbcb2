package keystore

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventlogging/eventlogging/internal/iphash"
	"github.com/eventlogging/eventlogging/internal/kafka"
)

// keyPartition is the only partition of the key topic that is read or
// written: "lowest offset wins" needs a single log.
const keyPartition int32 = 0

// Store is an iphash.KeyStore on a compacted, single-partition Kafka
// topic, so every processor shares the client-IP hashing keys.
//
// Record layout: key "<period>/<uuid>" with a fresh UUID per Append, so log
// compaction never collapses two candidates (which could change a period's
// lowest offset); value JSON {"period", "key_hex", "writer", "created"}.
// Load applies compaction semantics itself (a later record with the same key,
// including a tombstone, replaces the earlier one), so what it returns does
// not depend on whether the broker has compacted yet. Malformed records are
// logged (never their value, which holds a key) and skipped.
//
// A Store owns one franz-go client; it is safe for concurrent use. Close
// it when done.
type Store struct {
	topic string
	cl    *kgo.Client
	adm   *kadm.Client
	log   *slog.Logger

	ensured atomic.Bool // EnsureTopic succeeded: the topic exists

	mu        sync.Mutex // serialises Load, guards the fields below
	consuming bool       // the partition was added to the client
	next      int64      // offset after the last record consumed
	entries   []iphash.Entry
	keys      []string // record key of entries[i]
}

// keyRecord is the JSON value of a key record.
type keyRecord struct {
	Period  *int64  `json:"period"`
	KeyHex  *string `json:"key_hex"`
	Writer  string  `json:"writer"`
	Created string  `json:"created"`
}

// New returns a Store on topic, with its own client built from
// cfg and extra (TLS, SASL …). The Store's own settings are applied last
// and win: idempotent produce with acks from all in-sync replicas, partition
// 0 only. Nothing is contacted until the first call.
func New(cfg kafka.Config, topic string, extra ...kgo.Opt) (*Store, error) {
	if topic == "" {
		return nil, errors.New("kafka: key store: empty topic name")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	opts := append(append([]kgo.Opt(nil), extra...),
		kgo.RequiredAcks(kgo.AllISRAcks()), // idempotence is franz-go's default and needs all acks
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0),    // Append is synchronous and rare: do not wait for a batch
		kgo.KeepControlRecords(), // so Load sees every offset below the high watermark
	)
	cl, err := kafka.NewClient(cfg, opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka: key store %s: %w", topic, err)
	}
	return &Store{
		topic: topic,
		cl:    cl,
		adm:   kadm.NewClient(cl),
		log:   log.With("component", "iphash-keystore", "topic", topic),
	}, nil
}

// EnsureTopic creates the key topic if it is missing: one partition,
// cleanup.policy=compact, and min.insync.replicas = 2 when replicationFactor
// is 3 or more (else 1). replicationFactor <= 0 means the broker's default
// (and its default min.insync.replicas). An existing topic is kept, but
// EnsureTopic fails if its cleanup policy would let retention delete keys:
// a processor started after that would create a second key for the period
// and hash differently from the others.
func (s *Store) EnsureTopic(ctx context.Context, replicationFactor int16) error {
	if err := kafka.EnsureCompactedTopic(ctx, s.cl, s.topic, replicationFactor, "keys expire and processors stop agreeing on them", s.log); err != nil {
		return fmt.Errorf("kafka: key store: %w", err)
	}
	s.ensured.Store(true)
	return nil
}

// Load returns every key entry of the topic, in offset order. It first asks
// for the partition's high watermark, then consumes until it has seen every
// offset below it, so an entry whose Append returned before Load was called
// is always included. Entries are read incrementally: each Load only fetches
// what was added since the previous one. The returned slice and keys are
// the caller's.
func (s *Store) Load(ctx context.Context) ([]iphash.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	start, end, err := s.bounds(ctx)
	if err != nil {
		return nil, err
	}
	if !s.consuming {
		s.cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{
			s.topic: {keyPartition: kgo.NewOffset().AtStart()},
		})
		s.consuming = true
	}
	// Every offset in [start, end) holds a record: compaction never removes
	// the last record of the log, and control records are kept, so the
	// record at end-1 arrives and ends the loop.
	for s.next < end && start < end {
		fetches := s.cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("kafka: key store: load %s: %w", s.topic, err)
		}
		if fetches.IsClientClosed() {
			return nil, fmt.Errorf("kafka: key store: load %s: %w", s.topic, kgo.ErrClientClosed)
		}
		var ferr error
		fetches.EachError(func(_ string, _ int32, err error) {
			var loss *kgo.ErrDataLoss
			if errors.As(err, &loss) { // the client has already reset past it
				s.log.Warn("ip key topic lost data", "err", err)
				return
			}
			if ferr == nil {
				ferr = err
			}
		})
		if ferr != nil {
			return nil, fmt.Errorf("kafka: key store: load %s: %w", s.topic, ferr)
		}
		fetches.EachRecord(s.apply)
	}
	out := make([]iphash.Entry, len(s.entries))
	for i, e := range s.entries {
		e.Key = bytes.Clone(e.Key)
		out[i] = e
	}
	return out, nil
}

// bounds returns the log start offset and the high watermark of the key
// partition.
func (s *Store) bounds(ctx context.Context) (start, end int64, err error) {
	if end, err = s.keyOffset(ctx, "end", s.adm.ListEndOffsets); err != nil {
		return 0, 0, err
	}
	if start, err = s.keyOffset(ctx, "start", s.adm.ListStartOffsets); err != nil {
		return 0, 0, err
	}
	return start, end, nil
}

// keyOffset returns the key partition's offset that list (the admin
// client's ListStartOffsets or ListEndOffsets, which: "start" or "end")
// reports.
//
// A topic EnsureTopic has just created may be unknown, for a moment, to
// the broker that answers (a cluster's metadata propagates): once
// EnsureTopic has succeeded that answer is retried
// (kafka.RetryWhilePropagating) rather than failing the processor's start.
// Before, a missing topic is reported at once as not found.
func (s *Store) keyOffset(ctx context.Context, which string, list func(context.Context, ...string) (kadm.ListedOffsets, error)) (int64, error) {
	var offset int64
	retry := kafka.RetryWhilePropagating
	if !s.ensured.Load() {
		retry = func(_ context.Context, fn func() error) error { return fn() }
	}
	err := retry(ctx, func() error {
		offsets, err := list(ctx, s.topic)
		if err != nil {
			return err
		}
		o, ok := offsets.Lookup(s.topic, keyPartition)
		if !ok {
			// kadm reports a topic the answering broker does not know
			// as partition -1.
			if e, ok := offsets[s.topic][-1]; ok && e.Err != nil {
				return e.Err
			}
			return errors.New("topic or partition not found (EnsureTopic creates it)")
		}
		offset = o.Offset
		return o.Err
	})
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return 0, fmt.Errorf("kafka: key store: %s offset of %s: topic not found (EnsureTopic creates it): %w", which, s.topic, err)
	}
	if err != nil {
		return 0, fmt.Errorf("kafka: key store: %s offset of %s: %w", which, s.topic, err)
	}
	return offset, nil
}

// apply adds one consumed record to the entries, with compaction semantics:
// a record replaces any earlier one with the same key, and a tombstone or a
// malformed record leaves nothing in its place.
func (s *Store) apply(r *kgo.Record) {
	s.next = max(s.next, r.Offset+1)
	if r.Attrs.IsControl() {
		return
	}
	key := string(r.Key)
	for i := range s.keys {
		if s.keys[i] == key {
			s.entries = append(s.entries[:i], s.entries[i+1:]...)
			s.keys = append(s.keys[:i], s.keys[i+1:]...)
			break
		}
	}
	if r.Value == nil { // tombstone
		return
	}
	e, err := decodeKeyRecord(key, r.Value)
	if err != nil {
		// Never log the value: it holds a key.
		s.log.Warn("skipping malformed ip key record", "offset", r.Offset, "record_key", key, "err", err)
		return
	}
	e.Offset = r.Offset
	s.entries = append(s.entries, e)
	s.keys = append(s.keys, key)
}

// decodeKeyRecord parses and checks one record; its errors never quote the
// value.
func decodeKeyRecord(key string, value []byte) (iphash.Entry, error) {
	var kr keyRecord
	if err := json.Unmarshal(value, &kr); err != nil {
		return iphash.Entry{}, errors.New("value is not a JSON key record")
	}
	if kr.Period == nil || kr.KeyHex == nil {
		return iphash.Entry{}, errors.New(`value lacks "period" or "key_hex"`)
	}
	prefix, _, _ := strings.Cut(key, "/")
	if p, err := strconv.ParseInt(prefix, 10, 64); err != nil || p != *kr.Period {
		return iphash.Entry{}, fmt.Errorf("record key does not start with the value's period %d", *kr.Period)
	}
	k, err := hex.DecodeString(*kr.KeyHex)
	if err != nil || len(k) == 0 {
		return iphash.Entry{}, errors.New(`"key_hex" is not non-empty hex`)
	}
	return iphash.Entry{Period: *kr.Period, Key: k, Writer: kr.Writer}, nil
}

// Append writes e as a new candidate for its period and returns once all
// in-sync replicas have it (idempotent producer, acks=all). e.Offset is
// ignored.
func (s *Store) Append(ctx context.Context, e iphash.Entry) error {
	if len(e.Key) == 0 {
		return fmt.Errorf("kafka: key store: append for period %d: empty key", e.Period)
	}
	kh := hex.EncodeToString(e.Key)
	value, err := json.Marshal(keyRecord{
		Period:  &e.Period,
		KeyHex:  &kh,
		Writer:  e.Writer,
		Created: time.Now().UTC().Format(time.RFC3339),
	})
	if err != nil {
		return fmt.Errorf("kafka: key store: append for period %d: %w", e.Period, err)
	}
	rec := &kgo.Record{
		Topic:     s.topic,
		Partition: keyPartition,
		Key:       []byte(strconv.FormatInt(e.Period, 10) + "/" + uuid.NewString()),
		Value:     value,
	}
	// Synchronous, acks=all: once this returns nil the record is below the
	// high watermark that every later Load waits for.
	if err := s.cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		return fmt.Errorf("kafka: key store: append for period %d to %s: %w", e.Period, s.topic, err)
	}
	return nil
}

// Close closes the Store's client. Calls in progress fail.
func (s *Store) Close() { s.cl.Close() }

var _ iphash.KeyStore = (*Store)(nil)
