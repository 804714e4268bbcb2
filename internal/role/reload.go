package role

import (
	"context"
	"fmt"
	"hash/fnv"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/process"
	"github.com/eventlogging/eventlogging/internal/schema"
	"github.com/eventlogging/eventlogging/internal/schemarepo"
)

// watchInterval is how often --watch looks at the files.
const watchInterval = 2 * time.Second

// Reloader applies a reload to a running role: on SIGHUP, and on a change
// of the files when watching. It reads and checks everything first — the
// configuration file (for log.level), the stream configuration, the schema
// folder — and applies nothing when any of them is broken: the old
// configuration stays in force and the reason is logged. Applying swaps
// the stream configuration in place, registers the schema folder
// (standalone) and drops what the schema caches remember as unknown. No
// consumer group is left and nothing in flight is dropped: the roles keep
// running; only lookups made after the reload see the new configuration.
type Reloader struct {
	log         *slog.Logger
	level       *slog.LevelVar
	hup         <-chan os.Signal
	configPath  string
	streamsFile string
	// schemasDir is checked and applied only by roles that read the folder
	// (no registry configured, or standalone's import).
	schemasDir string
	watch      bool

	mu        sync.Mutex
	resolvers []*schema.Resolver
	streams   []*process.Streams
	importer  func(ctx context.Context, dir string) error
	applied   int // reloads applied, for tests and logs
}

// ReloadConfig is how a process reloads: what main hands its roles.
type ReloadConfig struct {
	// ConfigPath is the configuration file, read again for log.level; ""
	// for none.
	ConfigPath string
	// Level is the logger's level, set from log.level; nil: not changed.
	Level *slog.LevelVar
	// HUP delivers SIGHUP; nil: no signal reloads.
	HUP <-chan os.Signal
	// Watch reloads when the files change too.
	Watch bool
	// SkipSchemas leaves the schema folder alone (the sinks look a schema
	// up in it on every miss).
	SkipSchemas bool
}

// NewReloader returns the reloader of a role started with configuration
// c. It sets the log level from c.
func NewReloader(c config.Config, rc ReloadConfig, log *slog.Logger) *Reloader {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Reloader{log: log.With("component", "reload"), level: rc.Level, hup: rc.HUP, configPath: rc.ConfigPath, streamsFile: c.Process.StreamsFile, watch: rc.Watch}
	if c.Registry.URL == "" && !rc.SkipSchemas {
		r.schemasDir = c.Process.SchemasDir
	}
	if lvl, err := c.Log.SlogLevel(); err == nil && c.Log.Level != "" && r.level != nil {
		r.level.Set(lvl)
	}
	return r
}

// addResolver registers a schema cache to clear on reload; nil r is a no-op.
func (r *Reloader) addResolver(res *schema.Resolver) {
	if r == nil || res == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resolvers = append(r.resolvers, res)
}

// addStreams registers a stream configuration to replace on reload.
func (r *Reloader) addStreams(st *process.Streams) {
	if r == nil || st == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.streams = append(r.streams, st)
}

// setImporter makes a reload register the schema folder in the registry
// (standalone), after checking it.
func (r *Reloader) setImporter(dir string, imp func(ctx context.Context, dir string) error) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.schemasDir, r.importer = dir, imp
}

// Run reloads on every SIGHUP (and, when watching, when a file changes)
// until ctx is done. It never fails: a refused reload is logged.
func (r *Reloader) Run(ctx context.Context) error {
	if r == nil {
		<-ctx.Done()
		return nil
	}
	var tick <-chan time.Time
	var last uint64
	if r.watch {
		t := time.NewTicker(watchInterval)
		defer t.Stop()
		tick = t.C
		last = r.fingerprint()
		r.log.Info("watching for changes", "config", r.configPath, "streams", r.streamsFile, "schemas", r.schemasDir)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.hup:
			r.log.Info("SIGHUP: reloading")
			_ = r.Reload(ctx)
		case <-tick:
			if fp := r.fingerprint(); fp != last {
				last = fp
				r.log.Info("files changed: reloading")
				_ = r.Reload(ctx)
			}
		}
	}
}

