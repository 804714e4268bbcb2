package keystore

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/testsupport"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventlogging/eventlogging/internal/iphash"
	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/kafkatest"
)

// TestKeyStoreKafka runs the key store against the real test broker.
func TestKeyStoreKafka(t *testing.T) {
	seeds := kafkatest.Brokers(t)
	keyStoreSuite(t, seeds, kafkatest.Topic(t, "iphash-keys"), nil)
}

// TestKeyStoreKFake runs the same suite in process on kfake, and also checks
// that the broker's log compaction changes nothing Load returns.
func TestKeyStoreKFake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	keyStoreSuite(t, c.ListenAddrs(), "iphash-keys", c.Compact)
}

// lockedBuffer is an io.Writer safe for the concurrent logging of a client.
type lockedBuffer = testsupport.SyncBuffer

// racingStore makes the first Append of each of its users wait until all of
// them have got there, i.e. until every one has loaded a store without a key:
// they all append, and must still agree.
type racingStore struct {
	*Store
	once    sync.Once
	arrived *sync.WaitGroup
}

func (r *racingStore) Append(ctx context.Context, e iphash.Entry) error {
	r.once.Do(func() {
		r.arrived.Done()
		r.arrived.Wait()
	})
	return r.Store.Append(ctx, e)
}

