package embedded

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config configures the embedded broker of standalone mode. Zero
// values are documented per field.
type Config struct {
	// DataDir is where the broker keeps topics, log segments, consumer
	// group offsets and its broker.json; required, created if missing.
	// Only one broker may use a data directory at a time.
	DataDir string
	// Listen is the host:port the broker listens on and advertises to
	// clients; default "127.0.0.1:19092". Port 0 picks any free port
	// (Brokers and broker.json say which). The host must be one clients
	// can dial, so not a wildcard such as 0.0.0.0.
	Listen string
	// Partitions is the partition count of topics created without one
	// (CreateTopics with -1); default 1.
	Partitions int32
	// RetentionMs is the retention.ms given to every topic created without
	// one; default 7 days, -1 keeps records forever. Compacted topics
	// (cleanup.policy=compact) get -1, as compaction bounds them. It applies
	// to topics created from now on: existing topics keep the retention they
	// were created with.
	RetentionMs int64
	// SyncWrites fsyncs every produced batch and group commit before the
	// broker acknowledges it. Off (the default, like Kafka's own
	// log.flush.interval.messages) writes go to the OS page cache: they
	// survive the process being killed but the last seconds of
	// acknowledged records can be lost if the machine crashes or loses
	// power. On, every acknowledged record is on disk, at a large cost in
	// produce throughput (one fsync per batch).
	SyncWrites bool
	// Logger receives the broker's warnings and errors; nil discards.
	Logger *slog.Logger
}

// DefaultListen is the address of the embedded broker when
// Config.Listen is empty.
const DefaultListen = "127.0.0.1:19092"

// DefaultRetentionMs is the retention of topics created on the embedded
// broker when Config.RetentionMs is zero: 7 days.
const DefaultRetentionMs = int64(7 * 24 * time.Hour / time.Millisecond)

// BrokerFile is the file in the data directory through which a running
// embedded broker tells other commands its address.
const BrokerFile = "broker.json"

// ErrNoLocalBroker is returned by LocalBrokers when no embedded broker is
// running on the data directory.
var ErrNoLocalBroker = errors.New("no broker")

// retentionCheckInterval is how often expired records are deleted and
// compacted topics compacted (Kafka's log.retention.check.interval.ms).
const retentionCheckInterval = 5 * time.Minute

// brokerInfo is the content of broker.json.
type brokerInfo struct {
	Brokers []string `json:"brokers"`
	PID     int      `json:"pid"`
	Started string   `json:"started"` // RFC 3339
}

