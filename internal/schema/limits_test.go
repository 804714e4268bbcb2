package schema

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp/syntax"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// hostileSchema is the schema of issue 30 (finding 3): n properties, each
// with a pattern whose counted repetition compiles to 4,003 instructions.
// Unbounded, n = 4000 took 11.6 s and allocated 7.9 GB to compile.
func hostileSchema(n int, pattern func(i int) string) string {
	var b strings.Builder
	b.WriteString(`{"type": "object", "properties": {`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d": {"type": "string", "pattern": %q}`, i, pattern(i))
	}
	b.WriteString(`}}`)
	return b.String()
}

func hostilePattern(int) string { return "^(a|b|c|d|e|f|g|h){1,1000}$" }

// TestCompileLimits: a schema over a limit fails with a message naming
// the limit, its value and its config key.
func TestCompileLimits(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  string
		lim  Limits
		want string
	}{
		{"hostile", hostileSchema(4000, hostilePattern), Limits{},
			"schema has 4000 patterns, the limit is 1000 (registry.max_schema_patterns)"},
		{"one big program", hostileSchema(3, hostilePattern), Limits{},
			`pattern at /properties/p0/pattern "^(a|b|c|d|e|f|g|h){1,1000}$" compiles to 4003 instructions, the limit is 1000 (registry.max_pattern_program)`},
		{"patternProperties", `{"patternProperties": {"^x{1,900}y{1,900}$": {}}}`, Limits{},
			`pattern at /patternProperties/^x{1,900}y{1,900}$ "^x{1,900}y{1,900}$" compiles to 3602 instructions, the limit is 1000 (registry.max_pattern_program)`},
		{"nested", `{"items": {"propertyNames": {"pattern": "(ab){500}"}}}`, Limits{},
			`pattern at /items/propertyNames/pattern "(ab){500}" compiles to 2002 instructions, the limit is 1000 (registry.max_pattern_program)`},
		{"long pattern", hostileSchema(1, func(int) string { return strings.Repeat("a", 1001) }), Limits{},
			"pattern at /properties/p0/pattern is 1001 bytes, the limit is 1000 (registry.max_pattern_bytes)"},
		{"configured", hostileSchema(11, func(i int) string { return fmt.Sprintf("^x%d$", i) }), Limits{MaxPatterns: 10},
			"schema has 11 patterns, the limit is 10 (registry.max_schema_patterns)"},
		{"timeout", hostileSchema(10, func(i int) string { return fmt.Sprintf("^x%d$", i) }), Limits{CompileTimeout: time.Nanosecond},
			"schema compile took over 1ns, the limit is 1ns (registry.compile_timeout)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := compile(ID{Name: "Hostile", Revision: 1}, mustJSON(t, tc.doc), tc.lim.withDefaults())
			var le *LimitError
			if !errors.Is(err, ErrInvalidSchema) || !errors.As(err, &le) || le.Error() != tc.want {
				t.Fatalf("compile = %v, want a *LimitError %q", err, tc.want)
			}
		})
	}
	// Within the limits, patterns compile as before, and one used by many
	// properties is compiled once.
	s, err := Compile(ID{Name: "Fine", Revision: 1}, mustJSON(t, hostileSchema(1000, func(int) string { return "^[a-z]{1,255}$" })))
	if err != nil {
		t.Fatal(err)
	}
	if s.Validate(map[string]any{"p1": "abc"}) != nil || s.Validate(map[string]any{"p1": "ABC"}) == nil {
		t.Error("pattern not applied")
	}
}

// TestCompileHostileIsCheap: the hostile schema is refused in bounded
// time and memory (unbounded: 11.6 s and 7.9 GB allocated).
func TestCompileHostileIsCheap(t *testing.T) {
	doc := mustJSON(t, hostileSchema(4000, hostilePattern))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err := Compile(ID{Name: "Hostile", Revision: 1}, doc)
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("the hostile schema compiles")
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("refused in %s, %d KiB allocated: %v", elapsed, alloc>>10, err)
	if elapsed > time.Second || alloc > 64<<20 {
		t.Errorf("refusing the hostile schema took %s and %d MiB", elapsed, alloc>>20)
	}
}

