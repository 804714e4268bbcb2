package schemalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventlogging/eventlogging/internal/kafka"
)

// DefaultTopic is the schema log's topic when Config.Topic is
// empty.
const DefaultTopic = "_eventlogging_schemas"

const (
	// schemaPartition is the only partition of the schema log.
	schemaPartition int32 = 0
	// leaderKey is the key of the leader announcements; every key with
	// this prefix is the log's own and never reaches apply.
	leaderKey = "_leader"
	// schemaTxnTimeout is the broker-side bound on one Append's
	// transaction: a writer that dies mid-transaction blocks readers (the
	// last stable offset) at most this long, or until a new leader fences
	// it, whichever comes first.
	schemaTxnTimeout = 10 * time.Second
	// schemaWriteTimeout bounds the produce of one Append, and separately
	// its commit.
	schemaWriteTimeout = 10 * time.Second
	// electionRetry is the pause before acquiring leadership again after a
	// failed attempt, and before rejoining the election after being fenced.
	electionRetry = time.Second
	// leaveTimeout bounds leaving the election group on shutdown.
	leaveTimeout = 5 * time.Second
)

// ErrNotLeader is returned (wrapped) by Append on an instance that is not the
// schema log's leader: the write must be sent to the leader (SchemaLog.Leader
// gives its URL). Nothing was written.
var ErrNotLeader = errors.New("not the schema log leader")

// ErrFenced is returned by Append, wrapped together with ErrNotLeader, when
// a newer leader has taken over the log's writer while this instance still
// believed it led: the record was not committed (the newer leader aborted
// it), and this instance has stepped down.
var ErrFenced = errors.New("schema log writer fenced by a newer leader")

// errNotRunning is returned to callers waiting on a schema log whose Run has
// returned.
var errNotRunning = errors.New("kafka: schema log is not running")

// Record is one record of the schema log. Value nil is a tombstone.
type Record struct {
	Key, Value []byte
	Offset     int64
}

// Config configures a Log. Zero values are documented per
// field.
type Config struct {
	// Kafka is the client configuration; Brokers is required.
	Kafka kafka.Config
	// Topic is the compacted single-partition log; default
	// DefaultTopic. The election group is "<Topic>-leader" and the
	// transactional id of the writer "<Topic>-writer".
	Topic string
	// SelfURL is this instance's HTTP base URL, announced to the others
	// when it becomes leader. Empty: the instance only follows the log and
	// never stands for election (a read-only replica).
	SelfURL string
	// ReplicationFactor of the topic when Run creates it; 0 or -1 means the
	// broker's default.
	ReplicationFactor int16
	// SessionTimeout of the election group member; default 6s (the
	// broker's default minimum). A leader that dies without leaving the
	// group is replaced after about this long.
	SessionTimeout time.Duration
	// Logger; default: discarded. Also receives franz-go's warnings when
	// Kafka.Logger is nil.
	Logger *slog.Logger
}

// Log is the schema registry's storage: an ordered log of records in a
// compacted, single-partition Kafka topic, replayed by every instance, with
// exactly one writer at a time.
//
// Election: every instance with a SelfURL joins the consumer group
// "<topic>-leader", subscribed to the topic but never fetching; the member
// the group assigns partition 0 is the leader. On assignment it (1) fences
// every older writer by initialising the transactional producer
// "<topic>-writer" (the broker bumps the producer epoch and aborts the old
// epoch's open transaction, so a former leader's later writes fail with
// ProducerFenced or InvalidProducerEpoch) and, in the same transaction,
// writes a leader announcement (key "_leader", JSON {"url", "since"}); (2)
// catches up by replaying the log until it has read its own announcement
// back, so it has applied every record any earlier leader committed; (3)
// only then accepts Appends. On revocation or loss of the partition it
// stops accepting Appends at once.
//
// Each Append is its own transaction (begin, produce, commit) on the fenced
// producer; the log is read with isolation level read_committed, so aborted
// records (a fenced zombie's, say) are never applied.
//
// Methods are safe for concurrent use. New starts nothing; Run does
// the work, once.
type Log struct {
	cfg   Config
	log   *slog.Logger
	group string
	txnID string

	// clientOpts, if set (tests only), adds options to the client of a
	// role: "reader", "election" or "writer".
	clientOpts func(role string) []kgo.Opt

	started  atomic.Bool
	ready    chan struct{} // closed when the initial replay is done
	stopped  chan struct{} // closed when Run stops reading
	stopOnce sync.Once
	wake     chan struct{} // capacity 1: the elector has something to do

	mu          sync.Mutex
	next        int64         // offset after the last record read and applied
	advanced    chan struct{} // closed and replaced whenever next grows
	announced   string        // URL of the latest leader announcement
	announcedAt int64         // offset of the latest leader announcement; -1: none read
	member      uint64        // the current election client; older ones' callbacks are ignored
	assigned    bool          // the current election client holds partition 0
	assignSeq   uint64        // bumped at every assignment change
	acquiring   context.CancelFunc
	term        *schemaTerm   // non-nil while this instance is the leader
	retired     []*schemaTerm // ended terms whose writer the elector closes
	rejoin      bool          // fenced: leave the election group and join again
}