// Broker is a running single-node Kafka-protocol broker (franz-go's
// kfake) persisting to a data directory. Safe for concurrent use.
type Broker struct {
	dir       string
	log       *slog.Logger
	cluster   *kfake.Cluster
	brokers   []string
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// Start starts the broker now: it loads what the data directory
// holds (replaying the log after an unclean stop), listens on cfg.Listen and
// writes <DataDir>/broker.json so that other commands find it. Automatic
// topic creation is off: topics are created with CreateTopics, and each gets
// a retention.ms (see Config.RetentionMs). It fails if another
// broker is running on the same data directory. Close stops it.
func Start(cfg Config) (*Broker, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("embedded broker: no data directory")
	}
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	host, _, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("embedded broker: listen address %q: %w", cfg.Listen, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return nil, fmt.Errorf("embedded broker: listen address %q: give a host clients can dial (it is advertised to them), such as 127.0.0.1", cfg.Listen)
	}
	if cfg.Partitions < 0 {
		return nil, fmt.Errorf("embedded broker: partitions %d: must be positive", cfg.Partitions)
	}
	if cfg.Partitions == 0 {
		cfg.Partitions = 1
	}
	switch {
	case cfg.RetentionMs == 0:
		cfg.RetentionMs = DefaultRetentionMs
	case cfg.RetentionMs < -1:
		return nil, fmt.Errorf("embedded broker: retention %dms: must be positive, or -1 to keep records forever", cfg.RetentionMs)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "embedded-broker")

	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	if err := checkDataDirFree(cfg.DataDir, log); err != nil {
		return nil, err
	}

	start := time.Now()
	retention := strconv.FormatInt(cfg.RetentionMs, 10)
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) {
			var lc net.ListenConfig
			return lc.Listen(context.Background(), network, cfg.Listen)
		}),
		kfake.DataDir(cfg.DataDir),
		kfake.DefaultNumPartitions(int(cfg.Partitions)),
		kfake.ClusterID("eventlogging-standalone"),
		// The broker-wide default, for any topic that lacks its own;
		// every topic created through CreateTopics gets its own below.
		kfake.BrokerConfigs(map[string]string{"log.retention.ms": retention}),
		kfake.WithLogger(kfakeLogger{log}),
	}
	if cfg.SyncWrites {
		opts = append(opts, kfake.SyncWrites())
	}
	cluster, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("embedded broker on %s (data %s): %w", cfg.Listen, cfg.DataDir, err)
	}
	// Give every created topic an explicit retention.ms. kfake applies
	// time retention to compacted topics too (Kafka does not), so those
	// get -1: deleting old records would lose live keys.
	cluster.ControlKey(int16(kmsg.CreateTopics), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if ct, ok := req.(*kmsg.CreateTopicsRequest); ok {
			for i := range ct.Topics {
				addRetention(&ct.Topics[i], retention)
			}
		}
		return nil, nil, false // not handled: the broker creates the topics as amended
	})

	e := &Broker{
		dir:     cfg.DataDir,
		log:     log,
		cluster: cluster,
		brokers: cluster.ListenAddrs(),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	info := brokerInfo{Brokers: e.brokers, PID: os.Getpid(), Started: start.UTC().Format(time.RFC3339)}
	if err := writeBrokerFile(cfg.DataDir, info); err != nil {
		cluster.Close()
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	go e.retentionLoop()
	log.Info("embedded broker started", "brokers", e.brokers, "data_dir", cfg.DataDir,
		"retention_ms", cfg.RetentionMs, "sync_writes", cfg.SyncWrites, "took", time.Since(start))
	return e, nil
}

// addRetention sets retention.ms on a topic to be created, unless it has one.
func addRetention(t *kmsg.CreateTopicsRequestTopic, retention string) {
	compactOnly := false
	for _, c := range t.Configs {
		switch c.Name {
		case "retention.ms":
			return
		case "cleanup.policy":
			if c.Value != nil {
				compactOnly = strings.Contains(*c.Value, "compact") && !strings.Contains(*c.Value, "delete")
			}
		}
	}
	v := retention
	if compactOnly {
		v = "-1"
	}
	c := kmsg.NewCreateTopicsRequestTopicConfig()
	c.Name = "retention.ms"
	c.Value = &v
	t.Configs = append(t.Configs, c)
}

// retentionLoop deletes expired records and compacts compacted topics
// periodically until Close. kfake runs its own pass only hourly, and after a
// restart only once a topic is created, so the schedule is kept here.
func (e *Broker) retentionLoop() {
	defer close(e.done)
	t := time.NewTicker(retentionCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
			e.enforceRetention()
		}
	}
}

// enforceRetention runs one retention and compaction pass over every topic.
func (e *Broker) enforceRetention() { e.cluster.Compact() }

// Brokers returns the bootstrap addresses of the broker.
func (e *Broker) Brokers() []string { return append([]string(nil), e.brokers...) }

// Close stops the broker: it refuses new connections, applies offset
// commits already received, writes its state, fsyncs the data directory and
// removes broker.json. Clients should be closed first (their in-flight
// requests fail). Close is idempotent.
func (e *Broker) Close() error {
	e.closeOnce.Do(func() {
		start := time.Now()
		close(e.stop)
		<-e.done
		e.cluster.Close()
		// Without SyncWrites kfake leaves segments in the page cache even
		// on shutdown; a clean stop should leave everything on disk.
		var errs []error
		if err := syncTree(e.dir); err != nil {
			errs = append(errs, fmt.Errorf("embedded broker: sync %s: %w", e.dir, err))
		}
		if err := removeBrokerFile(e.dir, os.Getpid()); err != nil {
			errs = append(errs, fmt.Errorf("embedded broker: %w", err))
		}
		e.closeErr = errors.Join(errs...)
		e.log.Info("embedded broker stopped", "data_dir", e.dir, "took", time.Since(start))
	})
	return e.closeErr
}

