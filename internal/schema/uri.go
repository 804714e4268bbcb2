package schema

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// URISource fetches schema documents named by an Event Platform $schema URI
// path such as "/analytics/button_click/1.0.0". It returns an error wrapping
// [ErrNotFound] when there is no such document. Safe for concurrent use.
type URISource interface {
	FetchURI(ctx context.Context, path string) ([]byte, error)
}

// uriPath is the accepted shape of a $schema path: slash-separated segments
// of letters, digits, '_', '-' and '.', no empty, "." or ".." segment.
var uriPath = regexp.MustCompile(`^(?:/[A-Za-z0-9_.-]+){1,16}$`)

// Path reduces a $schema value ("/a/b/1.0.0", "a/b/1.0.0" or a full
// URL) to its canonical path "/a/b/1.0.0", or returns an error wrapping
// [ErrNotFound] for anything that cannot name a schema (so it can never
// escape a schema folder).
func Path(uri string) (string, error) {
	p := uri
	if strings.Contains(uri, "://") {
		u, err := url.Parse(uri)
		if err != nil {
			return "", fmt.Errorf("%w: $schema %q: %w", ErrNotFound, uri, err)
		}
		p = u.Path
	}
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	for _, ext := range extensions {
		p = strings.TrimSuffix(p, ext)
	}
	if len(p) > 512 || !uriPath.MatchString(p) {
		return "", fmt.Errorf("%w: $schema %q is not a schema path like /analytics/button_click/1.0.0", ErrNotFound, uri)
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "." || seg == ".." {
			return "", fmt.Errorf("%w: $schema %q: dot segments are not allowed", ErrNotFound, uri)
		}
	}
	return p, nil
}

// URIDir is the subfolder of a schema folder holding Event Platform schemas
// by $schema path (as in Wikimedia's schema repositories), apart from the
// legacy <Name>/<revision> files.
const URIDir = "jsonschema"

// FetchURI reads the schema of a $schema path from the folder, in the
// layouts [ScanFolder] reads: <dir>/jsonschema<path> (extensionless, then
// .json, .yaml, .yml), then, for a path ending in a version x.y.z, the
// same under <dir> itself.
func (d *DirSource) FetchURI(ctx context.Context, uri string) ([]byte, error) {
	p, err := Path(uri)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rel := filepath.FromSlash(p[1:])
	candidates := formsOf(filepath.Join(d.dir, URIDir, rel))
	if semver.MatchString(path.Base(p)) {
		candidates = append(candidates, formsOf(filepath.Join(d.dir, rel))...)
	}
	b, err := readFirst(candidates...)
	if errors.Is(err, errNoFile) {
		return nil, fmt.Errorf("%w: no file %s[.json|.yaml|.yml] in %s", ErrNotFound, filepath.Join(URIDir, rel), d.dir)
	}
	return b, err
}

// formsOf lists the files that may hold the schema at base, preferred
// first.
func formsOf(base string) []string {
	out := []string{base}
	for _, ext := range extensions {
		out = append(out, base+ext)
	}
	return out
}

// uriCache holds schemas resolved by URI, positive and negative.
type uriCache struct {
	mu       sync.RWMutex
	schemas  map[string]*Schema
	negative map[string]negativeEntry
}

// ResolveURI returns the compiled schema named by an Event Platform $schema
// URI. The source must implement [URISource]. Errors are those of
// [Resolver.Resolve]; unknown and invalid schemas are cached negatively for
// NegativeTTL. The schema's ID has the path as Name and Revision 0.
//
// Schemas are cached by their canonical path ([Path]) only: URIs that
// name one path in other ways (a full URL, another host, a query, an
// extension) share its entry, so clients cannot grow the cache beyond the
// schemas there are by varying the string. Such a URI is reduced to its
// path on each call; the canonical form is found at once.
func (r *Resolver) ResolveURI(ctx context.Context, uri string) (*Schema, error) {
	r.uriOnce.Do(func() {
		r.uris = &uriCache{schemas: map[string]*Schema{}, negative: map[string]negativeEntry{}}
	})
	c := r.uris
	c.mu.RLock()
	s, ok := c.schemas[uri]
	neg, negOK := c.negative[uri]
	c.mu.RUnlock()
	if !ok && !negOK {
		if p, err := Path(uri); err == nil && p != uri {
			c.mu.RLock()
			s, ok = c.schemas[p]
			c.mu.RUnlock()
		}
	}
	if ok {
		r.metrics.inc(hitOf)
		return s, nil
	}
	if negOK && !skipNegative(ctx) && r.now().Before(neg.until) {
		r.metrics.inc(negativeOf)
		return nil, neg.err
	}
	r.metrics.inc(missOf)
	s, err := r.loadURI(ctx, uri)
	switch {
	case err == nil:
	case errors.Is(err, ErrNotFound) || errors.Is(err, ErrInvalidSchema):
		c.mu.Lock()
		if len(c.negative) >= r.maxNegative {
			clear(c.negative)
		}
		c.negative[uri] = negativeEntry{err: err, until: r.now().Add(r.negativeTTL)}
		c.mu.Unlock()
		return nil, err
	default:
		return nil, err
	}
	c.mu.Lock()
	c.schemas[s.ID().Name] = s // the canonical path (loadURI)
	c.mu.Unlock()
	return s, nil
}

func (r *Resolver) loadURI(ctx context.Context, uri string) (*Schema, error) {
	src, ok := r.src.(URISource)
	if !ok {
		return nil, fmt.Errorf("schema: resolve %q: %w: this schema source has no $schema URIs", uri, ErrNotFound)
	}
	p, err := Path(uri)
	if err != nil {
		return nil, fmt.Errorf("schema: resolve: %w", err)
	}
	fctx, cancel := context.WithTimeout(ctx, r.fetchTimeout)
	defer cancel()
	raw, err := src.FetchURI(fctx, p)
	if err != nil {
		return nil, fmt.Errorf("schema: resolve %s: %w", p, err)
	}
	s, err := r.compile(ctx, ID{Name: p}, raw)
	if err != nil {
		return nil, fmt.Errorf("schema: resolve %s: %w", p, err)
	}
	return s, nil
}
