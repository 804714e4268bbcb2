package kafka

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventlogging/eventlogging/internal/record"
)

// Record is one consumed record.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Timestamp time.Time
	// Headers are the record's headers, nil when it has none.
	Headers []Header
}

// Header is one record header.
type Header = record.Header

// HeaderValue returns the value of the first header named key.
func (r *Record) HeaderValue(key string) ([]byte, bool) {
	for _, h := range r.Headers {
		if h.Key == key {
			return h.Value, true
		}
	}
	return nil, false
}

// recordOf converts a consumed franz-go record.
func recordOf(r *kgo.Record) Record {
	rec := Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
	if len(r.Headers) > 0 {
		rec.Headers = make([]Header, len(r.Headers))
		for i, h := range r.Headers {
			rec.Headers[i] = Header{Key: h.Key, Value: h.Value}
		}
	}
	return rec
}

// kgoRecord converts a message to produce.
func kgoRecord(m Message) *kgo.Record {
	r := &kgo.Record{}
	setRecord(r, m)
	return r
}

// setRecord makes r the record of m.
func setRecord(r *kgo.Record, m Message) {
	*r = kgo.Record{Topic: m.Topic, Key: m.Key, Value: m.Value}
	if len(m.Headers) > 0 {
		r.Headers = make([]kgo.RecordHeader, len(m.Headers))
		for i, h := range m.Headers {
			r.Headers[i] = kgo.RecordHeader{Key: h.Key, Value: h.Value}
		}
	}
}

// Message is one record to produce (the pipeline's one record shape).
// Leaders are looked up per partition from metadata by the client; nothing
// here names a broker.
type Message = record.Message

// Transform turns consumed records into messages to produce. It is called
// concurrently on disjoint, contiguous slices of a poll's records (each
// slice in offset order per partition) and appends to out. It must not keep
// recs after returning.
type Transform func(ctx context.Context, recs []Record, out []Message) []Message

// PipeConfig configures a consume→transform→produce→commit loop.
type PipeConfig struct {
	Kafka Config
	// Group is the consumer group; required.
	Group string
	// Topics to consume; required.
	Topics []string
	// Parallelism is how many goroutines transform a poll; default GOMAXPROCS.
	Parallelism int
	// MaxPollRecords bounds one batch (and so memory); default 20,000.
	MaxPollRecords int
	// SessionTimeout of the group member; default 10s. A killed member's
	// partitions move to the others after this long.
	SessionTimeout time.Duration
	// ShutdownTimeout bounds the work on the batch in hand once Run's ctx
	// is done (transform, produce, commit): after it the batch's context is
	// cancelled and Run returns; default 30s.
	ShutdownTimeout time.Duration
	// OutputTopics creates output topics before the first produce to them;
	// nil means they must exist.
	OutputTopics TopicDefaults
	// CreateOutputTopics turns on the creation above.
	CreateOutputTopics bool
	// Logger; nil discards.
	Logger *slog.Logger
	// OnRefused, if set, gives the record to produce in place of one Kafka
	// refused for good (IsPermanent: too large, invalid, a topic name it
	// refuses), e.g. an EventError saying why; false: none, the record is
	// counted, logged and skipped. Nil: every refused record is skipped.
	// It must return a small record: one refused in turn is skipped.
	OnRefused func(m Message, err error) (Message, bool)
	// OnBatch, if set, is called after each committed batch (for metrics and tests).
	OnBatch func(consumed, produced int)
}

// Pipe runs one member of a consumer group: poll a batch, transform it in
// parallel, produce every output, wait for all acknowledgements (acks=all),
// then commit the batch's offsets. At-least-once: a crash before the commit
// means the batch is processed again by whoever owns the partitions next.
type Pipe struct {
	cfg PipeConfig
	tf  Transform
}

// NewPipe validates the configuration; Run starts the work.
func NewPipe(cfg PipeConfig, tf Transform) (*Pipe, error) {
	if cfg.Group == "" {
		return nil, errors.New("kafka pipe: no consumer group")
	}
	if len(cfg.Topics) == 0 {
		return nil, errors.New("kafka pipe: no topics to consume")
	}
	if len(cfg.Kafka.Brokers) == 0 {
		return nil, ErrNoBrokers
	}
	if tf == nil {
		return nil, errors.New("kafka pipe: nil transform")
	}
	if cfg.Parallelism <= 0 {
		cfg.Parallelism = runtime.GOMAXPROCS(0)
	}
	if cfg.MaxPollRecords <= 0 {
		cfg.MaxPollRecords = 20_000
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 10 * time.Second
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = shutdownTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Pipe{cfg: cfg, tf: tf}, nil
}

// shutdownTimeout is the default bound on finishing the batch in hand once
// a run's context is done (Pipe.Run's produce and commit, ConsumeBatches'
// write and commit; PipeConfig and BatchConfig.ShutdownTimeout), and on
// commitWithRetry's retries then.
const shutdownTimeout = 30 * time.Second

// workContext returns the context of a run's batches: unlike ctx it lives
// on once ctx is done, so that the batch in hand can be finished and
// committed, but for bound only; it is cancelled then. cancel releases it.
func workContext(ctx context.Context, bound time.Duration) (work context.Context, cancel context.CancelFunc) {
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		t := time.NewTimer(bound)
		defer t.Stop()
		select {
		case <-t.C:
			cancelWork()
		case <-work.Done(): // the run returned first
		}
	})
	return work, func() {
		stop()
		cancelWork()
	}
}