// Reload checks and applies the files now; the error says why a reload
// was refused (it is also logged).
func (r *Reloader) Reload(ctx context.Context) error {
	err := r.reload(ctx)
	if err != nil {
		r.log.Error("reload refused, the previous configuration stays in force", "err", err)
	}
	return err
}

func (r *Reloader) reload(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	// 1. Read and check everything.
	var level *slog.Level
	if r.configPath != "" {
		c, err := config.Load(r.configPath)
		if err != nil {
			return err
		}
		if c.Log.Level != "" {
			l, _ := c.Log.SlogLevel() // checked by Load
			level = &l
		}
	}
	var streams *process.Streams
	if r.streamsFile != "" {
		st, err := process.LoadStreamsFile(r.streamsFile)
		if err != nil {
			return err
		}
		streams = st
	}
	versions := 0
	if r.schemasDir != "" {
		n, err := checkSchemaFolder(r.schemasDir)
		if err != nil {
			return err
		}
		versions = n
	}
	// 2. Apply. The registry import first: processors that resolve
	// through it see the new versions before their caches are cleared.
	if r.importer != nil {
		if err := r.importer(ctx, r.schemasDir); err != nil {
			return err
		}
	}
	if streams != nil {
		for _, st := range r.streams {
			st.Replace(streams)
		}
	}
	forgotten := 0
	for _, res := range r.resolvers {
		forgotten += res.Forget("")
	}
	if level != nil && r.level != nil {
		r.level.Set(*level)
	}
	r.applied++
	r.log.Info("reloaded", "schema_versions", versions, "streams", len(streams.List()), "unknown_schemas_forgotten", forgotten, "log_level", r.level.Level().String())
	return nil
}

// checkSchemaFolder parses and compiles every schema of the folder, so a
// broken file refuses the whole reload; it returns how many there are.
func checkSchemaFolder(dir string) (int, error) {
	repo, _, err := schemarepo.Load(dir)
	if err != nil {
		return 0, fmt.Errorf("schema folder %s: %w", dir, err)
	}
	n := 0
	for _, subject := range schemarepo.Subjects(repo) {
		for _, v := range repo[subject] {
			doc, err := schema.ParseDocument(v.Raw)
			if err == nil {
				id := schema.ID{Name: v.Subject, Revision: v.Revision}
				_, err = schema.Compile(id, doc)
			}
			if err != nil {
				return 0, fmt.Errorf("schema folder %s: %s: %w", dir, v.Path, err)
			}
			n++
		}
	}
	return n, nil
}

// WarnSkipped logs every file of the schema folder that is not loaded, when
// the role reads the folder itself (no registry configured).
func WarnSkipped(c config.Config, log *slog.Logger) {
	if c.Registry.URL != "" {
		return
	}
	f, err := schema.ScanFolder(c.Process.SchemasDir)
	if err != nil {
		return // the processing function reports an unreadable folder
	}
	for _, sk := range f.Skipped {
		log.Warn("schema folder: file not loaded", "file", filepath.Join(c.Process.SchemasDir, filepath.FromSlash(sk.Path)), "reason", sk.Reason)
	}
}

// fingerprint summarises the watched files (names, sizes, modification
// times); a change of any changes it.
func (r *Reloader) fingerprint() uint64 {
	h := fnv.New64a()
	stat := func(p string) {
		if fi, err := os.Stat(p); err == nil {
			fmt.Fprintf(h, "%s\x00%d\x00%d\x00", p, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	if r.configPath != "" {
		stat(r.configPath)
	}
	if r.streamsFile != "" {
		stat(r.streamsFile)
	}
	if r.schemasDir != "" {
		_ = filepath.WalkDir(r.schemasDir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				stat(p)
			}
			return nil
		})
	}
	return h.Sum64()
}
