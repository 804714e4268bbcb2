package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/schema"
)

// hostileSchema is issue 30's (finding 3): n properties, each with a
// pattern that compiles to 4,003 regexp instructions. Before the limits,
// n = 4000 held a core for 4.9-11.6 s and took RSS from 165 MB to
// 1.24 GB per request, on the public lookup and compatibility routes.
func hostileSchema(n int) string {
	var b strings.Builder
	b.WriteString(`{"type": "object", "properties": {`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d": {"type": "string", "pattern": "^(a|b|c|d|e|f|g|h){1,1000}$"}`, i)
	}
	b.WriteString(`}}`)
	return b.String()
}

// adminOnly admits writes carrying X-Admin, standing in for
// security.admin_networks: the other requests come from a public client.
func adminOnly(cfg *Config) {
	cfg.Authorize = func(r *http.Request) error {
		if r.Header.Get("X-Admin") == "" {
			return errors.New("not an admin")
		}
		return nil
	}
}

// TestHostileSchemaRefused: the lookup and compatibility routes (public)
// and the register route refuse a schema over a compile limit with 422,
// error_code 42201 and a message naming the limit, quickly and without
// the memory the compile would take.
func TestHostileSchemaRefused(t *testing.T) {
	in := newInstance(t, nil, adminOnly)
	admin := http.Header{"X-Admin": {"1"}}
	if status, b, _ := in.do(t, http.MethodPost, "/subjects/X/versions", schemaBody(typeJSON, jsonSchema("a")), admin); status != http.StatusOK {
		t.Fatalf("register: %d %s", status, trunc(b))
	}
	many := schemaBody(typeJSON, hostileSchema(4000))
	const manyMsg = "Invalid schema: schema has 4000 patterns, the limit is 1000 (registry.max_schema_patterns)"
	one := schemaBody(typeJSON, hostileSchema(3))
	const oneMsg = `Invalid schema: pattern at /properties/p0/pattern "^(a|b|c|d|e|f|g|h){1,1000}$" compiles to 4003 instructions, the limit is 1000 (registry.max_pattern_program)`
	for _, tc := range []struct {
		name, path, body, msg string
		header                http.Header
	}{
		{"lookup", "/subjects/X", many, manyMsg, nil},
		{"compatibility", "/compatibility/subjects/X/versions/latest", many, manyMsg, nil},
		{"compatibility of all versions", "/compatibility/subjects/X/versions", one, oneMsg, nil},
		{"lookup of an unknown subject", "/subjects/Y", one, oneMsg, nil},
		{"register", "/subjects/X/versions", many, manyMsg, admin},
		{"register one", "/subjects/Z/versions", one, oneMsg, admin},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		status, b, _ := in.do(t, http.MethodPost, tc.path, tc.body, tc.header)
		elapsed := time.Since(start)
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		var ae apiError
		if status != http.StatusUnprocessableEntity || json.Unmarshal(b, &ae) != nil || ae.Code != codeInvalidSchema || ae.Message != tc.msg {
			t.Errorf("%s: %d %s, want 422 with error_code 42201 and %q", tc.name, status, trunc(b), tc.msg)
		}
		t.Logf("%s: answered in %s, %d MiB allocated", tc.name, elapsed.Round(time.Millisecond), alloc>>20)
		// Unbounded: seconds and gigabytes.
		if elapsed > 2*time.Second || alloc > 100<<20 {
			t.Errorf("%s: took %s and allocated %d MiB", tc.name, elapsed, alloc>>20)
		}
	}
	// Four at once (unbounded: 36 CPU-seconds and 4.7 GB).
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if status, b, _ := in.do(t, http.MethodPost, "/subjects/X", many, nil); status != http.StatusUnprocessableEntity && status != http.StatusServiceUnavailable {
				t.Errorf("concurrent lookup: %d %s", status, trunc(b))
			}
		})
	}
	wg.Wait()
	runtime.ReadMemStats(&after)
	if d, alloc := time.Since(start), after.TotalAlloc-before.TotalAlloc; d > 4*time.Second || alloc > 200<<20 {
		t.Errorf("four concurrent hostile lookups took %s and allocated %d MiB", d, alloc>>20)
	}
	// The subject is as it was.
	in.run(t, []step{{method: http.MethodGet, path: "/subjects/X/versions", status: http.StatusOK, wantJSON: `[1]`}})
}

