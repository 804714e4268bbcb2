package schema

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Compiling a schema costs what its author chooses: a document of 4,000
// patterns such as ^(a|b|c|d|e|f|g|h){1,1000}$ (4,003 regexp instructions
// each) took 11.6 s and allocated 7.9 GB, and the registry compiles the
// schemas of public requests (lookups, compatibility checks). Limits bound
// that work before and while it is done, and a Compiler runs few compiles
// at once, so that what the public routes receive cannot exhaust a core
// or the memory.

// Defaults for zero [Limits] fields. Every schema of examples/, of the
// tests and of the benchmark workload is far below them (the largest
// pattern program there is 46 instructions).
const (
	DefaultMaxSchemaBytes        = 1 << 20
	DefaultMaxPatterns           = 1000
	DefaultMaxPatternBytes       = 1000
	DefaultMaxPatternProgram     = 1000
	DefaultCompileTimeout        = 5 * time.Second
	DefaultMaxConcurrentCompiles = 2
	DefaultCompileWait           = 5 * time.Second
)

// The config keys of the limits (registry section), which error messages
// name so that an operator knows what to raise.
const (
	keyMaxSchemaBytes    = "registry.max_schema_bytes"
	keyMaxPatterns       = "registry.max_schema_patterns"
	keyMaxPatternBytes   = "registry.max_pattern_bytes"
	keyMaxPatternProgram = "registry.max_pattern_program"
	keyCompileTimeout    = "registry.compile_timeout"
	keyCompileSlots      = "registry.max_concurrent_compiles, registry.compile_wait"
)

// Limits bound the cost of compiling one schema document. Zero (or
// negative) fields select the defaults.
type Limits struct {
	// MaxSchemaBytes bounds the text of a document ([Compiler.CheckSize]).
	// Default 1 MiB.
	MaxSchemaBytes int
	// MaxPatterns bounds the regular expressions of a document: "pattern"
	// values and "patternProperties" names. Default 1000.
	MaxPatterns int
	// MaxPatternBytes bounds the length of one pattern. Default 1000.
	MaxPatternBytes int
	// MaxPatternProgram bounds the size of one pattern's compiled program,
	// in regexp/syntax instructions, which is what its compile costs in
	// time and memory: a counted repetition is copied, so
	// ^[a-z]{1,255}$ is 513 instructions and (a|b){1,1000} is over 4,000.
	// Default 1000.
	MaxPatternProgram int
	// CompileTimeout bounds one compile; the compiler checks it between
	// subschemas and patterns. Default 5s.
	CompileTimeout time.Duration
	// MaxConcurrent is how many compiles of one [Compiler] run at once.
	// Default 2.
	MaxConcurrent int
	// Wait bounds how long a compile waits for its turn before it fails
	// with [ErrBusy]. Default 5s.
	Wait time.Duration
}

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxSchemaBytes, DefaultMaxSchemaBytes)
	def(&l.MaxPatterns, DefaultMaxPatterns)
	def(&l.MaxPatternBytes, DefaultMaxPatternBytes)
	def(&l.MaxPatternProgram, DefaultMaxPatternProgram)
	def(&l.MaxConcurrent, DefaultMaxConcurrentCompiles)
	if l.CompileTimeout <= 0 {
		l.CompileTimeout = DefaultCompileTimeout
	}
	if l.Wait <= 0 {
		l.Wait = DefaultCompileWait
	}
	return l
}

// LimitError says which limit a schema exceeds. Compile errors wrap it
// with [ErrInvalidSchema]; its text names the limit's config key, e.g.
// "schema has 4000 patterns, the limit is 1000 (registry.max_schema_patterns)".
type LimitError struct {
	Got   string // what the schema has: "schema has 4000 patterns"
	Limit string // the limit: "1000"
	Key   string // the config key: "registry.max_schema_patterns"
}

// Error is "<got>, the limit is <limit> (<key>)".
func (e *LimitError) Error() string {
	return e.Got + ", the limit is " + e.Limit + " (" + e.Key + ")"
}

func limitErrorf(limit int, key, format string, args ...any) error {
	return &LimitError{Got: fmt.Sprintf(format, args...), Limit: strconv.Itoa(limit), Key: key}
}

// ErrBusy is wrapped by the error of a compile that waited for its turn
// longer than [Limits.Wait]: a transient refusal, not a verdict on the
// schema.
var ErrBusy = errors.New("schema: too many schemas compiling")

// Compiler compiles schema documents within [Limits], MaxConcurrent at a
// time. It is safe for concurrent use and starts no goroutines.
type Compiler struct {
	lim   Limits
	slots chan struct{}
	// inSlot, when set (tests), is called while a compile holds its slot.
	inSlot func()
}