// Run consumes until ctx is done, then finishes the batch in hand, commits it
// and leaves the group. It returns nil after a graceful stop, or the error
// that stopped it (nothing uncommitted is lost: it is consumed again).
func (p *Pipe) Run(ctx context.Context) error {
	log := p.cfg.Logger
	rl := rebalanceLog{log: log, group: p.cfg.Group}
	cl, err := NewClient(p.cfg.Kafka, append(p.cfg.Kafka.bulkFetchOpts(),
		kgo.ConsumerGroup(p.cfg.Group),
		kgo.ConsumeTopics(p.cfg.Topics...),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(p.cfg.SessionTimeout),
		kgo.HeartbeatInterval(p.cfg.SessionTimeout/10),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.OnPartitionsAssigned(rl.assigned),
		kgo.OnPartitionsRevoked(rl.revoked),
		kgo.OnPartitionsLost(rl.lost),
	)...)
	if err != nil {
		return err
	}
	// Close leaves the group; by then every polled batch is committed.
	defer func() {
		cl.AllowRebalance() // a blocked rebalance must not hold up leaving the group
		cl.Close()
	}()
	var topics *Topics
	if p.cfg.CreateOutputTopics {
		topics = NewTopics(cl, p.cfg.OutputTopics)
	}
	// work outlives ctx by at most ShutdownTimeout, so the last batch can
	// be finished and committed.
	work, cancelWork := workContext(ctx, p.cfg.ShutdownTimeout)
	defer cancelWork()

	outs := make([][]Message, p.cfg.Parallelism)
	for {
		fetches := cl.PollRecords(ctx, p.cfg.MaxPollRecords)
		if fetches.IsClientClosed() {
			return nil
		}
		fetches.EachError(func(t string, part int32, err error) {
			if !errors.Is(err, context.Canceled) {
				log.Warn("fetch error", "topic", t, "partition", part, "err", err)
			}
		})
		recs := toRecords(fetches)
		if len(recs) > 0 {
			p.cfg.Kafka.Metrics.observeBatch(len(recs))
			produced, err := p.batch(work, cl, topics, recs, outs)
			if err != nil {
				return err
			}
			// Every output of the batch is acknowledged by all in-sync
			// replicas: only now are the batch's offsets committed.
			err = commitWithRetry(work, ctx, log, len(recs), cl.CommitUncommittedOffsets)
			if errors.Is(err, errGenerationLost) {
				// Not ours any more: the partitions' next owner processes
				// the batch again. Nothing is lost; keep polling.
				cl.AllowRebalance()
				continue
			}
			if err != nil {
				return err
			}
			if p.cfg.OnBatch != nil {
				p.cfg.OnBatch(len(recs), produced)
			}
		}
		cl.AllowRebalance()
		if ctx.Err() != nil {
			log.Info("stopping: batch committed, leaving group", "group", p.cfg.Group)
			return nil
		}
	}
}

func toRecords(fetches kgo.Fetches) []Record {
	n := 0
	fetches.EachRecord(func(*kgo.Record) { n++ })
	recs := make([]Record, 0, n)
	fetches.EachRecord(func(r *kgo.Record) {
		recs = append(recs, recordOf(r))
	})
	return recs
}