// TestSchemaSizeLimit: a schema text over the compiler's MaxSchemaBytes is
// refused before it is parsed, JSON Schema or Avro.
func TestSchemaSizeLimit(t *testing.T) {
	in := newInstance(t, nil, func(c *Config) { c.Compiler = schema.NewCompiler(schema.Limits{MaxSchemaBytes: 200}) })
	big := jsonSchema("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l")
	avro := `{"type": "record", "name": "R", "fields": [` + strings.Repeat(`{"name": "f", "type": "int"},`, 10) + `{"name": "g", "type": "int"}]}`
	in.run(t, []step{
		{method: http.MethodPost, path: "/subjects/X", body: schemaBody(typeJSON, big), status: http.StatusUnprocessableEntity, code: codeInvalidSchema,
			contains: fmt.Sprintf(`"Invalid schema: schema is %d bytes, the limit is 200 (registry.max_schema_bytes)"`, len(big))},
		{method: http.MethodPost, path: "/compatibility/subjects/X/versions", body: schemaBody(typeAvro, avro), status: http.StatusUnprocessableEntity, code: codeInvalidSchema,
			contains: "the limit is 200 (registry.max_schema_bytes)"},
		{method: http.MethodPost, path: "/subjects/X/versions", body: schemaBody(typeJSON, jsonSchema("a")), status: http.StatusOK},
	})
}

// slowSchema is valid and within every limit, but takes the compiler a
// while (about 0.5 s on a 2-core machine): 4,990 properties.
func slowSchema() string {
	var b strings.Builder
	b.WriteString(`{"type": "object", "properties": {`)
	for i := range 4990 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d": {"type": "string", "maxLength": 10, "description": "field %d of a wide schema"}`, i, i)
	}
	b.WriteString(`}}`)
	return b.String()
}

// TestCompileSlotsBounded: concurrent requests do not compile more
// schemas at once than the compiler's slots; a request that finds none
// free within the wait gets 503, error_code 50301 and Retry-After,
// rather than piling up.
func TestCompileSlotsBounded(t *testing.T) {
	in := newInstance(t, nil, func(c *Config) {
		c.Compiler = schema.NewCompiler(schema.Limits{MaxConcurrent: 1, Wait: 20 * time.Millisecond})
	})
	body := schemaBody(typeJSON, slowSchema())
	const n = 6
	type answer struct {
		status, code int
		retryAfter   string
	}
	answers := make(chan answer, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			status, b, h := in.do(t, http.MethodPost, "/subjects/Unknown", body, nil)
			var ae apiError
			_ = json.Unmarshal(b, &ae)
			answers <- answer{status, ae.Code, h.Get("Retry-After")}
		})
	}
	wg.Wait()
	close(answers)
	compiled, busy := 0, 0
	for a := range answers {
		switch {
		case a.status == http.StatusNotFound && a.code == codeSubjectNotFound: // compiled, then looked up
			compiled++
		case a.status == http.StatusServiceUnavailable && a.code == codeBusy && a.retryAfter == "1":
			busy++
		default:
			t.Errorf("answer %+v", a)
		}
	}
	t.Logf("%d compiled, %d refused as busy", compiled, busy)
	// One compile holds the only slot for far longer than the others
	// wait: at most one more (arriving after it) may compile.
	if compiled < 1 || compiled > 2 || busy < n-2 {
		t.Errorf("%d of %d requests compiled, %d refused: the slot did not bound them", compiled, n, busy)
	}
}
