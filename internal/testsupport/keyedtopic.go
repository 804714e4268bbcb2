package testsupport

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// KeyedTopic is a kfake cluster with a topic of three partitions whose
// records a test produces keyed by their event's uuid, as the processor
// keys them (the default partitioner hashes the key: every copy of an
// event lands in the partition of the first), and what it produced. The
// sinks' dedupe tests use it.
type KeyedTopic struct {
	t       *testing.T
	Brokers []string
	Topic   string
	cl      *kgo.Client
	adm     *kadm.Client
	// Produced counts the records of each uuid; PartOf is its partition;
	// Ends is each partition's end offset (the next to produce).
	Produced map[string]int
	PartOf   map[string]int32
	Ends     map[int32]int64
}

// NewKeyedTopic starts the cluster with topic (3 partitions) and, with one
// partition each, the other topics (a sink's error topic).
func NewKeyedTopic(t *testing.T, topic string, other ...string) *KeyedTopic {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(3, topic)}
	if len(other) > 0 {
		opts = append(opts, kfake.SeedTopics(1, other...))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &KeyedTopic{t: t, Brokers: c.ListenAddrs(), Topic: topic, cl: cl, adm: kadm.NewClient(cl),
		Produced: map[string]int{}, PartOf: map[string]int32{}, Ends: map[int32]int64{}}
}

// KeyedRecord is an event's record: its uuid (the key) and its value. A
// copy is the same uuid and value again.
type KeyedRecord struct {
	UUID  string
	Value []byte
}

// Produce produces recs in order, and fails the test if a copy went to
// another partition than its first.
func (k *KeyedTopic) Produce(recs ...KeyedRecord) {
	k.t.Helper()
	krs := make([]*kgo.Record, 0, len(recs))
	for _, r := range recs {
		krs = append(krs, &kgo.Record{Topic: k.Topic, Key: []byte(r.UUID), Value: r.Value})
	}
	res := k.cl.ProduceSync(k.t.Context(), krs...)
	if err := res.FirstErr(); err != nil {
		k.t.Fatal(err)
	}
	for _, r := range res {
		u := string(r.Record.Key)
		if p, ok := k.PartOf[u]; ok && p != r.Record.Partition {
			k.t.Fatalf("a copy of %s produced to partition %d, the first to %d", u, r.Record.Partition, p)
		}
		k.PartOf[u] = r.Record.Partition
		k.Produced[u]++
		k.Ends[r.Record.Partition] = max(k.Ends[r.Record.Partition], r.Record.Offset+1)
	}
}

// Consumed reports whether group committed the end offset of every
// partition: every record produced was stored or dropped as a copy.
func (k *KeyedTopic) Consumed(group string) bool {
	offs, err := k.adm.FetchOffsets(k.t.Context(), group)
	if err != nil {
		return false
	}
	for p, end := range k.Ends {
		o, ok := offs.Lookup(k.Topic, p)
		if !ok || o.Err != nil || o.At < end {
			return false
		}
	}
	return true
}

// Copies counts the records produced beyond the first of their event.
func (k *KeyedTopic) Copies() int {
	n := 0
	for _, c := range k.Produced {
		n += c - 1
	}
	return n
}

// DuplicatesDropped reads eventlogging_sink_duplicates_dropped_total of
// the sink named name from reg (0 when it has none).
func DuplicatesDropped(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "eventlogging_sink_duplicates_dropped_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "sink" && l.GetValue() == name {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