// NewCompiler returns a Compiler enforcing lim (zero fields: defaults).
func NewCompiler(lim Limits) *Compiler {
	lim = lim.withDefaults()
	return &Compiler{lim: lim, slots: make(chan struct{}, lim.MaxConcurrent)}
}

// Limits returns the compiler's limits, defaults filled in.
func (c *Compiler) Limits() Limits { return c.lim }

// CheckSize returns an error wrapping [ErrInvalidSchema] and a
// [*LimitError] when a schema text of n bytes is over MaxSchemaBytes.
func (c *Compiler) CheckSize(n int) error {
	if n > c.lim.MaxSchemaBytes {
		return fmt.Errorf("%w: %w", ErrInvalidSchema,
			limitErrorf(c.lim.MaxSchemaBytes, keyMaxSchemaBytes, "schema is %d bytes", n))
	}
	return nil
}

// Compile is the package's [Compile] within the compiler's limits, once
// a slot is free. Besides the errors of [Compile], it returns one
// wrapping [ErrBusy] when no slot freed within Wait, or ctx's error.
func (c *Compiler) Compile(ctx context.Context, id ID, doc map[string]any) (*Schema, error) {
	var s *Schema
	err := c.Do(ctx, func() error {
		var err error
		s, err = compile(id, doc, c.lim)
		return err
	})
	return s, err
}

// Do runs fn in a compile slot (for work that is not a JSON Schema
// compile, such as parsing an Avro schema), once one is free: it returns
// fn's error, or one wrapping [ErrBusy] when no slot freed within Wait,
// or ctx's error.
func (c *Compiler) Do(ctx context.Context, fn func() error) error {
	select {
	case c.slots <- struct{}{}:
	default:
		t := time.NewTimer(c.lim.Wait)
		defer t.Stop()
		select {
		case c.slots <- struct{}{}:
		case <-t.C:
			return fmt.Errorf("%w: %d compiles running, waited %s (%s)", ErrBusy, c.lim.MaxConcurrent, c.lim.Wait, keyCompileSlots)
		case <-ctx.Done():
			return fmt.Errorf("schema: waiting to compile: %w", ctx.Err())
		}
	}
	defer func() { <-c.slots }()
	if c.inSlot != nil {
		c.inSlot()
	}
	return fn()
}

// budget is what one compile may still spend. The compiler calls its
// regexp engine and its vocabulary hook (storable.go) for every pattern
// and every subschema, which is where the deadline is checked.
type budget struct {
	lim      Limits
	deadline time.Time
	err      error                        // the limit that stopped the compile
	memo     map[string]jsonschema.Regexp // patterns compiled so far
	// sealed is set once the compile is over: the engine is then only
	// called to check "format": "regex" values, from any goroutine.
	sealed atomic.Bool
}

func newBudget(lim Limits) *budget {
	return &budget{lim: lim, deadline: time.Now().Add(lim.CompileTimeout), memo: map[string]jsonschema.Regexp{}}
}

// expired records and returns the timeout once the deadline passed.
func (b *budget) expired() error {
	if b.err == nil && time.Now().After(b.deadline) {
		b.err = &LimitError{Got: "schema compile took over " + b.lim.CompileTimeout.String(), Limit: b.lim.CompileTimeout.String(), Key: keyCompileTimeout}
	}
	return b.err
}

// regexp is the compiler's regexp engine: each distinct pattern is
// checked and compiled once.
func (b *budget) regexp(s string) (jsonschema.Regexp, error) {
	if b.sealed.Load() {
		re, err := compilePattern(s, b.lim, "")
		if err != nil {
			return nil, err // not a nil *regexp.Regexp in the interface
		}
		return re, nil
	}
	if err := b.expired(); err != nil {
		return nil, err
	}
	if re, ok := b.memo[s]; ok {
		return re, nil
	}
	re, err := compilePattern(s, b.lim, "")
	if err != nil {
		var le *LimitError
		if errors.As(err, &le) {
			b.err = err
		}
		return nil, err
	}
	b.memo[s] = re
	return re, nil
}

// compilePattern compiles a pattern as regexp.Compile does, after
// checking its length and the size of its program. at locates it in its
// document for the error ("" when unknown).
func compilePattern(s string, lim Limits, at string) (*regexp.Regexp, error) {
	if err := checkPattern(s, lim, at); err != nil {
		return nil, err
	}
	return regexp.Compile(s)
}