// TestProgSizeMatchesCompile: progSize counts the instructions
// syntax.Compile makes of the simplified pattern, at least, and not many
// more (a star over a sub-pattern that cannot match empty costs one
// instruction fewer than it counts).
func TestProgSizeMatchesCompile(t *testing.T) {
	for _, p := range []string{
		"", "a", "abc", "^[a-f0-9]{20}$", "^[a-fA-F0-9]{8}(-[a-fA-F0-9]{4}){3}-[a-fA-F0-9]{12}$",
		"^(a|b|c|d|e|f|g|h){1,1000}$", "^[a-z]{1,255}$", ".{0,1000}", "x{3,}", "x{0,}", "x{1,}", "(ab){0}c",
		"(?i)hello", "a*b+c?", "(a*)*", "(a|)+", "x{2,5}", "(x{2,3}){2,3}", `\bfoo\B`, "(?:a|bc|def)", "[^a]", "(?s).",
		"^[a-z][a-z0-9-]*$", "^[0-9]+$", "(a{0,10}b){5,}", "a{1000}", `^\d{4}-\d{2}-\d{2}$`, "((((a))))", "a|b|c|",
		"(?U)a+?b*?", "x{0,0}y",
	} {
		re, err := syntax.Parse(p, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		prog, err := syntax.Compile(re.Simplify())
		if err != nil {
			t.Fatal(err)
		}
		got, actual := progSize(re), int64(len(prog.Inst))
		if got < actual || got > actual+actual/8+2 {
			t.Errorf("progSize(%q) = %d, syntax.Compile makes %d", p, got, actual)
		}
	}
}

// TestCompilerConcurrency: a Compiler runs MaxConcurrent compiles at
// once; the others wait up to Wait, then fail with ErrBusy.
func TestCompilerConcurrency(t *testing.T) {
	c := NewCompiler(Limits{MaxConcurrent: 2, Wait: 20 * time.Millisecond})
	entered, release := make(chan struct{}, 10), make(chan struct{})
	c.inSlot = func() {
		entered <- struct{}{}
		<-release
	}
	doc := mustJSON(t, `{"properties": {"a": {"type": "integer"}}}`)
	const n = 6
	errs := make(chan error, n)
	var wg sync.WaitGroup
	defer wg.Wait()
	var once sync.Once
	releaseAll := func() { once.Do(func() { close(release) }) }
	defer releaseAll()
	for range n {
		wg.Go(func() {
			_, err := c.Compile(t.Context(), ID{Name: "A", Revision: 1}, doc)
			errs <- err
		})
	}
	// With two compiles holding the slots, the other four give up.
	timeout := time.After(10 * time.Second)
	for range n - 2 {
		select {
		case err := <-errs:
			if !errors.Is(err, ErrBusy) || errors.Is(err, ErrInvalidSchema) {
				t.Fatalf("a compile waiting for a slot: %v, want ErrBusy", err)
			}
		case <-timeout:
			t.Fatalf("%d compiles ran at once, want 2", len(entered))
		}
	}
	if len(entered) != 2 {
		t.Fatalf("%d compiles ran at once, want 2", len(entered))
	}
	releaseAll()
	wg.Wait()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// A waiting compile also ends with its context.
	c = NewCompiler(Limits{MaxConcurrent: 1, Wait: time.Hour})
	c.slots <- struct{}{}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.Compile(ctx, ID{Name: "A", Revision: 1}, doc); !errors.Is(err, context.Canceled) {
		t.Fatalf("Compile with a cancelled context: %v", err)
	}
}

// TestCompilerCheckSize: a text over MaxSchemaBytes is an invalid schema
// naming the limit.
func TestCompilerCheckSize(t *testing.T) {
	c := NewCompiler(Limits{MaxSchemaBytes: 100})
	if err := c.CheckSize(100); err != nil {
		t.Fatal(err)
	}
	err := c.CheckSize(101)
	if !errors.Is(err, ErrInvalidSchema) || !strings.HasSuffix(err.Error(), "schema is 101 bytes, the limit is 100 (registry.max_schema_bytes)") {
		t.Fatalf("CheckSize(101) = %v", err)
	}
	if got := NewCompiler(Limits{}).Limits(); got.MaxSchemaBytes != DefaultMaxSchemaBytes || got.MaxConcurrent != DefaultMaxConcurrentCompiles {
		t.Fatalf("default limits: %+v", got)
	}
}

// TestShippedSchemasWithinLimits: every schema of the examples, the
// tests and the benchmark workloads compiles within the default limits.
func TestShippedSchemasWithinLimits(t *testing.T) {
	c := NewCompiler(Limits{})
	n := 0
	for _, dir := range []string{
		"../../examples/schemas", "testdata/schemas", "../../testdata/workload/schemas", "../../../shared/workload/schemas",
	} {
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			switch filepath.Ext(p) {
			case ".json", ".yaml", ".yml":
			default:
				return nil
			}
			raw, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if err := c.CheckSize(len(raw)); err != nil {
				t.Errorf("%s: %v", p, err)
			}
			doc, err := ParseDocument(raw)
			if err != nil {
				return nil // not a schema (a fixture of the folder tests)
			}
			if _, err := c.Compile(t.Context(), ID{Name: "Shipped", Revision: 1}, doc); err != nil {
				var le *LimitError
				if errors.As(err, &le) {
					t.Errorf("%s: %v", p, err)
				}
				return nil
			}
			n++
			return nil
		})
		if err != nil && (!errors.Is(err, os.ErrNotExist) || !strings.Contains(dir, "shared")) {
			t.Fatal(err)
		}
	}
	if n < 20 {
		t.Fatalf("only %d schemas compiled", n)
	}
	t.Logf("%d schemas compiled within the default limits", n)
}

