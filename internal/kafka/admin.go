package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventlogging/eventlogging/internal/record"
)

// TopicDefaults says how missing topics are created.
type TopicDefaults struct {
	// Partitions of a new topic; default 1.
	Partitions int32
	// ReplicationFactor of a new topic; default -1 (the broker's default).
	ReplicationFactor int16
	// Configs are topic configs such as retention.ms; nil for none.
	Configs map[string]*string
}

// Topics creates topics on first use and remembers which exist. Safe for
// concurrent use.
type Topics struct {
	adm      *kadm.Client
	defaults TopicDefaults
	mu       sync.Mutex
	known    map[string]bool
	// refusedNames are names Kafka refused (or that it would), not asked
	// again; at most maxRefusedNames.
	refusedNames map[string]error
}

// maxRefusedNames bounds Topics.refusedNames.
const maxRefusedNames = 1024

// NewTopics administers topics through cl, which the caller keeps owning.
func NewTopics(cl *kgo.Client, d TopicDefaults) *Topics {
	if d.Partitions <= 0 {
		d.Partitions = 1
	}
	if d.ReplicationFactor == 0 {
		d.ReplicationFactor = -1
	}
	return &Topics{adm: kadm.NewClient(cl), defaults: d, known: map[string]bool{}}
}

// Ensure creates the topics that do not exist yet, with the defaults. Topics
// that already exist are left as they are. When Kafka refuses some names
// for good (INVALID_TOPIC_EXCEPTION), the others are created and the error
// is a *TopicsRefusedError naming the refused ones.
func (t *Topics) Ensure(ctx context.Context, names ...string) error {
	return t.EnsureWith(ctx, t.defaults, names...)
}

// EnsureWith is Ensure with explicit creation settings.
func (t *Topics) EnsureWith(ctx context.Context, d TopicDefaults, names ...string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var missing []string
	var refused *TopicsRefusedError
	for _, n := range names {
		err, seen := t.refusedNames[n]
		if !seen && !record.ValidTopicName(n) {
			// Kafka refuses such a name (and franz-go will not produce
			// to it): refused here, for every broker alike.
			err, seen = kerr.InvalidTopicException, true
		}
		if seen {
			if refused == nil {
				refused = &TopicsRefusedError{Topics: map[string]error{}}
			}
			refused.Topics[n] = err
			continue
		}
		if !t.known[n] && !slices.Contains(missing, n) {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		if refused != nil {
			return refused
		}
		return nil
	}
	if d.Partitions <= 0 {
		d.Partitions = t.defaults.Partitions
	}
	if d.ReplicationFactor == 0 {
		d.ReplicationFactor = t.defaults.ReplicationFactor
	}
	resp, err := t.adm.CreateTopics(ctx, d.Partitions, d.ReplicationFactor, d.Configs, missing...)
	if err != nil {
		return explainAuth(fmt.Errorf("create topics %v: %w", missing, err))
	}
	for _, r := range resp.Sorted() {
		if errors.Is(r.Err, kerr.InvalidTopicException) {
			// The name itself is refused: the records to this topic
			// fail for good (IsPermanent), the others go on.
			if refused == nil {
				refused = &TopicsRefusedError{Topics: map[string]error{}}
			}
			refused.Topics[r.Topic] = r.Err
			if len(t.refusedNames) < maxRefusedNames {
				if t.refusedNames == nil {
					t.refusedNames = map[string]error{}
				}
				t.refusedNames[r.Topic] = r.Err
			}
			missing = slices.DeleteFunc(missing, func(n string) bool { return n == r.Topic })
			continue
		}
		if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
			return explainAuth(fmt.Errorf("create topic %s: %w", r.Topic, r.Err))
		}
		t.known[r.Topic] = true
	}
	if len(missing) == 0 {
		return refused
	}
	// Wait until the new topics' metadata has leaders, so the first produce
	// does not race topic creation.
	for {
		md, err := t.adm.Metadata(ctx, missing...)
		if err != nil {
			return explainAuth(fmt.Errorf("metadata for %v: %w", missing, err))
		}
		ready := true
		for _, td := range md.Topics {
			if td.Err != nil || len(td.Partitions) == 0 {
				ready = false
				break
			}
			for _, p := range td.Partitions {
				if p.Leader < 0 || p.Err != nil {
					ready = false
				}
			}
		}
		if ready {
			if refused != nil {
				return refused
			}
			return nil
		}
		if err := waitABit(ctx); err != nil {
			return err
		}
	}
}

