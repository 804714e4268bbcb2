package filesink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"slices"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/testsupport"
	"github.com/eventlogging/eventlogging/internal/vfs"
)

// The power-loss tests run the sink on a vfs.Mem, stop the file system at
// every mutating operation in turn (a create, a write, an fsync, a mkdir,
// a rename, a remove), throw away whatever was not fsync'd (Mem.Crash),
// and start again: Open, a power loss right after it (what recovery did
// must not depend on what it did not sync), Open again, a replay of the
// input from StartOffsets, Close. SIGKILL (TestKill9) and the crash hooks
// (TestCrashAtEveryStep) keep the page cache, so only these tests check
// the fsyncs of a checkpoint.

// powerLossRoot is the local root of the power-loss tests: two levels
// below the file system's root, made and synced beforehand as an operator
// would have.
const powerLossRoot = "/data/events"

// powerLossFS returns a Mem holding powerLossRoot, durably.
func powerLossFS(t *testing.T) *vfs.Mem {
	t.Helper()
	m := vfs.NewStrictMem()
	if err := m.MkdirAll(powerLossRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{powerLossRoot, path.Dir(powerLossRoot), "/"} {
		if err := syncDir(m, d); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// powerLossRun is the run a power loss interrupts: Open, the input in
// crashShape (checkpoints on age and size all along), CloseHours four
// hours later (every hour of the input is closed: _SUCCESS markers and the
// hours state) and Close. It returns the first error.
func powerLossRun(ctx context.Context, cfg Config, input []kafka.Record) error {
	cfg, f := crashShape.start(cfg, input)
	var later time.Duration
	now := cfg.Now
	cfg.Now = func() time.Time { return now().Add(later) }
	s, err := Open(cfg)
	if err != nil {
		return err
	}
	if _, err := f.run(ctx, s); err != nil {
		return err
	}
	later = 4 * time.Hour
	if err := s.CloseHours(ctx); err != nil {
		return err
	}
	return s.Close()
}

// TestPowerLossAtEveryStep: a local root on a vfs.Mem, the file system
// stopped at each mutating operation of powerLossRun in turn and its
// unsynced state thrown away. Right after the power loss no partition
// directory holds a file that is not whole (nor a temp file), and every
// hour before the durable hours state's next hour has its _SUCCESS; then
// Open, a second power loss, Open, a replay in replayShape (which cuts
// files at other offsets, so a record published twice shows) and Close
// publish every record exactly once, and leave no temp file.
func TestPowerLossAtEveryStep(t *testing.T) {
	input := lateInput(1)
	for _, format := range []Format{JSONLines, Parquet} {
		t.Run(string(format), func(t *testing.T) {
			proto := Config{Root: powerLossRoot, Format: format, Schemas: testSchemas(t)}
			// A run without a power loss counts the operations; it must
			// publish checkpoints during the feed, and the replay must cut
			// files elsewhere.
			m := powerLossFS(t)
			before := m.Ops()
			cfg := proto
			cfg.FS, cfg.Logger = m, slog.New(slog.DiscardHandler)
			var fed []string
			cfg.hook = func(p string) error {
				if p == pointPublished {
					fed = append(fed, p)
				}
				return nil
			}
			if err := powerLossRun(t.Context(), cfg, input); err != nil {
				t.Fatal(err)
			}
			total := m.Ops() - before
			files := checkExactlyOnceIn(t, m, powerLossRoot, input).files
			replay := powerLossFS(t)
			cfg, f := replayShape.start(proto, input)
			cfg.FS = replay
			feedAndClose(t, openSink(t, cfg), input, f.batch)
			shared := 0
			for _, f := range checkExactlyOnceIn(t, replay, powerLossRoot, input).files {
				if slices.Contains(files, f) {
					shared++
				}
			}
			if len(fed) < 4 || shared*10 > len(files) {
				t.Fatalf("%d checkpoints in the run, %d of its %d files published by the replay under the same names: a power loss would test little", len(fed), shared, len(files))
			}
			t.Logf("the run publishes %d files in %d checkpoints (%d shared with the replay) in %d mutating operations", len(files), len(fed), shared, total)
			start := time.Now()
			for n := range total {
				if !t.Run(fmt.Sprintf("op%04d", n), func(t *testing.T) { testPowerLoss(t, proto, input, n) }) {
					break
				}
			}
			t.Logf("%d power losses, one at each mutating operation of the run, in %v", total, time.Since(start).Round(time.Millisecond))
		})
	}
}

// testPowerLoss runs powerLossRun on a new Mem until its n-th mutating
// operation, cuts the power, and checks the recovery and a replay (see
// TestPowerLossAtEveryStep).
func testPowerLoss(t *testing.T, proto Config, input []kafka.Record, n int) {
	m := powerLossFS(t)
	cfg := proto
	cfg.FS, cfg.Logger = m, slog.New(slog.DiscardHandler)
	m.CrashAfter(n)
	err := powerLossRun(t.Context(), cfg, input)
	crashed := m.Crashed()
	if !errors.Is(err, vfs.ErrCrashed) {
		t.Fatalf("the run stopped with %v, want the simulated crash at operation %d", err, n)
	}
	stage := "checking the root right after the power loss"
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("power lost at %q; failed %s", crashed, stage)
		}
	})
	m.Crash()
	readPublishedIn(t, m, powerLossRoot) // every visible file is whole
	checkClosedHours(t, m, powerLossRoot)
	if t.Failed() {
		t.FailNow()
	}

	restart, f := replayShape.start(proto, input)
	restart.FS, restart.Logger = m, testsupport.Logger(t)
	stage = "recovering (the first Open after the power loss)"
	if _, err := Open(restart); err != nil {
		t.Fatalf("Open after the power loss: %v", err)
	}
	m.Crash()
	stage = "recovering and replaying"
	s := openSink(t, restart)
	if _, err := f.run(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	stage = "checking the records after the replay"
	checkExactlyOnceIn(t, m, powerLossRoot, input)
	checkNoTempsIn(t, m, powerLossRoot)
}

// checkClosedHours checks, for every topic's hours state in the root of
// fsys, that every hour of the test data (from base) before its next hour
// has its _SUCCESS marker once an hour was closed.
func checkClosedHours(t *testing.T, fsys vfs.FS, root string) {
	t.Helper()
	entries, err := fsys.ReadDir(path.Join(root, hoursDir))
	if errors.Is(err, fs.ErrNotExist) {
		return // the power went before Open made it
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if path.Ext(e.Name()) != ".json" {
			continue
		}
		b, err := vfs.ReadFile(fsys, path.Join(root, hoursDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var hs hourState
		if err := json.Unmarshal(b, &hs); err != nil {
			t.Fatalf("hours state %s: %v: %q", e.Name(), err, b)
		}
		if !hs.AnyClosed {
			continue
		}
		for h := base; h.Before(hs.NextHour); h = h.Add(time.Hour) {
			marker := path.Join(root, hourDir(hs.Topic, h.Unix()), successFile)
			if _, err := fsys.Stat(marker); err != nil {
				t.Errorf("hours state of %s: closed before %v, but %s: %v", hs.Topic, hs.NextHour, marker, err)
			}
		}
	}
}

// A distributed target's staging directory on another file system than
// the operating system's (Config.FS): files are uploaded from it, and a
// checkpoint a crash left pending between two uploads is rolled forward
// from it at the restart.
func TestRemoteStagingOnFS(t *testing.T) {
	input := crashInput()
	m := vfs.NewStrictMem()
	storeRoot := t.TempDir()
	cfg := remoteConfig(t, JSONLines, storeRoot, "/staging")
	cfg.FS = m
	crashing, f := crashShape.start(cfg, input)
	crashing.hook = crashAt(pointRenamed, 1)
	s := openSink(t, crashing)
	if _, err := f.run(t.Context(), s); !errors.Is(err, errCrash) {
		t.Fatalf("the feed did not reach the first upload: %v", err)
	}
	s.crash()
	restart, f := replayShape.start(cfg, input)
	s = openSink(t, restart)
	if _, err := f.run(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, storeRoot, input)
	checkNoTempsIn(t, m, "/staging")
}
