package kafka

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Admin reads the cluster's state: topics, their end offsets, consumer
// groups and their lag. Safe for concurrent use.
type Admin struct {
	cl  *kgo.Client
	adm *kadm.Client
}

// NewAdmin connects an admin client; Close releases it.
func NewAdmin(c Config) (*Admin, error) {
	cl, err := NewClient(c)
	if err != nil {
		return nil, err
	}
	return &Admin{cl: cl, adm: kadm.NewClient(cl)}, nil
}

// Close closes the client.
func (a *Admin) Close() { a.cl.Close() }

// Client is the underlying client, for producing (replay) and Topics.
func (a *Admin) Client() *kgo.Client { return a.cl }

// ListTopics returns the non-internal topic names, sorted.
func (a *Admin) ListTopics(ctx context.Context) ([]string, error) {
	td, err := a.adm.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	names := td.Names()
	slices.Sort(names)
	return names, nil
}

// EndOffsets returns, per topic, the sum of its partitions' high watermarks
// (the number of records ever written when nothing was deleted).
func (a *Admin) EndOffsets(ctx context.Context, topics ...string) (map[string]int64, error) {
	ends, err := a.adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	out := make(map[string]int64, len(topics))
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			out[o.Topic] += o.Offset
		}
	})
	return out, nil
}

// PartitionLag is a group's lag on one partition.
type PartitionLag struct {
	Topic     string
	Partition int32
	Lag       int64
}

// GroupLag describes one consumer group and its lag.
type GroupLag struct {
	Group      string
	State      string // Stable, Empty, PreparingRebalance, Dead, …
	Members    int
	Partitions []PartitionLag // sorted by topic, partition
	Err        error          // describing the group or fetching its offsets failed
}

// Total is the group's lag over every partition.
func (g GroupLag) Total() int64 {
	var n int64
	for _, p := range g.Partitions {
		n += p.Lag
	}
	return n
}

// GroupLags describes the groups and computes their lag; with no groups it
// covers every group whose name starts with prefix.
func (a *Admin) GroupLags(ctx context.Context, prefix string, groups ...string) ([]GroupLag, error) {
	if len(groups) == 0 {
		listed, err := a.adm.ListGroups(ctx)
		if err != nil {
			return nil, fmt.Errorf("list groups: %w", err)
		}
		for _, g := range listed.Groups() {
			if strings.HasPrefix(g, prefix) {
				groups = append(groups, g)
			}
		}
		if len(groups) == 0 {
			return nil, nil
		}
	}
	lags, err := a.adm.Lag(ctx, groups...)
	if err != nil {
		return nil, fmt.Errorf("consumer lag: %w", err)
	}
	var out []GroupLag
	for _, l := range lags.Sorted() {
		g := GroupLag{Group: l.Group, State: l.State, Members: len(l.Members), Err: l.Error()}
		for _, ml := range l.Lag.Sorted() {
			if ml.Err != nil || ml.Lag < 0 {
				continue
			}
			g.Partitions = append(g.Partitions, PartitionLag{Topic: ml.Topic, Partition: ml.Partition, Lag: ml.Lag})
		}
		out = append(out, g)
	}
	return out, nil
}

// LagMonitorConfig configures RunLagMonitor.
type LagMonitorConfig struct {
	Kafka Config
	// Groups to watch; empty: every group whose name starts with Prefix.
	Groups []string
	// Prefix selects groups when Groups is empty; default "eventlogging".
	Prefix string
	// Interval between computations; default 15s.
	Interval time.Duration
	Logger   *slog.Logger
}

// RunLagMonitor computes consumer lag every interval into Kafka.Metrics
// (eventlogging_kafka_consumer_lag_records, …_group_members) until ctx is
// done. Partitions and groups that disappear are removed from the gauges.
func RunLagMonitor(ctx context.Context, cfg LagMonitorConfig) error {
	m := cfg.Kafka.Metrics
	if m == nil {
		return nil
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "eventlogging"
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 15 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	a, err := NewAdmin(cfg.Kafka)
	if err != nil {
		return err
	}
	defer a.Close()
	t := time.NewTicker(cfg.Interval)
	defer t.Stop()
	for {
		m.updateLag(ctx, a, cfg)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (m *Metrics) updateLag(ctx context.Context, a *Admin, cfg LagMonitorConfig) {
	cctx, cancel := context.WithTimeout(ctx, cfg.Interval)
	defer cancel()
	groups, err := a.GroupLags(cctx, cfg.Prefix, cfg.Groups...)
	if err != nil {
		if ctx.Err() == nil {
			m.lagErrors.Inc()
			cfg.Logger.Warn("computing consumer lag", "err", err)
		}
		return
	}
	seen := map[string]bool{}
	set := map[[3]string]bool{}
	for _, g := range groups {
		if g.Err != nil {
			m.lagErrors.Inc()
			continue
		}
		m.members.WithLabelValues(g.Group).Set(float64(g.Members))
		seen[g.Group] = true
		for _, p := range g.Partitions {
			key := [3]string{g.Group, p.Topic, strconv.Itoa(int(p.Partition))}
			m.lag.WithLabelValues(key[:]...).Set(float64(p.Lag))
			set[key] = true
		}
	}
	// Partitions no longer reported (deleted topics, dead groups) go.
	m.lagMu.Lock()
	for key := range m.lagSet {
		if !set[key] && (seen[key[0]] || !slices.Contains(cfg.Groups, key[0])) {
			m.lag.DeleteLabelValues(key[:]...)
		}
	}
	m.lagSet = set
	m.lagMu.Unlock()
	// Watched groups that no longer exist have no members.
	for _, g := range cfg.Groups {
		if !seen[g] {
			m.members.WithLabelValues(g).Set(0)
		}
	}
}