// EnsureCompactedTopic creates topic through cl if it is missing: one
// partition, cleanup.policy=compact, and min.insync.replicas = 2 when
// replicationFactor is 3 or more (else 1); replicationFactor <= 0 means
// the broker's defaults. An existing topic is kept, but it is an error if
// its cleanup policy lets retention delete records (why says what goes
// wrong then, as for checkCompacted); more than one partition is logged,
// only partition 0 being used. The compacted topics of the pipeline (the
// schema log, the IP-key store) are set up with it at start.
func EnsureCompactedTopic(ctx context.Context, cl *kgo.Client, topic string, replicationFactor int16, why string, log *slog.Logger) error {
	configs := map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}
	if replicationFactor <= 0 {
		replicationFactor = -1
	} else {
		configs["min.insync.replicas"] = kadm.StringPtr(strconv.Itoa(int(max(1, min(2, replicationFactor-1)))))
	}
	d := TopicDefaults{Partitions: 1, ReplicationFactor: replicationFactor, Configs: configs}
	if err := NewTopics(cl, d).Ensure(ctx, topic); err != nil {
		return err
	}
	adm := kadm.NewClient(cl)
	details, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return fmt.Errorf("describe %s: %w", topic, err)
	}
	td, ok := details[topic]
	switch {
	case !ok:
		return fmt.Errorf("describe %s: topic not in metadata", topic)
	case td.Err != nil:
		return fmt.Errorf("describe %s: %w", topic, td.Err)
	case len(td.Partitions) != 1:
		log.Warn("topic has more than one partition; only partition 0 is used", "topic", topic, "partitions", len(td.Partitions))
	}
	return checkCompacted(ctx, adm, topic, why)
}

// checkCompacted reports an error unless topic's cleanup policy keeps
// every key's latest record forever: "compact", or "compact,delete" with
// retention.ms -1. why says what goes wrong otherwise ("records expire").
func checkCompacted(ctx context.Context, adm *kadm.Client, topic, why string) error {
	rc, err := describeTopicConfigs(ctx, adm, topic)
	if err != nil {
		return fmt.Errorf("describe configs of %s: %w", topic, err)
	}
	var policy, retention string
	for _, c := range rc.Configs {
		if c.Value == nil {
			continue
		}
		switch c.Key {
		case "cleanup.policy":
			policy = *c.Value
		case "retention.ms":
			retention = *c.Value
		}
	}
	if !strings.Contains(policy, "compact") || (strings.Contains(policy, "delete") && retention != "-1") {
		return fmt.Errorf("topic %s has cleanup.policy=%q (retention.ms=%s): want \"compact\", or %s", topic, policy, retention, why)
	}
	return nil
}

// configsPropagation bounds how long describeTopicConfigs waits for the
// broker that answers to learn of a topic just created.
const configsPropagation = 15 * time.Second

// RetryWhilePropagating calls fn until it returns an error other than
// UNKNOWN_TOPIC_OR_PARTITION, or nil, for up to 15 seconds (then it returns
// that error): the window in which a topic just created (EnsureTopic) is
// not yet known to every broker of a cluster. ctx bounds the waits.
func RetryWhilePropagating(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(configsPropagation)
	for {
		err := fn()
		if err == nil || !errors.Is(err, kerr.UnknownTopicOrPartition) || time.Now().After(deadline) {
			return err
		}
		if werr := waitABit(ctx); werr != nil {
			return err
		}
	}
}

// describeTopicConfigs returns topic's configuration. A topic just created
// is known to the controller and its partitions' leaders before every
// broker has its metadata: in a cluster, the broker that answers may say
// UNKNOWN_TOPIC_OR_PARTITION for a few hundred milliseconds (seen on a
// 3-broker cluster at start-up). That answer is retried for up to
// configsPropagation; any other error is returned at once.
func describeTopicConfigs(ctx context.Context, adm *kadm.Client, topic string) (kadm.ResourceConfig, error) {
	var rc kadm.ResourceConfig
	err := RetryWhilePropagating(ctx, func() error {
		rcs, err := adm.DescribeTopicConfigs(ctx, topic)
		if err != nil {
			return err
		}
		if rc, err = rcs.On(topic, nil); err != nil {
			return err
		}
		return rc.Err
	})
	return rc, err
}
