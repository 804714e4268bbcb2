package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/kafka"
)

// Config configures an Inspector.
type Config struct {
	Kafka kafka.Config
	// RegistryURL is the schema registry; empty: the schema pages are empty.
	RegistryURL string
	// RegistryHTTP is the client the registry is read with; nil: a
	// default client. Standalone serves the reads in process
	// (role.InProcess), so that a schema page does not wait for four
	// loopback round trips through a server busy with the intake's load.
	RegistryHTTP *http.Client
	// RawTopics are the raw input topics; default eventlogging-client-side.
	RawTopics []string
	// HideRawTopics keeps the raw topics out of the live tail: their lines
	// carry the client IP, which the IP policy "hash" keeps out of every
	// other output.
	HideRawTopics bool
	// ErrorTopic holds EventErrors; default eventlogging_EventError.
	ErrorTopic string
	// ReplayTopic is the compacted log of replayed EventError uuids, so
	// nothing is replayed twice; default _eventlogging_replayed.
	ReplayTopic string
	// Topics creates the replay log; nil: it must exist or is created by
	// the broker on first produce.
	Creator *kafka.Topics
	// GroupPrefix selects the consumer groups shown; default "eventlogging".
	GroupPrefix string
	// Health maps role names to URLs answering 200 when the role is
	// healthy (e.g. "intake": "http://intake:8080/healthz"). Each is an
	// expected role: down while its URL does not answer 200.
	Health map[string]string
	// Expect lists the consumer groups the configuration runs (the
	// processors', the sinks'): each is a role in Overview even before its
	// group exists, down while the group has no member. Groups found
	// through GroupPrefix are roles too, but not expected ones.
	Expect []ExpectedGroup
	// Interval between samples of the topics' end offsets; default 2s.
	// Rates are computed over the last two samples.
	Interval time.Duration
	// ScanPerPartition bounds the EventErrors read per partition when
	// listing recent errors; default 2000.
	ScanPerPartition int64
	// RecentErrors is how many of the latest EventErrors Run keeps in
	// memory for the dashboard; default DefaultRecentErrors.
	RecentErrors int
	Logger       *slog.Logger
}

// Inspector reads the pipeline's state for the dashboard and the status
// and replay commands. Run samples in the background; the other methods
// are safe for concurrent use.
type Inspector struct {
	cfg   Config
	admin *kafka.Admin
	prod  *kafka.Producer
	sr    *sr.Client
	hc    *http.Client

	mu        sync.RWMutex
	samples   map[string][]sample // topic -> history, oldest first
	groups    []GroupStats
	groupsErr error // the last sample's failure to describe the groups
	sampled   bool  // groups were described at least once
	roles     []RoleHealth
	last      time.Time

	recent recentErrors

	schemaMu     sync.Mutex
	schemaCache  []SchemaSummary
	schemaCached time.Time
}

type sample struct {
	t   time.Time
	end int64
}

// historyLen is how many samples each topic keeps (the sparkline's width).
const historyLen = 61

