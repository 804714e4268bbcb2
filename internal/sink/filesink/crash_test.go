package filesink

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/testsupport"
	"github.com/eventlogging/eventlogging/internal/vfs"
)

var errCrash = errors.New("simulated crash")

// crashAt returns a hook that fails at the n-th time point is reached.
func crashAt(point string, n int) func(string) error {
	seen := 0
	return func(p string) error {
		if p != point {
			return nil
		}
		seen++
		if seen == n {
			return errCrash
		}
		return nil
	}
}

// At every step of a checkpoint, and while temp files are only written, a
// crash during the feed (after checkpoints were published) followed by
// Open (twice: recovery itself must be idempotent), StartOffsets and a
// replay cutting files at other offsets publishes every record exactly
// once, and no temp file is ever visible.
func TestCrashAtEveryStep(t *testing.T) {
	input := crashInput()
	for _, format := range []Format{JSONLines, Parquet} {
		t.Run(string(format), func(t *testing.T) {
			proto := Config{Format: format, Schemas: testSchemas(t)}
			for _, c := range crashPoints(t, input, func(t *testing.T) Config {
				cfg := proto
				cfg.Root = t.TempDir()
				return cfg
			}) {
				t.Run(c.String(), func(t *testing.T) {
					cfg := proto
					cfg.Root = t.TempDir()
					testCrash(t, input, c, cfg, cfg)
				})
			}
		})
	}
}

// On a distributed target (objstore.Dir), a crash at every step of the
// two-phase publish, followed by Open (twice), StartOffsets and a replay
// as in TestCrashAtEveryStep, publishes every record exactly once: with
// the staging directory intact (pending checkpoints are rolled forward)
// and with it lost (those not fully uploaded are rolled back, their
// uploaded files deleted).
func TestCrashAtEveryStepRemote(t *testing.T) {
	input := crashInput()
	for _, format := range []Format{JSONLines, Parquet} {
		t.Run(string(format), func(t *testing.T) {
			for _, c := range crashPoints(t, input, func(t *testing.T) Config {
				return remoteConfig(t, format, t.TempDir(), t.TempDir())
			}) {
				for _, lose := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/staging-lost=%v", c, lose), func(t *testing.T) {
						cfg := remoteConfig(t, format, t.TempDir(), t.TempDir())
						restart := cfg
						if lose {
							restart.Staging = t.TempDir()
						}
						testCrash(t, input, c, cfg, restart)
					})
				}
			}
		})
	}
}

// The two shapes of a crash test's runs. The replay after a crash cuts
// files at other offsets than the run that crashed (another batch size,
// other limits, rotation by age), so records published twice show as
// duplicates: a replay of the same shape would write the files of a
// checkpoint published before its manifest again under the same names,
// replacing them, and hide the double publish.
var (
	// crashShape checkpoints all along the feed on age (its clock moves a
	// second per batch), for JSON lines too, whose size counts only what
	// the compressor emitted: nothing before 64 KiB of input.
	crashShape = runShape{batch: 60, maxFileBytes: map[Format]int64{JSONLines: 3 << 10, Parquet: 12 << 10}, maxFileAge: 8 * time.Second}
	// replayShape rotates on size only: for JSON lines once a file's
	// compressor has emitted its first block (after 64 KiB of input).
	replayShape = runShape{batch: 97, maxFileBytes: map[Format]int64{JSONLines: 5 << 10, Parquet: 30 << 10}}
)

// runShape is how a run feeds a sink and when the sink rotates its files.
type runShape struct {
	batch        int
	maxFileBytes map[Format]int64
	maxFileAge   time.Duration // 0: the default, on the wall clock
}

// start returns cfg with the shape's limits, and a feeder of input in the
// shape's batches. With maxFileAge, cfg is on a test clock that the
// feeder moves a second per batch.
func (r runShape) start(cfg Config, input []kafka.Record) (Config, *feeder) {
	cfg.MaxFileBytes = r.maxFileBytes[cfg.Format]
	f := newFeeder(input, r.batch)
	if r.maxFileAge > 0 {
		clk := testsupport.NewClock(base)
		cfg.MaxFileAge, cfg.Now = r.maxFileAge, clk.Now
		f.tick = func() { clk.Add(time.Second) }
	}
	return cfg, f
}

// crashInput is two topics of three partitions, 300 records each received
// over two hours, every third record after the first hour dated an hour
// back (late): most checkpoints publish files of two hours, so a crash
// can stop one between its files.
func crashInput() []kafka.Record { return lateInput(3) }

