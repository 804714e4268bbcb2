package role

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/process"
	"github.com/eventlogging/eventlogging/internal/schema"
	"github.com/eventlogging/eventlogging/internal/testsupport"
)

var writeFile = testsupport.WriteFile

// TestReloaderChecksBeforeApplying: a reload applies the stream
// configuration, log.level and the schema folder together, and a broken
// file of any of them refuses the whole reload, naming the file.
func TestReloaderChecksBeforeApplying(t *testing.T) {
	dir := t.TempDir()
	schemas, streamsFile, cfgFile := filepath.Join(dir, "schemas"), filepath.Join(dir, "streams.yaml"), filepath.Join(dir, "config.yaml")
	writeFile(t, filepath.Join(schemas, "Foo", "1.json"), `{"type":"object","properties":{"a":{"type":"string"}}}`)
	writeFile(t, streamsFile, "streams:\n  - name: one\n")
	writeFile(t, cfgFile, "log:\n  level: info\n")
	c, err := config.Load(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	c.Process.SchemasDir, c.Process.StreamsFile = schemas, streamsFile
	level := new(slog.LevelVar)
	rl := NewReloader(c, ReloadConfig{ConfigPath: cfgFile, Level: level}, slog.New(slog.DiscardHandler))
	st, err := process.LoadStreamsFile(streamsFile)
	if err != nil {
		t.Fatal(err)
	}
	rl.addStreams(st)
	res := schema.NewResolver(schema.NewDirSource(schemas), schema.ResolverConfig{NegativeTTL: time.Hour})
	rl.addResolver(res)
	ctx := t.Context()
	bar := schema.ID{Name: "Bar", Revision: 2}
	if _, err := res.Resolve(ctx, bar); !errors.Is(err, schema.ErrNotFound) {
		t.Fatal(err)
	}
	names := func() string {
		var out []string
		for _, s := range st.List() {
			out = append(out, s.Name)
		}
		return strings.Join(out, ",")
	}

	// A good reload: new stream, new schema, new level.
	writeFile(t, streamsFile, "streams:\n  - name: one\n  - name: two\n")
	writeFile(t, filepath.Join(schemas, "Bar", "2.json"), `{"type":"object"}`)
	writeFile(t, cfgFile, "log:\n  level: debug\n")
	if err := rl.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if names() != "one,two" || level.Level() != slog.LevelDebug {
		t.Fatalf("after a reload: streams %s, level %s", names(), level.Level())
	}
	if _, err := res.Resolve(ctx, bar); err != nil {
		t.Fatalf("a schema added before the reload: %v", err)
	}

	// Each broken file refuses everything; nothing of the reload applies.
	writeFile(t, cfgFile, "log:\n  level: warn\n")
	writeFile(t, streamsFile, "streams:\n  - name: one\n  - name: three\n")
	for _, broken := range []struct{ path, content, want string }{
		{filepath.Join(schemas, "Baz", "3.json"), `{"type": `, "Baz/3.json"},
		{filepath.Join(schemas, "Qux", "4.json"), `{"type": "no-such-type"}`, "Qux/4.json"},
		{streamsFile, "streams:\n  - name: one\n    sample_rate: 7\n", "sample_rate"},
		{cfgFile, "log:\n  level: loud\n", "log.level"},
	} {
		saved, _ := os.ReadFile(broken.path)
		writeFile(t, broken.path, broken.content)
		err := rl.Reload(ctx)
		if err == nil || !strings.Contains(err.Error(), broken.want) {
			t.Errorf("reload with broken %s: %v, want an error naming %q", broken.path, err, broken.want)
		}
		if names() != "one,two" || level.Level() != slog.LevelDebug {
			t.Errorf("a refused reload applied something: streams %s, level %s", names(), level.Level())
		}
		if saved != nil {
			writeFile(t, broken.path, string(saved))
		} else {
			_ = os.RemoveAll(filepath.Dir(broken.path))
		}
	}
	if err := rl.Reload(ctx); err != nil || names() != "one,three" || level.Level() != slog.LevelWarn {
		t.Fatalf("reload once fixed: %v; streams %s, level %s", err, names(), level.Level())
	}
}

// TestReloaderRun: SIGHUP and, with watching, a changed file each trigger
// one reload.
func TestReloaderRun(t *testing.T) {
	dir := t.TempDir()
	streamsFile := filepath.Join(dir, "streams.yaml")
	writeFile(t, streamsFile, "streams:\n  - name: one\n")
	c := config.Default()
	c.Registry.URL = "http://registry.test" // the folder is not the role's
	c.Process.StreamsFile = streamsFile
	hup := make(chan os.Signal, 1)
	rl := NewReloader(c, ReloadConfig{Level: new(slog.LevelVar), HUP: hup, Watch: true}, slog.New(slog.DiscardHandler))
	st, err := process.LoadStreamsFile(streamsFile)
	if err != nil {
		t.Fatal(err)
	}
	rl.addStreams(st)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- rl.Run(ctx) }()
	applied := func() int {
		rl.mu.Lock()
		defer rl.mu.Unlock()
		return rl.applied
	}
	hup <- syscall.SIGHUP
	testsupport.WaitFor(t, 10*time.Second, "the SIGHUP reload", func() bool { return applied() == 1 })
	// A change of the file, seen by the watch (the size changes, so a
	// coarse modification time cannot hide it).
	writeFile(t, streamsFile, "streams:\n  - name: one\n  - name: watched\n")
	testsupport.WaitFor(t, 3*watchInterval+5*time.Second, "the watched reload", func() bool { return applied() == 2 })
	if _, ok := st.Lookup("watched"); !ok {
		t.Error("the watched change did not apply")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
