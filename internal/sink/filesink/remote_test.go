package filesink

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/objstore"
)

// remoteConfig is a Config publishing to a store in a local directory
// (objstore.Dir: the protocol of a distributed target without a server).
func remoteConfig(t *testing.T, format Format, storeRoot, staging string) Config {
	t.Helper()
	st, err := objstore.NewDir(storeRoot)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Root: "test://" + storeRoot, Store: st, Staging: staging, Format: format, MaxFileBytes: 3 << 10, Schemas: testSchemas(t)}
	if format == Parquet {
		cfg.MaxFileBytes = 12 << 10
	}
	return cfg
}

// flakyStore fails every call while down is set, as an unreachable store.
type flakyStore struct {
	objstore.Store
	down  atomic.Bool
	fails atomic.Int64
}

var errDown = errors.New("connection refused (test)")

func (f *flakyStore) check() error {
	if f.down.Load() {
		f.fails.Add(1)
		return errDown
	}
	return nil
}

func (f *flakyStore) Put(ctx context.Context, key string, b []byte) error {
	if err := f.check(); err != nil {
		return err
	}
	return f.Store.Put(ctx, key, b)
}

func (f *flakyStore) PutIf(ctx context.Context, key string, b []byte, match string) (string, error) {
	if err := f.check(); err != nil {
		return "", err
	}
	return f.Store.PutIf(ctx, key, b, match)
}

func (f *flakyStore) GetVersion(ctx context.Context, key string) ([]byte, string, error) {
	if err := f.check(); err != nil {
		return nil, "", err
	}
	return f.Store.GetVersion(ctx, key)
}

func (f *flakyStore) PutFile(ctx context.Context, key, p string) error {
	if err := f.check(); err != nil {
		return err
	}
	return f.Store.PutFile(ctx, key, p)
}

// An unreachable store does not break the sink: Write fails with a
// transient error (the runner retries the batch), nothing is consumed past
// what is held locally, and once the store is back the same sink
// publishes everything exactly once.
func TestRemoteStoreOutage(t *testing.T) {
	storeRoot, staging := t.TempDir(), t.TempDir()
	cfg := remoteConfig(t, Parquet, storeRoot, staging)
	flaky := &flakyStore{Store: cfg.Store}
	cfg.Store = flaky
	s := openSink(t, cfg)
	input := spread([]string{"eventlogging_Test"}, 2, 600, 2)
	f := newFeeder(input, 50)
	offs, err := s.StartOffsets(t.Context(), f.assigned())
	if err != nil {
		t.Fatal(err)
	}
	if offs["eventlogging_Test"][0] != 0 {
		t.Fatalf("start offsets %v", offs)
	}
	// Feed batch by batch, retrying a failed batch as sink.Run does; the
	// store is down for batches 5 to 14.
	var batches [][]kafka.Record
	for i := 0; i < len(input); i += 50 {
		var b []kafka.Record
		for j := i; j < min(i+50, len(input)); j++ {
			b = append(b, input[j])
		}
		batches = append(batches, b)
	}
	failed := 0
	for i := 0; i < len(batches); {
		flaky.down.Store(i >= 5 && i < 15 && failed < 10)
		_, err := s.Write(t.Context(), batches[i])
		if err != nil {
			if errors.Is(err, ErrBroken) {
				t.Fatalf("the store's outage broke the sink: %v", err)
			}
			if !errors.Is(err, errDown) {
				t.Fatalf("unexpected error: %v", err)
			}
			failed++
			continue // retried, as the runner does
		}
		i++
	}
	flaky.down.Store(false)
	if failed == 0 || flaky.fails.Load() == 0 {
		t.Fatal("the store was never down during a publish: the test tests nothing")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, storeRoot, input)
	checkNoTemps(t, staging)
	t.Logf("%d writes failed while the store was down, %d store calls refused", failed, flaky.fails.Load())
}

// Bad targets are refused at Open with the reason.
func TestRemoteBadTarget(t *testing.T) {
	for target, want := range map[string]string{
		"ftp://host/x":                      `unknown scheme "ftp"`,
		"s3:///prefix":                      "no bucket",
		"s3://b/p?endpoint=localhost:1":     "want http(s)://HOST[:PORT]",
		"s3://b/p?color=blue":               `unknown parameter "color"`,
		"s3://key:secret@b/p":               "credentials do not belong in the URL",
		"hdfs:///path":                      "no namenode",
		"s3://b/p?use_path_style=sometimes": "want true or false",
	} {
		_, err := Open(Config{Root: target, Format: JSONLines, Staging: t.TempDir()})
		if err == nil || !contains(err.Error(), want) {
			t.Errorf("Open(%q) = %v, want an error with %q", target, err, want)
		}
		if err != nil && contains(err.Error(), "secret") {
			t.Errorf("Open(%q): the error shows the secret: %v", target, err)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// slowStore answers every call after delay, as a slow store does.
type slowStore struct {
	objstore.Store
	delay time.Duration
}

func (s *slowStore) wait(ctx context.Context) error {
	select {
	case <-time.After(s.delay):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *slowStore) Get(ctx context.Context, key string) ([]byte, error) {
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	return s.Store.Get(ctx, key)
}

func (s *slowStore) GetVersion(ctx context.Context, key string) ([]byte, string, error) {
	if err := s.wait(ctx); err != nil {
		return nil, "", err
	}
	return s.Store.GetVersion(ctx, key)
}

func (s *slowStore) PutIf(ctx context.Context, key string, b []byte, match string) (string, error) {
	if err := s.wait(ctx); err != nil {
		return "", err
	}
	return s.Store.PutIf(ctx, key, b, match)
}

// Recovery and claims give each store call its own deadline: over a store
// that takes 60 ms per call, Open and StartOffsets of 24 partitions (about
// 3 s of calls) succeed with a 200 ms per-call limit, where one deadline
// for the whole recovery, as before, failed every restart alike.
func TestRemoteRecoveryDeadlinePerCall(t *testing.T) {
	storeRoot := t.TempDir()
	input := spread([]string{"eventlogging_Test", "eventlogging_Other"}, 12, 20, 1)
	cfg := remoteConfig(t, JSONLines, storeRoot, t.TempDir())
	feedAndClose(t, openSink(t, cfg), input, 100)
	defer func(c, s time.Duration) { callTimeout, storeTimeout = c, s }(callTimeout, storeTimeout)
	callTimeout, storeTimeout = 200*time.Millisecond, 200*time.Millisecond
	cfg.Store = &slowStore{Store: cfg.Store, delay: 60 * time.Millisecond}
	start := time.Now()
	s := openSink(t, cfg)
	f := newFeeder(input, 100)
	offs, err := s.StartOffsets(t.Context(), f.assigned())
	if err != nil {
		t.Fatalf("StartOffsets over a slow store: %v", err)
	}
	if got := offs["eventlogging_Test"][3]; got != 20 {
		t.Errorf("partition 3 resumes at %d, want 20", got)
	}
	t.Logf("Open and 24 claims over a 60 ms store: %v", time.Since(start).Round(time.Millisecond))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, storeRoot, input)
}
