package schema

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestForgetAndFreshResolve: a version registered after a failed lookup is
// seen at once after Forget of its subject, or by a resolution that skips
// the negative cache; Forget of another subject leaves the entry alone.
func TestForgetAndFreshResolve(t *testing.T) {
	var exists atomic.Bool
	doc := []byte(`{"type":"object","properties":{"a":{"type":"string"}}}`)
	fetches := map[string]int{}
	src := sourceFunc(func(_ context.Context, id ID) ([]byte, error) {
		fetches[id.Name]++
		if id.Name == "Foo" && exists.Load() {
			return doc, nil
		}
		return nil, ErrNotFound
	})
	r := NewResolver(src, ResolverConfig{NegativeTTL: time.Hour})
	ctx := t.Context()
	foo, bar := ID{Name: "Foo", Revision: 1}, ID{Name: "Bar", Revision: 1}
	for _, id := range []ID{foo, bar} {
		if _, err := r.Resolve(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Resolve(%s) = %v, want ErrNotFound", id, err)
		}
	}
	exists.Store(true)
	if _, err := r.Resolve(ctx, foo); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Resolve(Foo) from the negative cache = %v, want ErrNotFound", err)
	}
	if fetches["Foo"] != 1 {
		t.Fatalf("Foo fetched %d times, want 1 (the negative cache answers)", fetches["Foo"])
	}
	// Forget of another subject leaves Foo's entry.
	if n := r.Forget("Bar"); n != 1 {
		t.Errorf("Forget(Bar) dropped %d entries, want 1", n)
	}
	if _, err := r.Resolve(ctx, foo); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Resolve(Foo) after Forget(Bar) = %v, want the cached ErrNotFound", err)
	}
	// A fresh resolution fetches again.
	if _, err := r.Resolve(WithoutNegativeCache(ctx), foo); err != nil {
		t.Fatalf("fresh Resolve(Foo) = %v", err)
	}
	if fetches["Foo"] != 2 {
		t.Fatalf("Foo fetched %d times, want 2", fetches["Foo"])
	}

	// Forget: the next ordinary resolution fetches again.
	baz := ID{Name: "Baz", Revision: 3}
	if _, err := r.Resolve(ctx, baz); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	r.Forget("Baz")
	if _, err := r.Resolve(ctx, baz); !errors.Is(err, ErrNotFound) || fetches["Baz"] != 2 {
		t.Fatalf("Resolve(Baz) after Forget: %v, %d fetches; want a new fetch", err, fetches["Baz"])
	}
	// Forget("") drops everything.
	// Forget("") drops everything: Baz's entry (Foo's went when it was
	// found, Bar's with Forget(Bar)).
	if n := r.Forget(""); n != 1 {
		t.Errorf("Forget(\"\") dropped %d entries, want 1", n)
	}
}
