package kafka

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ErrBufferFull is passed to a TryProduce callback when the producer's
// bounded buffer is full.
var ErrBufferFull = kgo.ErrMaxBuffered

// ProducerConfig tunes a Producer.
type ProducerConfig struct {
	Kafka Config
	// DeliveryTimeout fails a buffered record that could not be delivered
	// in this long (its callback gets the error); default 15s.
	DeliveryTimeout time.Duration
	// MaxBufferedRecords bounds the records held in memory awaiting
	// delivery; default Kafka.MaxBufferedRecords (100,000).
	MaxBufferedRecords int
	// SyncLinger is the synchronous client's linger; 0: none.
	SyncLinger time.Duration
}

// Producer sends records to Kafka: asynchronously into a bounded buffer, or
// synchronously until every record is acknowledged by all in-sync replicas.
// Safe for concurrent use.
//
// The two ways have a client each. The asynchronous one lingers
// (Config.Linger) to fill batches; the synchronous one lingers only
// ProducerConfig.SyncLinger (the intake's 100 µs by default): a caller
// waiting for its acknowledgement waits the linger out on every call (5 ms
// would be most of a synchronous POST's latency). It batches under load
// anyway, since records produced while its requests are in flight (at
// most 5 a broker) go together in the next; the short linger gathers the
// records of concurrent requests into fewer produce requests.
type Producer struct {
	cl   *kgo.Client
	sync *kgo.Client
}

// NewProducer connects lazily: no request is made until the first produce.
func NewProducer(cfg ProducerConfig) (*Producer, error) {
	if cfg.DeliveryTimeout <= 0 {
		cfg.DeliveryTimeout = 15 * time.Second
	}
	if cfg.MaxBufferedRecords > 0 {
		cfg.Kafka.MaxBufferedRecords = cfg.MaxBufferedRecords
	}
	cl, err := NewClient(cfg.Kafka, kgo.RecordDeliveryTimeout(cfg.DeliveryTimeout))
	if err != nil {
		return nil, err
	}
	sync, err := NewClient(cfg.Kafka, kgo.RecordDeliveryTimeout(cfg.DeliveryTimeout), kgo.ProducerLinger(cfg.SyncLinger))
	if err != nil {
		cl.Close()
		return nil, err
	}
	return &Producer{cl: cl, sync: sync}, nil
}

// TryProduce buffers m and returns at once; cb is called exactly once with
// the outcome: nil when acknowledged, ErrBufferFull at once when the buffer
// is full, or the delivery error (after DeliveryTimeout at most).
func (p *Producer) TryProduce(m Message, cb func(error)) {
	p.cl.TryProduce(context.Background(), kgoRecord(m), func(_ *kgo.Record, err error) {
		cb(err)
	})
}

// ProduceSync produces msgs and returns when every one is acknowledged, or
// with the first error.
func (p *Producer) ProduceSync(ctx context.Context, msgs []Message) error {
	return produceEach(ctx, p.sync, [][]Message{msgs}, nil).First()
}

// ProduceEach produces msgs and returns when every one is acknowledged or
// failed, with each one's outcome: a record Kafka refuses for good
// (IsPermanent) fails alone, and its neighbours are acknowledged. topicErr
// is the error of creating their topics (Topics.Ensure), nil if none:
// records to a topic it refused fail for good without being produced.
func (p *Producer) ProduceEach(ctx context.Context, msgs []Message, topicErr error) Outcome {
	return produceEach(ctx, p.sync, [][]Message{msgs}, topicErr)
}

// Ping reports whether a broker answers.
func (p *Producer) Ping(ctx context.Context) error { return Ping(ctx, p.cl) }

// Buffered is the number of records awaiting acknowledgement.
func (p *Producer) Buffered() int64 {
	return p.cl.BufferedProduceRecords() + p.sync.BufferedProduceRecords()
}

// Topics administers topics through this producer's client.
func (p *Producer) Topics(d TopicDefaults) *Topics { return NewTopics(p.cl, d) }

// Flush waits until every buffered record is acknowledged or failed.
func (p *Producer) Flush(ctx context.Context) error {
	for _, cl := range []*kgo.Client{p.cl, p.sync} {
		if err := cl.Flush(ctx); err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return nil
}

// Close flushes for at most ten seconds, then closes the clients.
func (p *Producer) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = p.Flush(ctx)
	p.cl.Close()
	p.sync.Close()
}