// lateInput is crashInput with partitions partitions per topic.
func lateInput(partitions int32) []kafka.Record {
	const n, hours = 300, 2
	step := hours * time.Hour / n
	var out []kafka.Record
	for _, topic := range []string{"eventlogging_Test", "eventlogging_Other"} {
		for p := range partitions {
			for i := range n {
				dt := base.Add(time.Duration(i) * step)
				if i%3 == 2 && dt.Sub(base) >= time.Hour {
					dt = dt.Add(-time.Hour)
				}
				out = append(out, testsupport.CapsuleRecord(topic, p, int64(i), dt))
			}
		}
	}
	return out
}

// crash is where a crash test stops the first run: the n-th time the
// sink reaches point.
type crash struct {
	point string
	n     int
}

func (c crash) String() string { return fmt.Sprintf("%s#%d", c.point, c.n) }

// crashPoints runs both shapes over input without crashing, each in a
// sink of newConfig, checks that they publish files under different names
// and returns the crashes to test: at each point an early and a later
// one, all during the feed (not at Close) and after at least one
// checkpoint was published. A crash after a rename (an upload) is taken
// between two files of one checkpoint, so that some of its files are
// published and others not. The runs are deterministic: a crashing run
// reaches the same points in the same order.
func crashPoints(t *testing.T, input []kafka.Record, newConfig func(*testing.T) Config) []crash {
	t.Helper()
	fed, crashFiles := traceRun(t, crashShape, newConfig(t), input)
	_, replayFiles := traceRun(t, replayShape, newConfig(t), input)
	shared := 0
	for _, f := range replayFiles {
		if slices.Contains(crashFiles, f) {
			shared++
		}
	}
	if shared*10 > len(crashFiles) {
		t.Fatalf("the replay shape publishes %d of the crash shape's %d files under the same names: a double publish would hide", shared, len(crashFiles))
	}
	var out []crash
	for _, point := range []string{pointWritten, pointSynced, pointManifest, pointRenamed, pointPublished} {
		var candidates []crash
		n, published := 0, 0
		for i, p := range fed {
			if p == point {
				n++
				mid := i+1 < len(fed) && fed[i+1] == pointRenamed
				if published > 0 && (point != pointRenamed || mid) {
					candidates = append(candidates, crash{point, n})
				}
			}
			if p == pointPublished {
				published++
			}
		}
		if len(candidates) == 0 {
			t.Fatalf("no %s during the feed after a published checkpoint: the crash tests would test nothing", point)
		}
		out = append(out, candidates[0])
		if later := candidates[len(candidates)/2]; later != candidates[0] {
			out = append(out, later)
		}
	}
	t.Logf("the crash shape publishes %d files, the replay shape %d, %d under the same name; crashes at %v", len(crashFiles), len(replayFiles), shared, out)
	return out
}

