package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/eventlogging/eventlogging/internal/kafka/schemalog"
	"github.com/eventlogging/eventlogging/internal/schema"
)

// ImportStats counts what [Registry.ImportDir] did.
type ImportStats struct {
	// Registered counts the schema versions registered.
	Registered int
	// Unchanged counts the schemas that were registered already.
	Unchanged int
	// Skipped lists the files of the folder that were not loaded, and
	// why (schema.ScanFolder).
	Skipped []schema.Skipped
}

// ImportDir registers the schemas of a schema folder, as IMPORT mode
// would (explicit ids, no compatibility check), in any mode but READONLY:
//
//   - every legacy schema <dir>/<Name>/<revision>.json|yaml|yml (those
//     [schema.DirSource.List] lists) as subject Name with global id
//     revision, versions in revision order;
//   - every Event Platform schema <dir>/jsonschema/<title>/<version>.json|
//     yaml|yml as subject title with metadata {"properties": {"version":
//     version}} and an allocated id, versions in version order.
//
// YAML documents are registered as JSON text. It is idempotent: schemas
// already registered (even if soft-deleted since) are counted as
// Unchanged. An id used by another schema, or a version registered with
// other content, is an error naming the file.
//
// Only the leader writes: ImportDir first waits, until ctx is done, for
// the log's initial replay and for this instance to lead (so every
// instance may call it; the one elected imports). Run must be running. If
// ctx ends first, or leadership moves during the import, the error wraps
// schemalog.ErrNotLeader; calling again resumes where it stopped.
func (r *Registry) ImportDir(ctx context.Context, dir string) (ImportStats, error) {
	var stats ImportStats
	if err := r.cfg.Log.WaitReady(ctx); err != nil {
		return stats, fmt.Errorf("registry: import %s: waiting for the schema log replay: %w", dir, err)
	}
	r.ready.Store(true)
	if err := r.waitLeader(ctx); err != nil {
		return stats, fmt.Errorf("registry: import %s: %w", dir, err)
	}
	folder, err := schema.ScanFolder(dir)
	if err != nil {
		return stats, fmt.Errorf("registry: import: %w", err)
	}
	stats.Skipped = folder.Skipped
	for _, ff := range folder.Legacy {
		file := filepath.Join(dir, filepath.FromSlash(ff.Path))
		raw, err := os.ReadFile(file)
		if err != nil {
			return stats, fmt.Errorf("registry: import: %w", err)
		}
		text, err := jsonText(raw)
		if err != nil {
			return stats, fmt.Errorf("registry: import %s: %w", file, err)
		}
		req := &schemaRequest{Schema: &text, SchemaType: typeJSON, ID: ff.ID.Revision}
		if err := r.importOne(ctx, &stats, file, ff.ID.Name, req); err != nil {
			return stats, err
		}
	}
	for _, ff := range folder.Platform {
		f := eventPlatformFile{path: filepath.Join(dir, filepath.FromSlash(ff.Path)), title: ff.Title, version: ff.Version}
		raw, err := os.ReadFile(f.path)
		if err != nil {
			return stats, fmt.Errorf("registry: import: %w", err)
		}
		text, err := jsonText(raw)
		if err != nil {
			return stats, fmt.Errorf("registry: import %s: %w", f.path, err)
		}
		if err := r.checkEventPlatformVersion(f, text); err != nil {
			return stats, err
		}
		req := &schemaRequest{Schema: &text, SchemaType: typeJSON, Metadata: &metadata{Properties: map[string]string{"version": f.version}}}
		if err := r.importOne(ctx, &stats, f.path, f.title, req); err != nil {
			return stats, err
		}
	}
	r.log.Info("schema folder imported", "dir", dir, "registered", stats.Registered, "unchanged", stats.Unchanged)
	return stats, nil
}

// leaderPoll is how often waitLeader asks the log who leads.
const leaderPoll = 200 * time.Millisecond

// waitLeader returns once this instance leads, or an error wrapping
// schemalog.ErrNotLeader and ctx's error.
func (r *Registry) waitLeader(ctx context.Context) error {
	tick := time.NewTicker(leaderPoll)
	defer tick.Stop()
	for {
		if self, _ := r.cfg.Log.Leader(); self {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", schemalog.ErrNotLeader, ctx.Err())
		case <-tick.C:
		}
	}
}

func (r *Registry) importOne(ctx context.Context, stats *ImportStats, file, subject string, req *schemaRequest) error {
	_, created, err := r.register(ctx, subject, req, registerOpts{importing: true})
	var ae *apiError
	if errors.As(err, &ae) && ae.Code == codeNotPermitted && req.ID > 0 {
		// The id (the legacy revision) is registered with other content:
		// the file was edited after it was registered.
		return fmt.Errorf("registry: import %s as subject %s: %w: revision %d is registered with other content, "+
			"and a registered version never changes; give the edited schema a new version (a new revision file, "+
			"e.g. the next free id), or compare them with `eventlogging schema get %s` (to start over in standalone, "+
			"stop it and remove its data directory)", file, subject, err, req.ID, subject)
	}
	if err != nil {
		return fmt.Errorf("registry: import %s as subject %s: %w", file, subject, err)
	}
	if created {
		stats.Registered++
	} else {
		stats.Unchanged++
	}
	return nil
}

// checkEventPlatformVersion refuses a file whose version is registered
// with other content.
func (r *Registry) checkEventPlatformVersion(f eventPlatformFile, text string) error {
	canon, err := canonical(typeJSON, text)
	if err != nil {
		return fmt.Errorf("registry: import %s: %w", f.path, errInvalidSchema("%v", err))
	}
	_, keyNoMeta := contentKeys(typeJSON, canon, nil, nil, nil)
	r.st.mu.RLock()
	defer r.st.mu.RUnlock()
	subj := r.st.subjects[f.title]
	if subj == nil {
		return nil
	}
	for _, n := range subj.order {
		v := subj.versions[n]
		e := r.st.ids[v.id]
		if e.meta != nil && e.meta.Properties["version"] == f.version && e.keyNoMeta != keyNoMeta {
			return fmt.Errorf("registry: import %s: subject %s has version %s (version %d, id %d) with other content: "+
				"a registered version never changes; give the edited schema a new version (e.g. the next x.y.z), "+
				"or compare them with `eventlogging schema diff %s` (to start over in standalone, stop it and remove its data directory)",
				f.path, f.title, f.version, v.num, v.id, f.title)
		}
	}
	return nil
}

// SchemaText returns a schema file's content as the JSON text the registry
// registers: JSON files as written, YAML converted (keys sorted). Clients
// pushing a schema folder use it so that their registrations match an
// import of the same folder.
func SchemaText(raw []byte) (string, error) { return jsonText(raw) }

// jsonText returns a schema document as JSON text: JSON files as written,
// YAML converted (keys sorted).
func jsonText(raw []byte) (string, error) {
	trimmed := bytes.TrimSpace(bytes.TrimPrefix(raw, []byte("\xef\xbb\xbf")))
	doc, err := schema.ParseDocument(trimmed)
	if err != nil {
		return "", err
	}
	if json.Valid(trimmed) {
		return string(trimmed), nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return "", fmt.Errorf("%w: %w", schema.ErrInvalidSchema, err)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// eventPlatformFile is one Event Platform schema file of a folder.
type eventPlatformFile struct {
	path, title, version string
}