func newTestKeyStore(t *testing.T, seeds []string, topic string, log *slog.Logger) *Store {
	t.Helper()
	s, err := New(kafka.Config{Brokers: seeds, Logger: log}, topic)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

const testIP = "198.51.100.7"

// keyStoreSuite is the key store's whole behaviour on one cluster. compact,
// if not nil, makes the broker compact the topic now.
func keyStoreSuite(t *testing.T, seeds []string, topic string, compact func()) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	// --- Topic creation: idempotent, compacted, refuses a deleting topic.
	// (A client that has just seen the topic missing caches that metadata
	// for a few seconds, so the check uses a client of its own.)
	if _, err := newTestKeyStore(t, seeds, topic, nil).Load(ctx); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("Load before EnsureTopic: err = %v, want topic not found", err)
	}
	a := newTestKeyStore(t, seeds, topic, nil)
	for range 2 {
		if err := a.EnsureTopic(ctx, 1); err != nil {
			t.Fatalf("EnsureTopic: %v", err)
		}
	}
	adm := kadm.NewClient(a.cl)
	details, err := adm.ListTopics(ctx, topic)
	if err != nil || len(details[topic].Partitions) != 1 {
		t.Fatalf("key topic: %d partitions, err %v; want 1", len(details[topic].Partitions), err)
	}
	if entries, err := a.Load(ctx); err != nil || len(entries) != 0 {
		t.Fatalf("Load of the new topic = %d entries, %v; want 0, nil", len(entries), err)
	}

	deleting := topic + "-deleting"
	if _, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": kadm.StringPtr("delete")}, deleting); err != nil {
		t.Fatal(err)
	}
	bad := newTestKeyStore(t, seeds, deleting, nil)
	if err := bad.EnsureTopic(ctx, 1); err == nil || !strings.Contains(err.Error(), `cleanup.policy="delete"`) {
		t.Fatalf("EnsureTopic on a delete-policy topic: err = %v, want a cleanup.policy error", err)
	}

	// --- Two processors, each with its own client, start at once on an
	// empty topic: both append a key, both must hash identically.
	var arrived sync.WaitGroup
	arrived.Add(2)
	period := iphash.PeriodOf(time.Now(), iphash.DefaultPeriod)
	stores := []*racingStore{
		{Store: newTestKeyStore(t, seeds, topic, nil), arrived: &arrived},
		{Store: newTestKeyStore(t, seeds, topic, nil), arrived: &arrived},
	}
	rotators := make([]*iphash.Rotator, len(stores))
	errs := make(chan error, len(stores))
	for i, s := range stores {
		rotators[i] = iphash.NewRotator(s, iphash.RotatorConfig{Writer: "proc-" + strconv.Itoa(i)})
		go func() { errs <- rotators[i].Init(ctx) }()
	}
	for range stores {
		if err := <-errs; err != nil {
			t.Fatalf("Init: %v", err)
		}
	}
	h0, h1 := rotators[0].Current().Hash(testIP), rotators[1].Current().Hash(testIP)
	if h0 != h1 {
		t.Fatalf("two processors hash %s differently: %s vs %s", testIP, h0, h1)
	}
	entries, err := a.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[0].Period != period || entries[1].Period != period {
		t.Fatalf("after the race the topic holds %v, want two candidates for period %d", entries, period)
	}
	if want := iphash.NewHasher(iphash.SHA256, entries[0].Key).Hash(testIP); h0 != want {
		t.Fatal("processors agree, but not on the lowest-offset key")
	}
	if len(entries[0].Key) != iphash.KeySize || entries[0].Offset >= entries[1].Offset {
		t.Fatalf("entries not as appended: %v", entries)
	}

	// --- A third processor, started later on a fresh client, reads the
	// existing key and appends nothing.
	late := iphash.NewRotator(newTestKeyStore(t, seeds, topic, nil), iphash.RotatorConfig{Writer: "late"})
	if err := late.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if got := late.Current().Hash(testIP); got != h0 {
		t.Fatalf("late processor hashes %s, want %s", got, h0)
	}
	if entries, _ := a.Load(ctx); len(entries) != 2 {
		t.Fatalf("late processor appended: %d entries, want 2", len(entries))
	}

	// --- Load is complete: whatever was appended, by any client, before
	// Load is called is in its result, in offset order. Store a has loaded
	// before (incremental); store fresh has not.
	b := stores[1].Store
	var appended []string
	for i := range 20 {
		w := []*Store{a, b}[i%2]
		key := bytes.Repeat([]byte{byte(i)}, iphash.KeySize)
		if err := w.Append(ctx, iphash.Entry{Period: period + 1, Key: key, Writer: "bulk"}); err != nil {
			t.Fatalf("Append: %v", err)
		}
		appended = append(appended, hex.EncodeToString(key))
	}
	fresh := newTestKeyStore(t, seeds, topic, nil)
	for name, s := range map[string]*Store{"incremental": a, "fresh": fresh} {
		entries, err := s.Load(ctx)
		if err != nil {
			t.Fatalf("%s Load: %v", name, err)
		}
		var got []string
		for i, e := range entries {
			if i > 0 && e.Offset <= entries[i-1].Offset {
				t.Fatalf("%s Load: offsets not ascending: %v", name, entries)
			}
			if e.Period == period+1 {
				got = append(got, hex.EncodeToString(e.Key))
			}
		}
		if !slices.Equal(got, appended) {
			t.Fatalf("%s Load returned %d of the 20 appended keys (or out of order)", name, len(got))
		}
	}

	// --- Foreign records: a tombstone deletes its record, malformed
	// records are skipped and logged without their value.
	raw, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	a.mu.Lock()
	tombstoned := a.keys[2] // the first bulk entry
	a.mu.Unlock()
	secretHex := strings.Repeat("ab", iphash.KeySize)
	for _, r := range []*kgo.Record{
		{Key: []byte(tombstoned)}, // tombstone
		{Key: []byte("7/x"), Value: []byte(`not json ` + secretHex)},
		{Key: []byte("7/x"), Value: []byte(`{"period": 8, "key_hex": "` + secretHex + `"}`)},
		{Key: []byte("9/x"), Value: []byte(`{"period": 9, "key_hex": "zz` + secretHex + `"}`)},
		{Key: []byte("9/y"), Value: []byte(`{"period": 9}`)},
	} {
		if err := raw.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var logs lockedBuffer
	watched := newTestKeyStore(t, seeds, topic, slog.New(slog.NewJSONHandler(&logs, nil)))
	want, err := watched.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 2+19 {
		t.Fatalf("Load with a tombstone and 4 malformed records: %d entries, want 21", len(want))
	}
	for _, e := range want {
		if hex.EncodeToString(e.Key) == appended[0] {
			t.Fatal("tombstoned entry still returned")
		}
	}
	if n := strings.Count(logs.String(), "skipping malformed ip key record"); n != 4 {
		t.Fatalf("%d malformed records logged, want 4:\n%s", n, logs.String())
	}
	if strings.Contains(logs.String(), secretHex) {
		t.Fatal("a key reached the log")
	}

	// --- Compaction (kfake only) must not change what Load returns.
	if compact != nil {
		compact()
		got, err := newTestKeyStore(t, seeds, topic, nil).Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(got, want, func(x, y iphash.Entry) bool {
			return x.Offset == y.Offset && x.Period == y.Period && bytes.Equal(x.Key, y.Key) && x.Writer == y.Writer
		}) {
			t.Fatalf("after compaction Load returned %d entries, want the same %d as before", len(got), len(want))
		}
		again := iphash.NewRotator(newTestKeyStore(t, seeds, topic, nil), iphash.RotatorConfig{})
		if err := again.Init(ctx); err != nil || again.Current().Hash(testIP) != h0 {
			t.Fatalf("after compaction a new processor does not hash like the others (err %v)", err)
		}
	}
}