// LocalBrokers returns the addresses of the embedded broker running on
// dataDir, read from its broker.json. The error wraps ErrNoLocalBroker and
// tells the user what to do when there is no such file or the process that
// wrote it is gone.
func LocalBrokers(dataDir string) ([]string, error) {
	path := filepath.Join(dataDir, BrokerFile)
	info, err := readBrokerFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf(`%w: give --kafka-brokers HOST:PORT,… (or --config FILE), or start "eventlogging standalone" and give its --data-dir DIR (looked for %s)`, ErrNoLocalBroker, path)
	case err != nil:
		return nil, fmt.Errorf(`%w: %w; give --kafka-brokers HOST:PORT,… (or --config FILE), or start "eventlogging standalone" and give its --data-dir DIR`, ErrNoLocalBroker, err)
	case !processAlive(info.PID):
		return nil, fmt.Errorf(`%w: the standalone that wrote %s (pid %d, %s) is not running; start "eventlogging standalone", or give --kafka-brokers HOST:PORT,…`,
			ErrNoLocalBroker, path, info.PID, strings.Join(info.Brokers, ","))
	}
	return info.Brokers, nil
}

// checkDataDirFree fails if a live broker owns dataDir: its broker.json
// names a live process and its address answers. A leftover file from an
// unclean stop is reported and replaced.
func checkDataDirFree(dataDir string, log *slog.Logger) error {
	path := filepath.Join(dataDir, BrokerFile)
	info, err := readBrokerFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		log.Warn("replacing unreadable broker file", "path", path, "err", err)
		return nil
	}
	if processAlive(info.PID) {
		for _, addr := range info.Brokers {
			d := net.Dialer{Timeout: time.Second}
			if conn, err := d.DialContext(context.Background(), "tcp", addr); err == nil {
				_ = conn.Close() // only probed
				return fmt.Errorf("embedded broker: data directory %s is in use by process %d (broker %s); stop it first, or use another data directory",
					dataDir, info.PID, addr)
			}
		}
	}
	log.Warn("previous broker did not stop cleanly: recovering the data directory", "path", path, "pid", info.PID)
	return nil
}

func readBrokerFile(path string) (brokerInfo, error) {
	var info brokerInfo
	data, err := os.ReadFile(path)
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(data, &info); err != nil {
		return info, fmt.Errorf("%s: %w", path, err)
	}
	if len(info.Brokers) == 0 {
		return info, fmt.Errorf("%s: no brokers listed", path)
	}
	return info, nil
}

// writeBrokerFile replaces broker.json atomically (write, fsync, rename).
func writeBrokerFile(dataDir string, info brokerInfo) error {
	data, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(dataDir, BrokerFile)
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(append(data, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp) // best effort: the write error matters
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	return os.Rename(tmp, path)
}

// removeBrokerFile removes broker.json if the process pid wrote it.
func removeBrokerFile(dataDir string, pid int) error {
	path := filepath.Join(dataDir, BrokerFile)
	info, err := readBrokerFile(path)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && info.PID != pid) {
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// syncTree fsyncs every file and directory under root.
func syncTree(root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.Type().IsRegular():
			return syncPath(path, os.O_RDWR)
		case d.IsDir() && runtime.GOOS != "windows": // Windows cannot fsync a directory
			return syncPath(path, os.O_RDONLY)
		}
		return nil
	})
}

func syncPath(path string, flag int) error {
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// processAlive reports whether a process with this pid exists.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false // Windows: no such process
	}
	defer func() { _ = p.Release() }() // frees a handle; nothing to report
	if runtime.GOOS == "windows" {
		return true
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

// kfakeLogger routes the broker's logs to slog: errors and warnings as
// such, the per-request chatter at debug.
type kfakeLogger struct{ l *slog.Logger }

func (k kfakeLogger) Logf(level kfake.LogLevel, format string, args ...any) {
	var l slog.Level
	switch level {
	case kfake.LogLevelError:
		l = slog.LevelError
	case kfake.LogLevelWarn:
		l = slog.LevelWarn
	default:
		l = slog.LevelDebug
	}
	ctx := context.Background()
	if k.l.Enabled(ctx, l) {
		k.l.Log(ctx, l, "broker log", "detail", fmt.Sprintf(format, args...))
	}
}
