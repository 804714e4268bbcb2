package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Config holds the settings every client of the pipeline shares. Zero values
// are documented per field.
type Config struct {
	// Brokers are the bootstrap addresses (host:port); required. Only used
	// to bootstrap: partition leaders are always taken from metadata.
	Brokers []string
	// ClientID names the client in broker logs; default "eventlogging".
	ClientID string
	// Linger is how long the producer waits to fill a batch; default 5ms.
	Linger time.Duration
	// MaxBufferedRecords bounds the producer's memory: Produce blocks when
	// this many records are in flight; default 100,000.
	MaxBufferedRecords int
	// FetchMaxBytes bounds one fetch response (consumers); default 16 MiB.
	// A partition gets at most 1 MiB of it per fetch, and a record larger
	// than either is still fetched whole.
	FetchMaxBytes int32
	// FetchMinBytes and FetchMaxWait apply to the consumer groups that
	// move the pipeline's bulk (the processor's Pipe, the sinks' Batches):
	// a fetch is answered once it has FetchMinBytes, or after
	// FetchMaxWait. Defaults 256 KiB and 100ms. Tails (unless
	// TailConfig.Bulk, as bench's follower sets) and the schema log fetch
	// with Kafka's own minimum of 1 byte.
	FetchMinBytes int32
	FetchMaxWait  time.Duration
	// Logger receives the client's warnings and errors; default: discarded.
	Logger *slog.Logger
	// Metrics, if set, counts produce outcomes and exports franz-go's
	// client metrics; shared by every client of the process.
	Metrics *Metrics
	// TLS encrypts the connections to the brokers; nil: plaintext.
	TLS *TLS
	// SASL authenticates to the brokers; nil: no authentication.
	SASL *SASL
}

// ErrNoBrokers is returned when Config.Brokers is empty.
var ErrNoBrokers = errors.New("kafka: no brokers configured")

func (c Config) opts() ([]kgo.Opt, error) {
	var seeds []string
	for _, b := range c.Brokers {
		for _, s := range strings.Split(b, ",") {
			if s = strings.TrimSpace(s); s != "" {
				seeds = append(seeds, s)
			}
		}
	}
	if len(seeds) == 0 {
		return nil, ErrNoBrokers
	}
	id := c.ClientID
	if id == "" {
		id = "eventlogging"
	}
	linger := c.Linger
	if linger == 0 {
		linger = 5 * time.Millisecond
	}
	maxBuf := c.MaxBufferedRecords
	if maxBuf <= 0 {
		maxBuf = 100_000
	}
	fetchMax := c.FetchMaxBytes
	if fetchMax <= 0 {
		fetchMax = 16 << 20
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.FetchMaxBytes(fetchMax),
		kgo.FetchMaxPartitionBytes(min(fetchMax, 1<<20)),
		kgo.ClientID(id),
		// Idempotent producer (franz-go's default) with acks from all
		// in-sync replicas: a leader change neither loses nor duplicates.
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(linger),
		kgo.MaxBufferedRecords(maxBuf),
		kgo.ProducerBatchMaxBytes(1 << 20),
		// Metadata requests through the client are served from a cache
		// younger than this; keep it short so freshly created topics are
		// seen quickly.
		kgo.MetadataMinAge(time.Second),
	}
	sec, err := c.securityOpts()
	if err != nil {
		return nil, err
	}
	opts = append(opts, sec...)
	if c.Logger != nil {
		opts = append(opts, kgo.WithLogger(slogAdapter{c.Logger}))
	}
	opts = append(opts, c.Metrics.hooks(id)...)
	return opts, nil
}

// bulkFetchOpts are the fetch options of the consumer groups that move the
// pipeline's bulk. With Kafka's default of one byte, a busy broker answers
// every fetch as soon as one record arrives, so each consumer made about
// one fetch a produce; on the 2-core machine that took about half the
// broker's CPU in the end-to-end benchmark (docs/performance.md).
func (c Config) bulkFetchOpts() []kgo.Opt {
	minBytes, wait := c.FetchMinBytes, c.FetchMaxWait
	if minBytes <= 0 {
		minBytes = 256 << 10
	}
	if wait <= 0 {
		wait = 100 * time.Millisecond
	}
	return []kgo.Opt{kgo.FetchMinBytes(minBytes), kgo.FetchMaxWait(wait)}
}

// NewClient returns a plain producer/admin client for the configuration.
func NewClient(c Config, extra ...kgo.Opt) (*kgo.Client, error) {
	opts, err := c.opts()
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	return cl, nil
}

// Ping checks that a broker answers metadata requests.
func Ping(ctx context.Context, cl *kgo.Client) error {
	if err := cl.Ping(ctx); err != nil {
		return explainAuth(fmt.Errorf("kafka ping: %w", err))
	}
	return nil
}

// slogAdapter routes franz-go's logs to slog, warnings and above only.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (a slogAdapter) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	var l slog.Level
	switch level {
	case kgo.LogLevelError:
		l = slog.LevelError
	case kgo.LogLevelWarn:
		l = slog.LevelWarn
	case kgo.LogLevelInfo:
		l = slog.LevelInfo
	default:
		l = slog.LevelDebug
	}
	a.l.Log(context.Background(), l, msg, keyvals...) //nolint:sloglint // franz-go's own messages are passed through

}
