package filesink

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/testsupport"
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
// crash followed by Open, StartOffsets and a replay of the same input
// publishes every record exactly once, and no temp file is ever visible.
func TestCrashAtEveryStep(t *testing.T) {
	for _, format := range []Format{JSONLines, Parquet} {
		for _, point := range []string{pointWritten, pointSynced, pointManifest, pointRenamed, pointPublished} {
			for _, n := range []int{1, 4} {
				t.Run(fmt.Sprintf("%s/%s#%d", format, point, n), func(t *testing.T) {
					testCrash(t, format, point, n)
				})
			}
		}
	}
}

func testCrash(t *testing.T, format Format, point string, n int) {
	root := t.TempDir()
	// Two topics, three partitions, three hours; small files so that
	// checkpoints happen all along (several files per checkpoint when a
	// partition spans an hour boundary).
	input := spread([]string{"eventlogging_Test", "eventlogging_Other"}, 3, 200, 3)
	cfg := Config{Root: root, Format: format, MaxFileBytes: 3 << 10, Schemas: testSchemas(t)}
	if format == Parquet {
		cfg.MaxFileBytes = 12 << 10
	}
	crashing := cfg
	crashing.hook = crashAt(point, n)
	s := openSink(t, crashing)
	_, err := newFeeder(input, 60).run(t.Context(), s)
	if err == nil {
		err = s.Close()
	}
	if !errors.Is(err, errCrash) {
		t.Fatalf("the run did not reach crash point %s #%d: %v", point, n, err)
	}
	s.crash()
	readPublished(t, root) // no temp file visible in a partition

	// Restart (twice: recovery itself must be idempotent).
	s = openSink(t, cfg)
	s.crash()
	s = openSink(t, cfg)
	feedAndClose(t, s, input, 60)
	checkExactlyOnce(t, root, input)
	checkNoTemps(t, root)
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
		man, err := readManifest(m)
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