// batch transforms recs in parallel chunks and produces the outputs in input
// order, returning once every produce is acknowledged.
func (p *Pipe) batch(ctx context.Context, cl *kgo.Client, topics *Topics, recs []Record, outs [][]Message) (int, error) {
	chunks := min(p.cfg.Parallelism, len(recs))
	size := (len(recs) + chunks - 1) / chunks
	var wg sync.WaitGroup
	for i := range chunks {
		lo, hi := i*size, min((i+1)*size, len(recs))
		outs[i] = outs[i][:0]
		if lo >= hi {
			continue
		}
		wg.Go(func() { outs[i] = p.tf(ctx, recs[lo:hi], outs[i]) })
	}
	wg.Wait()
	total := 0
	for i := range chunks {
		total += len(outs[i])
	}
	ensureErr, err := ensureTopicsOf(ctx, topics, outs[:chunks])
	if err != nil {
		return 0, err
	}
	res := produceEach(ctx, cl, outs[:chunks], ensureErr)
	if err := res.Err(); err != nil {
		return 0, err
	}
	refused := res.Refused()
	if len(refused) == 0 {
		return total, nil
	}
	// Records Kafka refuses for good are not retried: each becomes its
	// replacement (the processor's EventError saying why), or, when
	// there is none or Kafka refuses that too, is counted, logged and
	// skipped. Their neighbours are acknowledged already.
	flat := make([]Message, 0, total)
	for i := range chunks {
		flat = append(flat, outs[i]...)
	}
	var repl []Message
	var replOf []int
	for _, i := range refused {
		p.cfg.Kafka.Metrics.refuse(res[i])
		if p.cfg.OnRefused != nil {
			if m, ok := p.cfg.OnRefused(flat[i], res[i]); ok {
				repl = append(repl, m)
				replOf = append(replOf, i)
				continue
			}
		}
		p.skip(flat[i], res[i])
	}
	if len(repl) > 0 {
		rerr, err := ensureTopicsOf(ctx, topics, [][]Message{repl})
		if err != nil {
			return 0, err
		}
		rres := produceEach(ctx, cl, [][]Message{repl}, rerr)
		if err := rres.Err(); err != nil {
			return 0, err
		}
		for _, j := range rres.Refused() {
			p.skip(flat[replOf[j]], res[replOf[j]])
		}
	}
	return total, nil
}

// ensureTopicsOf creates the topics of batches' messages (topics nil: they
// exist). refused is Ensure's *TopicsRefusedError, for produceEach; err is
// any other error.
func ensureTopicsOf(ctx context.Context, topics *Topics, batches [][]Message) (refused, err error) {
	if topics == nil {
		return nil, nil
	}
	// A batch holds up to MaxPollRecords outputs to as many topics as
	// there are schemas: a set, not a scan of the names per record.
	seen := map[string]bool{}
	var names []string
	for _, b := range batches {
		for _, m := range b {
			if !seen[m.Topic] {
				seen[m.Topic] = true
				names = append(names, m.Topic)
			}
		}
	}
	err = topics.Ensure(ctx, names...)
	var tr *TopicsRefusedError
	if errors.As(err, &tr) {
		return err, nil
	}
	return nil, err
}

// skip logs a record Kafka refused for good that has no replacement
// (counted already): it is not produced.
func (p *Pipe) skip(m Message, err error) {
	p.cfg.Logger.Error("record refused by Kafka for good: skipped", "topic", m.Topic, "bytes", len(m.Value), "err", err)
}

// ProduceSync produces messages and waits until all are acknowledged.
func ProduceSync(ctx context.Context, cl *kgo.Client, msgs []Message) error {
	return produceEach(ctx, cl, [][]Message{msgs}, nil).First()
}

func waitABit(ctx context.Context) error {
	t := time.NewTimer(50 * time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// rebalanceLog logs a group member's rebalances at Info: which partitions
// it was assigned, had revoked (a rebalance moved them, or the member
// leaves) or lost (its session expired: another member owns them now).
// After a member dies, the survivors' "partitions assigned" lines say
// where its partitions went and when — kafka.session_timeout after the
// death, since the coordinator waits that long for its heartbeat.
type rebalanceLog struct {
	log   *slog.Logger
	group string
}

func (r rebalanceLog) assigned(_ context.Context, cl *kgo.Client, m map[string][]int32) {
	if attrs := r.attrs(cl, m); attrs != nil {
		r.log.Info("partitions assigned", attrs...)
	}
}

func (r rebalanceLog) revoked(_ context.Context, cl *kgo.Client, m map[string][]int32) {
	if attrs := r.attrs(cl, m); attrs != nil {
		r.log.Info("partitions revoked", attrs...)
	}
}

func (r rebalanceLog) lost(_ context.Context, cl *kgo.Client, m map[string][]int32) {
	if attrs := r.attrs(cl, m); attrs != nil {
		r.log.Info("partitions lost", attrs...)
	}
}

// attrs are the attributes of a rebalance line, nil when m holds no
// partition: franz-go also calls the revoke hook at the end of every group
// session, with nothing revoked, which is not logged.
func (r rebalanceLog) attrs(cl *kgo.Client, m map[string][]int32) []any {
	n := 0
	for _, ps := range m {
		n += len(ps)
	}
	if n == 0 {
		return nil
	}
	member, generation := cl.GroupMetadata()
	return []any{"group", r.group, "partitions", formatPartitions(m), "count", n, "member", member, "generation", generation}
}

// formatPartitions writes topic partitions as "topic:0,1,2 other:3",
// topics and partitions sorted.
func formatPartitions(m map[string][]int32) string {
	topics := make([]string, 0, len(m))
	for t, ps := range m {
		if len(ps) > 0 {
			topics = append(topics, t)
		}
	}
	slices.Sort(topics)
	var b strings.Builder
	for i, t := range topics {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t)
		b.WriteByte(':')
		ps := slices.Clone(m[t])
		slices.Sort(ps)
		for j, p := range ps {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(int(p)))
		}
	}
	return b.String()
}