// TestKeyOffsetWhileTopicPropagates: a key topic just created may be
// unknown for a moment to the broker that answers (seen on the 3-broker
// cluster: the processor exited at start with UNKNOWN_TOPIC_OR_PARTITION);
// keyOffset retries that answer, and returns any other error at once.
func TestKeyOffsetWhileTopicPropagates(t *testing.T) {
	s := &Store{topic: "k"}
	calls := 0
	// Before EnsureTopic: a missing topic is not found at once.
	missing := func(context.Context, ...string) (kadm.ListedOffsets, error) {
		calls++
		return kadm.ListedOffsets{"k": {-1: {Topic: "k", Partition: -1, Err: kerr.UnknownTopicOrPartition}}}, nil
	}
	if _, err := s.keyOffset(t.Context(), "end", missing); !errors.Is(err, kerr.UnknownTopicOrPartition) || !strings.Contains(err.Error(), "not found") || calls != 1 {
		t.Fatalf("keyOffset before EnsureTopic = %v after %d calls; want topic not found at once", err, calls)
	}
	s.ensured.Store(true) // as EnsureTopic does
	calls = 0
	listed := func(err error, offset int64) kadm.ListedOffsets {
		return kadm.ListedOffsets{"k": {keyPartition: {Topic: "k", Partition: keyPartition, Offset: offset, Err: err}}}
	}
	unknownTwice := func(context.Context, ...string) (kadm.ListedOffsets, error) {
		calls++
		if calls <= 2 {
			return listed(kerr.UnknownTopicOrPartition, 0), nil
		}
		return listed(nil, 7), nil
	}
	if off, err := s.keyOffset(t.Context(), "end", unknownTwice); err != nil || off != 7 || calls != 3 {
		t.Fatalf("keyOffset = %d, %v after %d calls; want 7, nil after 3", off, err, calls)
	}
	// As kadm answers when the metadata does not know the topic: an entry
	// for partition -1 only.
	calls = 0
	topicUnknownTwice := func(context.Context, ...string) (kadm.ListedOffsets, error) {
		calls++
		if calls <= 2 {
			return kadm.ListedOffsets{"k": {-1: {Topic: "k", Partition: -1, Err: kerr.UnknownTopicOrPartition}}}, nil
		}
		return listed(nil, 9), nil
	}
	if off, err := s.keyOffset(t.Context(), "end", topicUnknownTwice); err != nil || off != 9 || calls != 3 {
		t.Fatalf("keyOffset (topic unknown to the metadata) = %d, %v after %d calls; want 9, nil after 3", off, err, calls)
	}
	calls = 0
	other := func(context.Context, ...string) (kadm.ListedOffsets, error) {
		calls++
		return listed(kerr.NotLeaderForPartition, 0), nil
	}
	if _, err := s.keyOffset(t.Context(), "end", other); !errors.Is(err, kerr.NotLeaderForPartition) || calls != 1 {
		t.Fatalf("keyOffset = %v after %d calls; want NOT_LEADER_FOR_PARTITION at once", err, calls)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	calls = 0
	always := func(context.Context, ...string) (kadm.ListedOffsets, error) {
		calls++
		return listed(kerr.UnknownTopicOrPartition, 0), nil
	}
	if _, err := s.keyOffset(ctx, "end", always); !errors.Is(err, kerr.UnknownTopicOrPartition) || calls != 1 {
		t.Fatalf("keyOffset with ctx done = %v after %d calls; want UNKNOWN_TOPIC_OR_PARTITION at once", err, calls)
	}
}
