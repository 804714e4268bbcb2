package dashboard

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"time"
)

// assets holds the templates and the files served under /static/.
//
//go:embed assets/templates.html assets/static
var assets embed.FS

// staticFile is one embedded file served under /static/.
type staticFile struct {
	body  []byte
	ctype string
	etag  string // quoted, from the content hash
	// version is a short content hash appended to links (?v=) so a new
	// binary's assets are never served from a stale cache.
	version string
}

// loadStatic reads the embedded static files and hashes them.
func loadStatic() (map[string]staticFile, error) {
	entries, err := fs.ReadDir(assets, "assets/static")
	if err != nil {
		return nil, fmt.Errorf("read embedded assets: %w", err)
	}
	files := make(map[string]staticFile, len(entries))
	for _, e := range entries {
		body, err := fs.ReadFile(assets, "assets/static/"+e.Name())
		if err != nil {
			return nil, fmt.Errorf("read embedded asset: %w", err)
		}
		sum := sha256.Sum256(body)
		v := hex.EncodeToString(sum[:6])
		ctype := mime.TypeByExtension(path.Ext(e.Name()))
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		files[e.Name()] = staticFile{body: body, ctype: ctype, etag: `"` + v + `"`, version: v}
	}
	return files, nil
}

// serveStatic serves an embedded file. Links carry the content hash, so
// a versioned URL may be cached for long; others are revalidated by ETag.
func (h *Handler) serveStatic(rw http.ResponseWriter, r *http.Request) {
	f, ok := h.static[r.PathValue("file")]
	if !ok {
		http.NotFound(rw, r)
		return
	}
	hd := rw.Header()
	hd.Set("Content-Type", f.ctype)
	hd.Set("ETag", f.etag)
	if r.URL.Query().Get("v") == f.version {
		hd.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		hd.Set("Cache-Control", "no-cache")
	}
	http.ServeContent(rw, r, "", time.Time{}, bytes.NewReader(f.body))
}

// staticURL is the link to an embedded file, with its content hash.
func (h *Handler) staticURL(name string) (string, error) {
	f, ok := h.static[name]
	if !ok {
		return "", fmt.Errorf("no static file %q", name)
	}
	return h.prefix + "/static/" + name + "?v=" + f.version, nil
}

// parseTemplates parses the embedded page templates with their functions.
func (h *Handler) parseTemplates() (*template.Template, error) {
	funcs := template.FuncMap{
		"static":       h.staticURL,
		"ago":          h.ago,
		"utc":          formatTime,
		"rate":         formatRate,
		"ratio":        formatRatio,
		"spark":        sparkPoints,
		"sparkMax":     sparkMax,
		"seg":          pathSegment,
		"revisionText": revisionText,
		"versionText":  versionText,
		"replayText":   replayText,
	}
	t, err := template.New("dashboard").Funcs(funcs).ParseFS(assets, "assets/templates.html")
	if err != nil {
		return nil, fmt.Errorf("parse templates: %w", err)
	}
	return t, nil
}