// schemaTerm is one leadership term: the transactional writer initialised
// when it began.
type schemaTerm struct {
	w     *kgo.Client
	topic string
	ctx   context.Context // canceled when Run stops
	sem   chan struct{}   // capacity 1: one transaction at a time
}

// announcement is the value of a leader announcement record.
type announcement struct {
	URL   string `json:"url"`
	Since string `json:"since"`
}

// New validates cfg and applies its defaults. It contacts nothing.
func New(cfg Config) (*Log, error) {
	if len(cfg.Kafka.Brokers) == 0 {
		return nil, fmt.Errorf("kafka: schema log: %w", kafka.ErrNoBrokers)
	}
	if cfg.Topic == "" {
		cfg.Topic = DefaultTopic
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 6 * time.Second
	}
	if cfg.ReplicationFactor == 0 {
		cfg.ReplicationFactor = -1
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Kafka.Logger == nil {
		cfg.Kafka.Logger = cfg.Logger
	}
	return &Log{
		cfg:         cfg,
		log:         cfg.Logger.With("component", "schema-log", "topic", cfg.Topic),
		group:       cfg.Topic + "-leader",
		txnID:       cfg.Topic + "-writer",
		ready:       make(chan struct{}),
		stopped:     make(chan struct{}),
		wake:        make(chan struct{}, 1),
		advanced:    make(chan struct{}),
		announcedAt: -1,
	}, nil
}

func (l *Log) newClient(role string, opts ...kgo.Opt) (*kgo.Client, error) {
	if l.clientOpts != nil {
		opts = append(opts, l.clientOpts(role)...)
	}
	cl, err := kafka.NewClient(l.cfg.Kafka, opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka: schema log %s client: %w", role, err)
	}
	return cl, nil
}

// Run creates the topic if it is missing (one partition,
// cleanup.policy=compact, min.insync.replicas 2 when ReplicationFactor is 3
// or more), replays it from the start and follows it, calling apply for
// every record in offset order from one goroutine, and takes part in the
// leader election (if SelfURL is set), until ctx is done. Leader
// announcements are not passed to apply. apply may keep the record's slices.
//
// On return this instance has left the election group (so another takes
// over at once) and its writer is closed. Run returns nil when ctx is done,
// or the error that prevented it from starting. It may be called once.
func (l *Log) Run(ctx context.Context, apply func(Record)) error {
	if apply == nil {
		return errors.New("kafka: schema log: nil apply")
	}
	if !l.started.CompareAndSwap(false, true) {
		return errors.New("kafka: schema log: Run called twice")
	}
	defer l.stop()

	rd, err := l.newClient("reader",
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// Control records (commit and abort markers) are kept so that
		// the reader sees the last offset below the end of the log even
		// when it is a marker, and so knows it has caught up.
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	if err != nil {
		return err
	}
	defer rd.Close()
	if err := kafka.EnsureCompactedTopic(ctx, rd, l.cfg.Topic, l.cfg.ReplicationFactor, "records expire", l.log); err != nil {
		return fmt.Errorf("kafka: schema log: %w", err)
	}
	start, target, err := l.bounds(ctx, kadm.NewClient(rd))
	if err != nil {
		return err
	}
	l.log.Info("replaying schema log", "start_offset", start, "end_offset", target)
	l.mu.Lock()
	l.next = start
	l.mu.Unlock()
	if target <= start {
		close(l.ready)
	}
	rd.AddConsumePartitions(map[string]map[int32]kgo.Offset{
		l.cfg.Topic: {schemaPartition: kgo.NewOffset().AtStart()},
	})

	electCtx, stopElection := context.WithCancel(ctx)
	var wg sync.WaitGroup
	if l.cfg.SelfURL != "" {
		wg.Go(func() { l.elect(electCtx) })
	}
	l.read(ctx, rd, apply, target, target <= start)
	l.stop() // Appends waiting for their record give up now
	stopElection()
	wg.Wait()
	return nil
}

func (l *Log) stop() { l.stopOnce.Do(func() { close(l.stopped) }) }

// bounds returns the log start offset and the last stable offset (the end of
// what read_committed consumers can read) of the partition.
func (l *Log) bounds(ctx context.Context, adm *kadm.Client) (start, end int64, err error) {
	lookup := func(what string, list func(context.Context, ...string) (kadm.ListedOffsets, error)) (int64, error) {
		offs, err := list(ctx, l.cfg.Topic)
		if err != nil {
			return 0, fmt.Errorf("kafka: schema log: %s offset of %s: %w", what, l.cfg.Topic, err)
		}
		o, ok := offs.Lookup(l.cfg.Topic, schemaPartition)
		if !ok {
			return 0, fmt.Errorf("kafka: schema log: %s offset of %s: partition not found", what, l.cfg.Topic)
		}
		if o.Err != nil {
			return 0, fmt.Errorf("kafka: schema log: %s offset of %s: %w", what, l.cfg.Topic, o.Err)
		}
		return o.Offset, nil
	}
	if start, err = lookup("start", adm.ListStartOffsets); err != nil {
		return 0, 0, err
	}
	if end, err = lookup("end", adm.ListCommittedOffsets); err != nil {
		return 0, 0, err
	}
	return start, end, nil
}

// read consumes the log until ctx is done, applying records in offset order.
// The initial replay is done once the offset target is reached.
func (l *Log) read(ctx context.Context, rd *kgo.Client, apply func(Record), target int64, ready bool) {
	for {
		fetches := rd.PollFetches(ctx)
		if ctx.Err() != nil || fetches.IsClientClosed() {
			return
		}
		fetches.EachError(func(_ string, _ int32, err error) {
			var loss *kgo.ErrDataLoss
			if errors.As(err, &loss) { // the client has already reset past it
				l.log.Error("schema log lost data", "err", err)
				return
			}
			l.log.Warn("schema log fetch failed", "err", err)
		})
		last := int64(-1)
		fetches.EachRecord(func(r *kgo.Record) {
			last = r.Offset
			switch {
			case r.Attrs.IsControl():
			case bytes.HasPrefix(r.Key, []byte(leaderKey)):
				l.noteAnnouncement(r)
			default:
				apply(Record{Key: r.Key, Value: r.Value, Offset: r.Offset})
			}
		})
		if last < 0 {
			continue
		}
		l.mu.Lock()
		l.next = last + 1
		close(l.advanced)
		l.advanced = make(chan struct{})
		l.mu.Unlock()
		if !ready && last+1 >= target {
			ready = true
			close(l.ready)
			l.log.Info("schema log replayed", "end_offset", last+1)
		}
	}
}

func (l *Log) noteAnnouncement(r *kgo.Record) {
	var a announcement
	if r.Value == nil || json.Unmarshal(r.Value, &a) != nil {
		l.log.Warn("skipping malformed schema log leader announcement", "offset", r.Offset)
		return
	}
	l.mu.Lock()
	l.announced, l.announcedAt = a.URL, r.Offset
	l.mu.Unlock()
	l.log.Info("schema log leader announced", "url", a.URL, "since", a.Since, "offset", r.Offset)
}

// waitApplied returns once the record at off has been applied locally.
func (l *Log) waitApplied(ctx context.Context, off int64) error {
	for {
		l.mu.Lock()
		next, advanced := l.next, l.advanced
		l.mu.Unlock()
		if next > off {
			return nil
		}
		select {
		case <-advanced:
		case <-ctx.Done():
			return ctx.Err()
		case <-l.stopped:
			return errNotRunning
		}
	}
}

// WaitReady blocks until the initial replay has reached the end of the log
// as it was when Run started, or until ctx is done or Run has returned.
func (l *Log) WaitReady(ctx context.Context) error {
	select {
	case <-l.ready:
		return nil
	default:
	}
	select {
	case <-l.ready:
		return nil
	case <-l.stopped:
		return errNotRunning
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Leader reports whether this instance is the leader, and the current
// leader's URL: this instance's SelfURL when it leads, else the URL of the
// latest leader announcement, or "" if unknown. When self is false the URL
// is never this instance's own (an announcement of its own that a later
// term has not replaced yet is reported as unknown), so forwarding to it
// cannot loop. The URL of a leader that has just died is reported until its
// successor's announcement arrives.
func (l *Log) Leader() (self bool, leaderURL string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.term != nil {
		return true, l.cfg.SelfURL
	}
	if l.announced == l.cfg.SelfURL {
		return false, ""
	}
	return false, l.announced
}

// Append writes one record in its own transaction and returns its offset
// once apply has been called for it on this instance (read-your-write).
// Only the leader may append: otherwise the error wraps ErrNotLeader and
// nothing was written. If a newer leader fenced this one, the error wraps
// ErrFenced and ErrNotLeader, nothing was committed, and this instance has
// stepped down.
//
// ctx bounds waiting for an earlier Append and for the record to be read
// back; a transaction once begun is finished regardless (within about 10s).
// Any other error leaves the outcome unknown: the record may still appear in
// the log (and be applied) later. Keys must not be empty nor start with
// "_leader", which the log reserves for itself; value nil writes a
// tombstone.
func (l *Log) Append(ctx context.Context, key, value []byte) (int64, error) {
	if len(key) == 0 {
		return -1, errors.New("kafka: schema log append: empty key")
	}
	if bytes.HasPrefix(key, []byte(leaderKey)) {
		return -1, fmt.Errorf("kafka: schema log append: key prefix %q is reserved", leaderKey)
	}
	l.mu.Lock()
	t := l.term
	l.mu.Unlock()
	if t == nil {
		return -1, l.notLeader()
	}
	select {
	case t.sem <- struct{}{}:
	case <-ctx.Done():
		return -1, fmt.Errorf("kafka: schema log append: %w", ctx.Err())
	}
	l.mu.Lock()
	current := l.term == t
	l.mu.Unlock()
	if !current { // the term ended while this call waited
		<-t.sem
		return -1, l.notLeader()
	}
	wctx, cancel := context.WithTimeout(t.ctx, schemaWriteTimeout)
	off, err := t.write(wctx, key, value)
	cancel()
	<-t.sem
	if err != nil {
		// The writer's state is unknown (or it was fenced): end the
		// term. If this instance still holds partition 0 the elector
		// starts a new one, fencing this writer and catching up first.
		fenced := isFenced(err)
		l.endTerm(t, fenced)
		if fenced {
			l.log.Warn("schema log writer fenced; stepping down", "err", err)
			return -1, fmt.Errorf("kafka: schema log append: %w: %w: %w", ErrNotLeader, ErrFenced, err)
		}
		return -1, fmt.Errorf("kafka: schema log append: %w", err)
	}
	if err := l.waitApplied(ctx, off); err != nil {
		return -1, fmt.Errorf("kafka: schema log append: committed at offset %d, not yet read back: %w", off, err)
	}
	return off, nil
}

func (l *Log) notLeader() error {
	if _, url := l.Leader(); url != "" {
		return fmt.Errorf("kafka: schema log append: %w (the leader is %s)", ErrNotLeader, url)
	}
	return fmt.Errorf("kafka: schema log append: %w (no leader known)", ErrNotLeader)
}

// write produces one record in its own transaction and commits it,
// returning its offset. The commit is attempted even after ctx is done: the
// outcome of an interrupted commit would be unknown.
//
// A nil error does not prove the commit on a writer's first transaction:
// franz-go (v1.22) buffers the first record for a topic the client has not
// loaded yet into the new partition, which may send it and have it
// acknowledged, before it publishes the topic's partitions; an
// EndTransaction in that window finds no partition in the transaction, so it
// aborts it instead and returns nil. acquire reads its announcement back to
// tell. A term's later transactions are not exposed: its first commit, read
// back, shows that the client had published the partitions.
func (t *schemaTerm) write(ctx context.Context, key, value []byte) (int64, error) {
	if err := t.w.BeginTransaction(); err != nil {
		return -1, fmt.Errorf("begin transaction: %w", err)
	}
	rec := &kgo.Record{Topic: t.topic, Partition: schemaPartition, Key: key, Value: value}
	perr := t.w.ProduceSync(ctx, rec).FirstErr()
	end := kgo.TryCommit
	if perr != nil {
		end = kgo.TryAbort
	}
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), schemaWriteTimeout)
	defer cancel()
	eerr := t.w.EndTransaction(ectx, end)
	switch {
	case perr != nil:
		return -1, fmt.Errorf("produce: %w", errors.Join(perr, eerr))
	case eerr != nil:
		return -1, fmt.Errorf("commit transaction: %w", eerr)
	}
	// Committed: the record is below the last stable offset once the
	// broker has written the commit marker, so the reader will get it.
	return rec.Offset, nil
}

// isFenced reports whether err says a newer producer epoch exists for the
// transactional id.
func isFenced(err error) bool {
	return errors.Is(err, ErrFenced) ||
		errors.Is(err, kerr.ProducerFenced) ||
		errors.Is(err, kerr.InvalidProducerEpoch) ||
		errors.Is(err, kerr.InvalidProducerIDMapping)
}

// endTerm ends t if it is still the current term, and asks the elector to
// rejoin the election if t was fenced.
func (l *Log) endTerm(t *schemaTerm, fenced bool) {
	l.mu.Lock()
	if l.term == t {
		l.term = nil
		l.retired = append(l.retired, t)
	}
	if fenced {
		l.rejoin = true
	}
	l.mu.Unlock()
	l.poke()
}

func (l *Log) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// elect takes part in the election until ctx is done, with one election
// client (one group member) at a time.
func (l *Log) elect(ctx context.Context) {
	for {
		l.mu.Lock()
		l.member++
		member := l.member
		l.rejoin = false
		l.mu.Unlock()
		ecl, err := l.newClient("election",
			kgo.ConsumerGroup(l.group),
			kgo.ConsumeTopics(l.cfg.Topic),
			kgo.DisableAutoCommit(),
			kgo.SessionTimeout(l.cfg.SessionTimeout),
			kgo.HeartbeatInterval(l.cfg.SessionTimeout/10),
			kgo.RebalanceTimeout(2*l.cfg.SessionTimeout),
			// The callbacks only record the assignment: the work is
			// done by the elector, so rebalances are never held up.
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				if slices.Contains(m[l.cfg.Topic], schemaPartition) {
					l.setAssigned(member, true)
				}
			}),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				if slices.Contains(m[l.cfg.Topic], schemaPartition) {
					l.setAssigned(member, false)
				}
			}),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				if slices.Contains(m[l.cfg.Topic], schemaPartition) {
					l.setAssigned(member, false)
				}
			}),
		)
		if err != nil {
			l.log.Error("schema log cannot take part in the leader election", "err", err)
			return
		}
		// The group only elects; records are read by the reader.
		ecl.PauseFetchTopics(l.cfg.Topic)
		l.campaign(ctx)

		// Leave the group (the revoke callback ends any term), so that
		// another member takes over now rather than after the session
		// timeout.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaveTimeout)
		if err := ecl.LeaveGroupContext(lctx); err != nil {
			l.log.Warn("schema log could not leave the election group", "err", err)
		}
		cancel()
		ecl.Close()
		l.setAssigned(member, false) // in case no callback came
		l.closeRetired()
		if ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(electionRetry):
		}
	}
}