// checkPattern checks a pattern's length and program size; a pattern
// that does not parse passes (compiling it reports the syntax error).
func checkPattern(s string, lim Limits, at string) error {
	name := "pattern"
	if at != "" {
		name = "pattern at " + at
	}
	if len(s) > lim.MaxPatternBytes {
		return limitErrorf(lim.MaxPatternBytes, keyMaxPatternBytes, "%s is %d bytes", name, len(s))
	}
	re, err := syntax.Parse(s, syntax.Perl) // as regexp.Compile parses it
	if err != nil {
		return nil
	}
	if n := progSize(re); n > int64(lim.MaxPatternProgram) {
		return limitErrorf(lim.MaxPatternProgram, keyMaxPatternProgram, "%s %q compiles to %d instructions", name, truncate(s, 60), n)
	}
	return nil
}

// maxProgSize caps progSize's arithmetic (the parser itself refuses
// programs past about 3 million instructions).
const maxProgSize = 1 << 40

// progSize is the number of instructions syntax.Compile makes of re once
// simplified, computed on the parse tree without building the program
// (whose counted repetitions are copies: x{n,m} is n copies of x and m-n
// optional ones). limits_test.go holds it to syntax.Compile.
func progSize(re *syntax.Regexp) int64 {
	return min(2+size(re), maxProgSize) // the fail and match instructions
}

func size(re *syntax.Regexp) int64 {
	switch re.Op {
	case syntax.OpNoMatch:
		return 0
	case syntax.OpLiteral:
		return max(int64(len(re.Rune)), 1)
	case syntax.OpCapture:
		return 2 + size(re.Sub[0])
	case syntax.OpStar:
		return 2 + size(re.Sub[0]) // (x+)? when x matches the empty string
	case syntax.OpPlus, syntax.OpQuest:
		return 1 + size(re.Sub[0])
	case syntax.OpConcat:
		if len(re.Sub) == 0 {
			return 1
		}
		var n int64
		for _, s := range re.Sub {
			n = min(n+size(s), maxProgSize)
		}
		return n
	case syntax.OpAlternate:
		n := int64(len(re.Sub) - 1)
		for _, s := range re.Sub {
			n = min(n+size(s), maxProgSize)
		}
		return n
	case syntax.OpRepeat:
		sub := size(re.Sub[0])
		lo, hi := int64(re.Min), int64(re.Max)
		switch {
		case hi == 0: // the empty match
			return 1
		case hi == -1 && lo == 0: // x*
			return 2 + sub
		case hi == -1: // lo-1 copies of x, then x+
			return min(lo*sub+1, maxProgSize)
		}
		// lo copies of x, then hi-lo nested copies of x?
		return min(lo*sub+(hi-lo)*(sub+1), maxProgSize)
	}
	return 1 // a character class, an assertion, the empty match
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// checkPatterns checks the patterns of a document before the compiler
// sees it: their number, and each one's length and program. It reads
// every "pattern" string and every "patternProperties" name, wherever
// they are (a superset of what the compiler compiles).
func checkPatterns(doc map[string]any, lim Limits) error {
	w := patternWalk{lim: lim, seen: map[string]bool{}}
	w.walk(doc)
	if w.count > lim.MaxPatterns {
		return fmt.Errorf("%w: %w", ErrInvalidSchema,
			limitErrorf(lim.MaxPatterns, keyMaxPatterns, "schema has %d patterns", w.count))
	}
	if w.err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidSchema, w.err)
	}
	return nil
}

type patternWalk struct {
	lim   Limits
	count int
	seen  map[string]bool
	path  []string
	err   error // the first pattern over a limit
}

func (w *patternWalk) walk(v any) {
	switch v := v.(type) {
	case map[string]any:
		// Sorted, so that the pattern an error names is always the same.
		for _, k := range sortedKeys(v) {
			w.path = append(w.path, k)
			switch x := v[k].(type) {
			case string:
				if k == "pattern" {
					w.pattern(x)
				}
			case map[string]any:
				if k == "patternProperties" {
					for _, name := range sortedKeys(x) {
						w.path = append(w.path, name)
						w.pattern(name)
						w.path = w.path[:len(w.path)-1]
					}
				}
			}
			w.walk(v[k])
			w.path = w.path[:len(w.path)-1]
		}
	case []any:
		for i, x := range v {
			w.path = append(w.path, strconv.Itoa(i))
			w.walk(x)
			w.path = w.path[:len(w.path)-1]
		}
	}
}

func (w *patternWalk) pattern(s string) {
	w.count++
	if w.err != nil || w.count > w.lim.MaxPatterns || w.seen[s] {
		return
	}
	w.seen[s] = true
	w.err = checkPattern(s, w.lim, pointer(w.path))
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
