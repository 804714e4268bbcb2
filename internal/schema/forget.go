package schema

import "context"

// freshKey marks a context whose resolutions skip the negative cache.
type freshKey struct{}

// WithoutNegativeCache returns a context under which [Resolver.Resolve] and
// [Resolver.ResolveURI] do not answer from the negative cache: an unknown
// or invalid schema is fetched again (and the new answer cached). Replayed
// EventErrors are resolved this way, so a replay right after a schema push
// never fails on what the processor remembered from before the push.
// Compiled schemas are still served from the positive cache.
func WithoutNegativeCache(ctx context.Context) context.Context {
	return context.WithValue(ctx, freshKey{}, true)
}

func skipNegative(ctx context.Context) bool {
	v, _ := ctx.Value(freshKey{}).(bool)
	return v
}

// Forget drops what the negative cache remembers about subject: every
// unknown or invalid (subject, revision) id, and every unknown $schema URI
// (a URI names its subject only through the registry, so all of them go).
// An empty subject drops the whole negative cache. Call it when a schema
// is registered (the registry's log shows a new version) or the schema
// folder is reloaded; the next event of that schema is resolved again at
// once instead of failing until NegativeTTL has passed. It reports how
// many entries were dropped.
func (r *Resolver) Forget(subject string) int {
	n := 0
	r.negMu.Lock()
	for id := range r.negative {
		if subject == "" || id.Name == subject {
			delete(r.negative, id)
			n++
		}
	}
	r.negMu.Unlock()
	r.uriOnce.Do(func() {
		r.uris = &uriCache{schemas: map[string]*Schema{}, negative: map[string]negativeEntry{}}
	})
	r.uris.mu.Lock()
	n += len(r.uris.negative)
	clear(r.uris.negative)
	r.uris.mu.Unlock()
	return n
}