// TestResolverAppliesLimits: the processor's and the intake's schema
// resolution applies the compiler's limits to what the registry or the
// folder hands it, by id and by $schema URI.
func TestResolverAppliesLimits(t *testing.T) {
	hostile := []byte(hostileSchema(4000, hostilePattern))
	src := sourceFunc(func(context.Context, ID) ([]byte, error) { return hostile, nil })
	r := NewResolver(src, ResolverConfig{})
	start := time.Now()
	_, err := r.Resolve(t.Context(), ID{Name: "Hostile", Revision: 1})
	var le *LimitError
	if !errors.Is(err, ErrInvalidSchema) || !errors.As(err, &le) || le.Key != "registry.max_schema_patterns" {
		t.Fatalf("Resolve = %v, want the pattern limit", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Resolve took %s", d)
	}
	r = NewResolver(src, ResolverConfig{Compiler: NewCompiler(Limits{MaxSchemaBytes: 1000})})
	if _, err := r.Resolve(t.Context(), ID{Name: "Hostile", Revision: 1}); !errors.As(err, &le) || le.Key != "registry.max_schema_bytes" {
		t.Fatalf("Resolve = %v, want the size limit", err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "hostile"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hostile", "1.0.0.json"), hostile, 0o644); err != nil {
		t.Fatal(err)
	}
	r = NewResolver(NewDirSource(dir), ResolverConfig{})
	if _, err := r.ResolveURI(t.Context(), "/hostile/1.0.0"); !errors.As(err, &le) {
		t.Fatalf("ResolveURI = %v, want the pattern limit", err)
	}
}

// TestFormatRegexValueBounded: an event string checked with "format":
// "regex" is compiled within the pattern limits too (the library compiles
// such values with the schema's regexp engine), from any goroutine.
func TestFormatRegexValueBounded(t *testing.T) {
	s, err := Compile(ID{Name: "Re", Revision: 1}, mustJSON(t, `{"properties": {"re": {"type": "string", "format": "regex"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if err := s.Validate(map[string]any{"re": "^[a-z]+$"}); err != nil {
				t.Errorf("a small pattern: %v", err)
			}
			if err := s.Validate(map[string]any{"re": "(a|b){1,1000}"}); err == nil || !strings.Contains(err.Error(), "(registry.max_pattern_program)") {
				t.Errorf("a pattern over the program limit: %v", err)
			}
		})
	}
	wg.Wait()
}