// New connects to Kafka (and the registry); it starts nothing.
func New(cfg Config) (*Inspector, error) {
	if len(cfg.RawTopics) == 0 {
		cfg.RawTopics = []string{capsule.TopicClientSide}
	}
	if cfg.ErrorTopic == "" {
		cfg.ErrorTopic = capsule.TopicEventError
	}
	if cfg.ReplayTopic == "" {
		cfg.ReplayTopic = "_eventlogging_replayed"
	}
	if cfg.GroupPrefix == "" {
		cfg.GroupPrefix = "eventlogging"
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 2 * time.Second
	}
	if cfg.ScanPerPartition <= 0 {
		cfg.ScanPerPartition = 2000
	}
	if cfg.RecentErrors <= 0 {
		cfg.RecentErrors = DefaultRecentErrors
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	admin, err := kafka.NewAdmin(cfg.Kafka)
	if err != nil {
		return nil, err
	}
	i := &Inspector{cfg: cfg, admin: admin, samples: map[string][]sample{}, hc: &http.Client{Timeout: 2 * time.Second}}
	i.recent = recentErrors{index: map[string]int{}, replayed: map[string]capsule.ReplayOutcome{}, cap: cfg.RecentErrors}
	if i.prod, err = kafka.NewProducer(kafka.ProducerConfig{Kafka: cfg.Kafka}); err != nil {
		admin.Close()
		return nil, err
	}
	if cfg.RegistryURL != "" {
		opts := []sr.ClientOpt{sr.URLs(cfg.RegistryURL)}
		if cfg.RegistryHTTP != nil {
			opts = append(opts, sr.HTTPClient(cfg.RegistryHTTP))
		}
		if i.sr, err = sr.NewClient(opts...); err != nil {
			i.Close()
			return nil, fmt.Errorf("inspect: registry client: %w", err)
		}
	}
	return i, nil
}

// Close releases the Kafka clients.
func (i *Inspector) Close() {
	i.admin.Close()
	if i.prod != nil {
		i.prod.Close()
	}
}

// Run samples end offsets, consumer groups and role health every
// Interval, and follows the error topic, until ctx is done.
func (i *Inspector) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { i.followErrors(ctx) })
	wg.Go(func() {
		t := time.NewTicker(schemaCacheTTL / 3)
		defer t.Stop()
		for {
			i.refreshSchemas(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
	t := time.NewTicker(i.cfg.Interval)
	defer t.Stop()
	for {
		i.Sample(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Sample takes one sample now (Run calls it; status calls it twice).
func (i *Inspector) Sample(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, max(i.cfg.Interval, 5*time.Second))
	defer cancel()
	now := time.Now()
	var (
		ends   map[string]int64
		groups []kafka.GroupLag
		roles  []RoleHealth
		errs   [3]error
		wg     sync.WaitGroup
	)
	wg.Go(func() {
		topics, err := i.admin.ListTopics(ctx)
		if err != nil {
			errs[0] = err
			return
		}
		topics = slices.DeleteFunc(topics, func(t string) bool { return strings.HasPrefix(t, "_") })
		ends, errs[0] = i.admin.EndOffsets(ctx, topics...)
	})
	wg.Go(func() { groups, errs[1] = i.describeGroups(ctx) })
	wg.Go(func() { roles = i.checkRoles(ctx) })
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil && ctx.Err() == nil {
		i.cfg.Logger.Warn("sampling the pipeline", "err", err)
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if ends != nil {
		for t, end := range ends {
			h := append(i.samples[t], sample{t: now, end: end})
			if len(h) > historyLen {
				h = h[len(h)-historyLen:]
			}
			i.samples[t] = h
		}
		for t := range i.samples {
			if _, ok := ends[t]; !ok {
				delete(i.samples, t)
			}
		}
		i.last = now
	}
	i.groupsErr = errs[1]
	if errs[1] == nil {
		i.sampled = true
		i.groups = i.groups[:0]
		for _, g := range groups {
			gs := GroupStats{Group: g.Group, State: g.State, Members: g.Members, Lag: g.Total()}
			switch {
			case errors.Is(g.Err, kerr.GroupIDNotFound):
				gs.State = "Dead" // never joined (or long gone): Kafka 4 says so with this error
			case g.Err != nil:
				gs.Error = g.Err.Error()
			}
			per := map[string]int64{}
			for _, p := range g.Partitions {
				per[p.Topic] += p.Lag
			}
			for t, l := range per {
				gs.Topics = append(gs.Topics, TopicGroupLag{Topic: t, Lag: l})
			}
			slices.SortFunc(gs.Topics, func(a, b TopicGroupLag) int { return strings.Compare(a.Topic, b.Topic) })
			i.groups = append(i.groups, gs)
		}
	}
	i.roles = roles
}

// describeGroups describes the groups named with GroupPrefix and the
// expected ones, sorted by name. An expected group that does not exist is
// described too (state Dead, or an error, and no member).
func (i *Inspector) describeGroups(ctx context.Context) ([]kafka.GroupLag, error) {
	groups, err := i.admin.GroupLags(ctx, i.cfg.GroupPrefix)
	if err != nil {
		return nil, err
	}
	var others []string
	for _, e := range i.cfg.Expect {
		if !slices.ContainsFunc(groups, func(g kafka.GroupLag) bool { return g.Group == e.Group }) && !slices.Contains(others, e.Group) {
			others = append(others, e.Group)
		}
	}
	if len(others) > 0 {
		more, err := i.admin.GroupLags(ctx, "", others...)
		if err != nil {
			return nil, err
		}
		groups = append(groups, more...)
	}
	slices.SortFunc(groups, func(a, b kafka.GroupLag) int { return strings.Compare(a.Group, b.Group) })
	return groups, nil
}

// checkRoles asks each configured health URL, and infers the processor's
// and sinks' health from their consumer groups (in Overview).
func (i *Inspector) checkRoles(ctx context.Context) []RoleHealth {
	var out []RoleHealth
	for role, url := range i.cfg.Health {
		h := RoleHealth{Role: role, Expected: true, URL: url}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err == nil {
			var resp *http.Response
			if resp, err = i.hc.Do(req); err == nil {
				resp.Body.Close()
				h.Healthy = resp.StatusCode == http.StatusOK
				h.Detail = resp.Status
			}
		}
		if err != nil {
			h.Detail = err.Error()
		}
		out = append(out, h)
	}
	slices.SortFunc(out, func(a, b RoleHealth) int { return strings.Compare(a.Role, b.Role) })
	return out
}

// kind classifies a topic for the overview.
func (i *Inspector) kind(topic string) string {
	switch {
	case slices.Contains(i.cfg.RawTopics, topic):
		return "raw"
	case topic == i.cfg.ErrorTopic:
		return "error"
	case topic == capsule.TopicValidMixed:
		return "mixed"
	case topic == "eventlogging_SinkError" || topic == "eventlogging_ip_key":
		return "other"
	case strings.HasPrefix(topic, "eventlogging_"):
		return "schema"
	}
	return "other"
}

// Overview returns the last sample: it makes no call to Kafka.
func (i *Inspector) Overview(context.Context) (Overview, error) {
	i.mu.RLock()
	defer i.mu.RUnlock()
	ov := Overview{Time: i.last}
	for t, h := range i.samples {
		s := StreamStats{Topic: t, Kind: i.kind(t), Total: h[len(h)-1].end}
		for k := 1; k < len(h); k++ {
			dt := h[k].t.Sub(h[k-1].t).Seconds()
			r := 0.0
			if dt > 0 {
				r = float64(max(h[k].end-h[k-1].end, 0)) / dt
			}
			s.Recent = append(s.Recent, r)
		}
		if n := len(s.Recent); n > 0 {
			s.Rate = s.Recent[n-1]
		}
		switch s.Kind {
		case "schema":
			ov.ValidRate += s.Rate
		case "error":
			ov.InvalidRate += s.Rate
		}
		ov.Streams = append(ov.Streams, s)
	}
	slices.SortFunc(ov.Streams, func(a, b StreamStats) int { return strings.Compare(a.Topic, b.Topic) })
	ov.Groups = slices.Clone(i.groups)
	ov.Roles = slices.Clone(i.roles)
	ov.Roles = append(ov.Roles, i.groupRoles()...)
	return ov, nil
}

// groupRoles are the roles of the consumer groups: the expected ones
// first, in Config.Expect order (down until their group has a member),
// then the others found through GroupPrefix. Called with i.mu held.
func (i *Inspector) groupRoles() []RoleHealth {
	var out []RoleHealth
	expected := map[string]bool{}
	for _, e := range i.cfg.Expect {
		if expected[e.Group] {
			continue
		}
		expected[e.Group] = true
		r := RoleHealth{Role: e.Role, Expected: true, Group: e.Group}
		k := slices.IndexFunc(i.groups, func(g GroupStats) bool { return g.Group == e.Group })
		switch {
		case k >= 0:
			r.Healthy, r.Detail = groupHealth(i.groups[k])
		case !i.sampled && i.groupsErr == nil:
			r.Detail = "not sampled yet"
		case i.groupsErr != nil:
			r.Detail = fmt.Sprintf("group %s: cannot describe the groups: %v", e.Group, i.groupsErr)
		default:
			r.Detail = fmt.Sprintf("no member: group %s does not exist (nothing has joined it yet)", e.Group)
		}
		out = append(out, r)
	}
	for _, g := range i.groups {
		if expected[g.Group] {
			continue
		}
		r := RoleHealth{Role: strings.TrimPrefix(g.Group, i.cfg.GroupPrefix+"-"), Group: g.Group}
		r.Healthy, r.Detail = groupHealth(g)
		out = append(out, r)
	}
	return out
}

// groupHealth says whether a group's role runs (it has a member), and why.
func groupHealth(g GroupStats) (bool, string) {
	switch {
	case g.Members > 0:
		return true, fmt.Sprintf("%d members, lag %d", g.Members, g.Lag)
	case g.Error != "":
		return false, fmt.Sprintf("no member: group %s: %s", g.Group, g.Error)
	case g.State == "" || g.State == "Dead":
		return false, fmt.Sprintf("no member: group %s does not exist (nothing has joined it yet)", g.Group)
	}
	return false, fmt.Sprintf("no member: group %s is %s, lag %d", g.Group, g.State, g.Lag)
}

// Topics lists the topics a live tail can follow.
func (i *Inspector) Topics(ctx context.Context) ([]string, error) {
	ts, err := i.admin.ListTopics(ctx)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(ts, func(t string) bool {
		return strings.HasPrefix(t, "_") || t == "eventlogging_ip_key" || (i.cfg.HideRawTopics && slices.Contains(i.cfg.RawTopics, t))
	}), nil
}

// ErrRawHidden is Tail's answer for a raw topic with Config.HideRawTopics.
var ErrRawHidden = errors.New("raw topics hold client IPs and are not shown (IP policy hash)")

// Tail follows topic from now on; see kafka.Tail. Values that are JSON are
// passed as they are; others (Avro, garbage) as a JSON string.
func (i *Inspector) Tail(ctx context.Context, topic string, fn func(TailEvent) error) error {
	if i.cfg.HideRawTopics && slices.Contains(i.cfg.RawTopics, topic) {
		return fmt.Errorf("tail %s: %w", topic, ErrRawHidden)
	}
	return kafka.Tail(ctx, kafka.TailConfig{Kafka: i.cfg.Kafka, Topics: []string{topic}}, func(r kafka.Record) error {
		v := json.RawMessage(r.Value)
		if !json.Valid(r.Value) {
			v, _ = json.Marshal(strings.ToValidUTF8(string(r.Value), "\uFFFD"))
		}
		return fn(TailEvent{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Time: r.Timestamp, Value: v})
	})
}