// setAssigned records whether the election client member holds partition
// 0. Losing it ends the term at once: Appends fail with ErrNotLeader.
func (l *Log) setAssigned(member uint64, assigned bool) {
	l.mu.Lock()
	if member != l.member || l.assigned == assigned {
		l.mu.Unlock()
		return
	}
	l.assigned = assigned
	l.assignSeq++
	if !assigned {
		if l.term != nil {
			l.retired = append(l.retired, l.term)
			l.term = nil
			l.log.Info("stepped down as schema log leader")
		}
		if l.acquiring != nil {
			l.acquiring()
		}
	}
	l.mu.Unlock()
	l.poke()
}

// campaign becomes leader whenever partition 0 is assigned, until ctx is
// done or this member was fenced and must rejoin.
func (l *Log) campaign(ctx context.Context) {
	var retry <-chan time.Time
	for {
		l.closeRetired()
		l.mu.Lock()
		rejoin := l.rejoin
		want := l.assigned && l.term == nil
		seq := l.assignSeq
		l.mu.Unlock()
		if rejoin {
			return
		}
		if want && retry == nil {
			if err := l.acquire(ctx, seq); err != nil {
				if ctx.Err() != nil {
					return
				}
				if isFenced(err) {
					l.log.Warn("fenced while becoming schema log leader; rejoining the election", "err", err)
					return
				}
				l.log.Warn("could not become schema log leader; retrying", "err", err)
				retry = time.After(electionRetry)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-l.wake:
		case <-retry:
			retry = nil
		}
	}
}

// acquire starts a term for the assignment seq: fence older writers and
// announce (one transaction), read the log up to the announcement, then
// accept Appends. It gives up, returning nil, if the assignment changes.
func (l *Log) acquire(ctx context.Context, seq uint64) error {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	l.mu.Lock()
	if !l.assigned || l.assignSeq != seq {
		l.mu.Unlock()
		return nil
	}
	l.acquiring = cancel
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.acquiring = nil
		l.mu.Unlock()
	}()

	began := time.Now()
	w, err := l.newClient("writer",
		kgo.TransactionalID(l.txnID),
		kgo.TransactionTimeout(schemaTxnTimeout),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0),
	)
	if err != nil {
		return err
	}
	t := &schemaTerm{w: w, topic: l.cfg.Topic, ctx: ctx, sem: make(chan struct{}, 1)}
	value, err := json.Marshal(announcement{URL: l.cfg.SelfURL, Since: began.UTC().Format(time.RFC3339)})
	if err != nil {
		w.Close()
		return err
	}
	// The first transaction initialises the producer id: the broker
	// aborts the previous writer's open transaction (or waits for its
	// commit to complete) and bumps the epoch, fencing it. Everything it
	// committed is therefore below the announcement's offset.
	wctx, wcancel := context.WithTimeout(actx, schemaWriteTimeout)
	off, err := t.write(wctx, []byte(leaderKey), value)
	wcancel()
	if err == nil {
		// Catch up: every record below the announcement is applied.
		err = l.waitApplied(actx, off)
	}
	l.mu.Lock()
	if !l.assigned || l.assignSeq != seq {
		// Revoked meanwhile (which also cancels actx): not an error.
		l.mu.Unlock()
		w.Close()
		return nil
	}
	switch {
	case err != nil:
	case l.announcedAt > off:
		// A writer initialised after ours announced itself.
		err = fmt.Errorf("announcement at offset %d superseded at %d: %w", off, l.announcedAt, ErrFenced)
	case l.announcedAt < off:
		// The reader is past off but did not read our announcement:
		// its transaction was aborted although write reported a commit
		// (see write), and the reader moved past it on the abort
		// marker. Leading now would leave the followers without this
		// term's URL, and the writer's sequence numbers no longer
		// match the broker's: retry with a new writer.
		err = fmt.Errorf("announcement at offset %d was not committed", off)
	}
	if err != nil {
		l.mu.Unlock()
		w.Close()
		return fmt.Errorf("become leader: %w", err)
	}
	l.term = t
	l.mu.Unlock()
	l.log.Info("became schema log leader", "url", l.cfg.SelfURL, "offset", off, "took", time.Since(began))
	return nil
}

// closeRetired closes the writers of ended terms, each after its Append in
// progress, if any, has finished.
func (l *Log) closeRetired() {
	l.mu.Lock()
	ts := l.retired
	l.retired = nil
	l.mu.Unlock()
	for _, t := range ts {
		t.sem <- struct{}{}
		t.w.Close()
		<-t.sem
	}
}
