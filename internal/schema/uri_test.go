package schema

import (
	"context"
	"sync/atomic"
	"testing"
)

// uriCounter serves one Event Platform schema and counts its fetches.
type uriCounter struct{ fetches atomic.Int64 }

func (u *uriCounter) Fetch(context.Context, ID) ([]byte, error) { return nil, ErrNotFound }

func (u *uriCounter) FetchURI(_ context.Context, p string) ([]byte, error) {
	u.fetches.Add(1)
	if p != "/test/event/1.0.0" {
		return nil, ErrNotFound
	}
	return []byte(`{"title":"test/event","type":"object","properties":{"a":{"type":"string"}}}`), nil
}

// TestResolveURICachesByPath: URIs naming one schema path in different
// ways share one cache entry and one fetch, so a client cannot grow the
// cache (or make the resolver fetch and compile again) by varying the
// string.
func TestResolveURICachesByPath(t *testing.T) {
	src := &uriCounter{}
	r := NewResolver(src, ResolverConfig{})
	ctx := context.Background()
	var first *Schema
	for i, uri := range []string{
		"/test/event/1.0.0",
		"test/event/1.0.0",
		"https://a.example/test/event/1.0.0",
		"https://b.example/test/event/1.0.0?x=1",
		"/test/event/1.0.0.json",
		"/test/event/1.0.0",
	} {
		s, err := r.ResolveURI(ctx, uri)
		if err != nil {
			t.Fatalf("%s: %v", uri, err)
		}
		if i == 0 {
			first = s
		} else if s != first {
			t.Errorf("%s: a second compiled schema for the same path", uri)
		}
	}
	if n := src.fetches.Load(); n != 1 {
		t.Errorf("%d fetches, want 1", n)
	}
	if n := len(r.uris.schemas); n != 1 {
		t.Errorf("%d cache entries, want 1", n)
	}
	// A URI first seen in a non-canonical form is cached by its path too.
	r2 := NewResolver(src, ResolverConfig{})
	for _, uri := range []string{"https://a.example/test/event/1.0.0", "https://c.example/test/event/1.0.0", "/test/event/1.0.0"} {
		if _, err := r2.ResolveURI(ctx, uri); err != nil {
			t.Fatal(err)
		}
	}
	if n := src.fetches.Load(); n != 2 || len(r2.uris.schemas) != 1 {
		t.Errorf("%d fetches in all (want 2), %d cache entries (want 1)", n, len(r2.uris.schemas))
	}
}