// traceRun feeds input in shape to a sink of cfg and closes it, and
// returns the crash points reached during the feed, in order, and the
// files published. It fails the test unless checkpoints were published
// during the feed.
func traceRun(t *testing.T, shape runShape, cfg Config, input []kafka.Record) (fed []string, files []string) {
	t.Helper()
	cfg, f := shape.start(cfg, input)
	cfg.hook = func(p string) error {
		fed = append(fed, p)
		return nil
	}
	s := openSink(t, cfg)
	if _, err := f.run(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	fed = slices.Clip(fed)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(fed, pointPublished) {
		t.Fatalf("no checkpoint published during the feed (batches of %d, MaxFileBytes %d)", shape.batch, cfg.MaxFileBytes)
	}
	return fed, readPublished(t, publishedRoot(cfg)).files
}

// publishedRoot returns the directory where cfg's files are published:
// the root, or the store's directory (remoteConfig).
func publishedRoot(cfg Config) string {
	if dir, ok := strings.CutPrefix(cfg.Root, "test://"); ok {
		return dir
	}
	return cfg.Root
}

// testCrash runs crashShape over input in a sink of cfg until it crashes
// at c and checks that files were published before; then it opens a sink
// of restart, replays input in replayShape and checks that every record
// is published exactly once.
func testCrash(t *testing.T, input []kafka.Record, c crash, cfg, restart Config) {
	crashing, f := crashShape.start(cfg, input)
	crashing.hook = crashAt(c.point, c.n)
	s := openSink(t, crashing)
	if _, err := f.run(t.Context(), s); !errors.Is(err, errCrash) {
		t.Fatalf("the feed did not reach crash point %s: %v", c, err)
	}
	s.crash()
	// Nothing partial is visible; checkpoints were published.
	if p := readPublished(t, publishedRoot(cfg)); len(p.files) == 0 {
		t.Fatalf("no file published during the feed before the crash at %s", c)
	}

	restart, f = replayShape.start(restart, input)
	s = openSink(t, restart)
	s.crash()
	s = openSink(t, restart)
	if _, err := f.run(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, publishedRoot(cfg), input)
	if restart.Store != nil {
		checkNoTemps(t, restart.Staging)
	} else {
		checkNoTemps(t, restart.Root)
	}
}

// Recovery finishes renames that a crash interrupted: pretend the process
// died right after the manifest was written and look before replaying.
func TestRecoveryFinishesRenames(t *testing.T) {
	root := t.TempDir()
	input := spread([]string{"t"}, 1, 100, 2)
	s := openSink(t, Config{Root: root, Format: JSONLines, hook: crashAt(pointRenamed, 1)})
	feedAll(t, s, input, 100)
	if err := s.Close(); !errors.Is(err, errCrash) {
		t.Fatalf("Close: %v", err)
	}
	s.crash()
	if got := len(readPublished(t, root).files); got != 1 {
		t.Fatalf("%d files published before the crash, want 1 of 2", got)
	}
	s = openSink(t, Config{Root: root, Format: JSONLines})
	defer s.Close()
	checkExactlyOnce(t, root, input) // without consuming anything again
	offs, err := s.StartOffsets(t.Context(), map[string][]int32{"t": {0}})
	if err != nil || offs["t"][0] != 100 {
		t.Fatalf("start offset %v (%v), want 100", offs, err)
	}
}

// The kill -9 test: a child process (this test binary, re-executed) writes
// in a loop with frequent checkpoints; it is killed three times at random
// moments, then a last run completes the input. Every record is published
// exactly once.
const childEnv = "FILESINK_KILL_CHILD_ROOT"

func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	root := t.TempDir()
	input := killInput()
	for round := range 3 {
		// Watch the manifests: kill once the child has published a few
		// checkpoints in this round, at varying moments.
		prev := manifestBytes(t, root)
		progress := 0
		cmd, out := testsupport.StartChild(t, "TestKill9Child", childEnv+"="+root)
		target := 2 + rand.IntN(12) // checkpoints to let pass before the kill
		testsupport.WaitChild(t, cmd, out, 60*time.Second, 2*time.Millisecond, fmt.Sprintf("round %d: the child made no progress", round), func() bool {
			now := manifestBytes(t, root)
			progress += changed(prev, now)
			prev = now
			return progress >= target
		})
		testsupport.KillChild(t, cmd, fmt.Sprintf("round %d", round), out)
		readPublished(t, root) // never a temp file in a partition
		temps, pending := inProgress(t, root)
		t.Logf("round %d: killed after %d checkpoints; %d temp files left, %d of them named by a manifest (renames to finish)", round, progress, temps, pending)
	}
	s := openSink(t, Config{Root: root, Format: JSONLines})
	feedAndClose(t, s, input, 500)
	p := checkExactlyOnce(t, root, input)
	checkNoTemps(t, root)
	t.Logf("%d records in %d files, exactly once after 3 kills", len(p.byUUID), len(p.files))
}

// TestKill9Child is the child of TestKill9; it does nothing unless run by it.
func TestKill9Child(t *testing.T) {
	root := os.Getenv(childEnv)
	if root == "" {
		t.Skip("child process of TestKill9")
	}
	s, err := Open(Config{Root: root, Format: JSONLines, MaxFileBytes: 8 << 10, Logger: testsupport.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newFeeder(killInput(), 500).run(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	s.Close()
}

// inProgress counts the temp files under root and those a manifest names.
func inProgress(t *testing.T, root string) (temps, pending int) {
	t.Helper()
	named := map[string]bool{}
	matches, _ := filepath.Glob(filepath.Join(root, manifestDir, "*", "*.json"))
	for _, m := range matches {
		man, err := readManifest(vfs.OS, m)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range man.Files {
			named[filepath.Join(root, filepath.FromSlash(e.Tmp))] = true
		}
	}
	err := filepath.WalkDir(filepath.Join(root, inprogressDir), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			temps++
			if named[p] {
				pending++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return temps, pending
}

// killInput is big enough that a child never finishes before it is killed.
func killInput() []kafka.Record {
	return spread([]string{"eventlogging_Test", "eventlogging_Other"}, 3, 8000, 4)
}

// manifestBytes snapshots the manifests' contents.
func manifestBytes(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	matches, _ := filepath.Glob(filepath.Join(root, manifestDir, "*", "*.json"))
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err == nil {
			out[m] = string(b)
		}
	}
	return out
}

// changed counts the manifests that differ between two snapshots: at least
// that many checkpoints happened in between.
func changed(before, after map[string]string) int {
	n := 0
	for k, v := range after {
		if before[k] != v {
			n++
		}
	}
	return n
}
