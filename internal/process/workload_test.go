package process

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/iphash"
	"github.com/eventlogging/eventlogging/internal/lineformat"
	"github.com/eventlogging/eventlogging/internal/schema"
)

// The standard workload (testdata/workload at the repository root): the
// first lines of ../shared/workload's gen_raw.py output, its schemas, and
// what the generator says about each line (expected.json, from expect.py).
const (
	workloadDir    = "../../testdata/workload"
	workloadFormat = "%q %{recvFrom}s %{seqId}d %t %o %{userAgent}i"
)

// workloadExpected is testdata/workload/expected.json.
type workloadExpected struct {
	Generator       string         `json:"generator"`
	Lines           int            `json:"lines"`
	RawBytes        int            `json:"raw_bytes"`
	RawSHA256       string         `json:"raw_sha256"`
	Valid           int            `json:"valid"`
	Invalid         int            `json:"invalid"`
	ValidBySchema   map[string]int `json:"valid_by_schema"`
	InvalidByKind   map[string]int `json:"invalid_by_kind"`
	ValidUUIDSHA256 string         `json:"valid_uuid_sha256"`
	InvalidLines    []struct {
		Line   int    `json:"line"` // 1-based
		Kind   string `json:"kind"`
		Schema string `json:"schema"`
	} `json:"invalid_lines"`
}

// loadWorkload returns the committed raw file and its lines.
func loadWorkload(tb testing.TB) ([]byte, [][]byte) {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join(workloadDir, "raw.tsv"))
	if err != nil {
		tb.Fatalf("standard workload missing (testdata/workload at the repository root): %v", err)
	}
	lines := bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n"))
	return raw, lines
}

// newWorkloadProcessor is the processor of the workload README's command:
// the workload's schemas, IP policy hash (HMAC-SHA256, a fixed key), the
// default topics, and a fixed clock (lines that cannot be parsed get the
// processing time).
func newWorkloadProcessor(tb testing.TB) *Processor {
	tb.Helper()
	res := schema.NewResolver(schema.NewDirSource(filepath.Join(workloadDir, "schemas")), schema.ResolverConfig{})
	p, err := New(res, iphash.NewHasher(iphash.SHA256, []byte("standard-workload-key")), Config{
		IPPolicy:    IPHash,
		ProcessorID: "workload",
		Now:         func() time.Time { return fixedNow },
	})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// TestStandardWorkloadVerdicts processes the committed workload lines in
// order and checks every verdict against what the generator did to each
// line (expected.json, written by expect.py from gen_raw.py itself; the
// uuid digest there is computed by Python's uuid module).
func TestStandardWorkloadVerdicts(t *testing.T) {
	raw, lines := loadWorkload(t)
	var want workloadExpected
	data, err := os.ReadFile(filepath.Join(workloadDir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatalf("expected.json: %v", err)
	}
	sum := sha256.Sum256(raw)
	if got := hex.EncodeToString(sum[:]); got != want.RawSHA256 || len(raw) != want.RawBytes || len(lines) != want.Lines {
		t.Fatalf("raw.tsv: %d lines, %d bytes, sha256 %s; expected.json describes %d lines, %d bytes, %s (regenerate both, see testdata/workload/README.md)",
			len(lines), len(raw), got, want.Lines, want.RawBytes, want.RawSHA256)
	}
	// The generator's own rules, independently of expected.json: one
	// invalid line in every block of 20, the five kinds equally often in
	// every 100 lines.
	if len(lines)%100 != 0 || want.Invalid != len(lines)/20 || len(want.InvalidByKind) != 5 {
		t.Fatalf("expected.json: %d invalid of %d lines, kinds %v; gen_raw.py makes one in 20, five kinds", want.Invalid, len(lines), want.InvalidByKind)
	}
	for kind, n := range want.InvalidByKind {
		if n != len(lines)/100 {
			t.Errorf("expected.json: %d lines of kind %s, gen_raw.py makes N/100 = %d", n, kind, len(lines)/100)
		}
	}

	p := newWorkloadProcessor(t)
	f := mustFormat(t, workloadFormat)
	ctx := context.Background()
	type verdict struct {
		line         int
		code, schema string
		message      string
		reasons      []string
	}
	var invalid []verdict
	validBySchema := map[string]int{}
	var uuids []string
	var outs []Output
	for i, line := range lines {
		outs = p.Process(ctx, f, line, nil, outs[:0])
		if len(outs) == 1 && outs[0].Topic == p.ErrorTopic() {
			var ec struct {
				Event capsule.EventError `json:"event"`
			}
			if err := json.Unmarshal(outs[0].Value, &ec); err != nil {
				t.Fatalf("line %d: EventError is not JSON: %v", i+1, err)
			}
			v := verdict{line: i + 1, code: ec.Event.Code, schema: ec.Event.Schema, message: ec.Event.Message}
			for _, x := range ec.Event.Errors {
				v.reasons = append(v.reasons, x.Reason)
			}
			invalid = append(invalid, v)
			continue
		}
		var c struct{ Schema, UUID string }
		if len(outs) != 2 {
			t.Fatalf("line %d: %d outputs, want 2 (schema topic, mixed topic)", i+1, len(outs))
		}
		if err := json.Unmarshal(outs[0].Value, &c); err != nil {
			t.Fatalf("line %d: capsule is not JSON: %v", i+1, err)
		}
		if outs[0].Topic != "eventlogging_"+c.Schema || outs[1].Topic != capsule.TopicValidMixed || !bytes.Equal(outs[0].Value, outs[1].Value) {
			t.Errorf("line %d: topics %s, %s for schema %s", i+1, outs[0].Topic, outs[1].Topic, c.Schema)
		}
		validBySchema[c.Schema]++
		uuids = append(uuids, c.UUID)
	}

	for block := 0; block < len(lines)/20; block++ {
		n := 0
		for _, v := range invalid {
			if (v.line-1)/20 == block {
				n++
			}
		}
		if n != 1 {
			t.Errorf("lines %d-%d: %d invalid, want exactly 1", block*20+1, block*20+20, n)
		}
	}
	if len(invalid) != want.Invalid || len(uuids) != want.Valid {
		t.Errorf("valid/invalid %d/%d, want %d/%d", len(uuids), len(invalid), want.Valid, want.Invalid)
	}
	if !maps.Equal(validBySchema, want.ValidBySchema) {
		t.Errorf("valid by schema %v, want %v", validBySchema, want.ValidBySchema)
	}
	slices.Sort(uuids)
	digest := sha256.Sum256([]byte(strings.Join(uuids, "")))
	if got := hex.EncodeToString(digest[:]); got != want.ValidUUIDSHA256 {
		t.Errorf("sha256 of the sorted valid uuids %s, want %s", got, want.ValidUUIDSHA256)
	}

	// Each invalid line is the one the generator spoiled, failing for the
	// reason of its kind.
	if len(invalid) != len(want.InvalidLines) {
		t.Fatalf("%d invalid lines, expected.json lists %d", len(invalid), len(want.InvalidLines))
	}
	for i, w := range want.InvalidLines {
		got := invalid[i]
		if got.line != w.Line {
			t.Errorf("invalid line %d, want line %d (%s)", got.line, w.Line, w.Kind)
			continue
		}
		ok := true
		switch w.Kind {
		case "truncated": // the query string or the JSON in it ends early
			ok = got.code == capsule.CodeProcessor &&
				(strings.HasPrefix(got.message, "parse raw event") || strings.HasPrefix(got.message, "decode capsule JSON"))
		case "unknown_revision":
			ok = got.code == capsule.CodeProcessor && got.schema == w.Schema && strings.HasPrefix(got.message, "unknown schema "+w.Schema+" revision ")
		case "missing_required":
			ok = got.code == capsule.CodeValidation && got.schema == w.Schema && slices.Equal(got.reasons, []string{"required property missing"})
		case "undeclared_field":
			ok = got.code == capsule.CodeValidation && got.schema == w.Schema && len(got.reasons) == 1 && strings.HasPrefix(got.reasons[0], "additional property not allowed")
		case "wrong_type":
			ok = got.code == capsule.CodeValidation && got.schema == w.Schema && len(got.reasons) == 1 && strings.HasPrefix(got.reasons[0], "got ")
		default:
			t.Fatalf("expected.json: unknown kind %q", w.Kind)
		}
		if !ok {
			t.Errorf("line %d (%s, %s): code %s, schema %s, message %q", w.Line, w.Kind, w.Schema, got.code, got.schema, got.message)
		}
	}
}

// BenchmarkProcessStandard measures the processing function on the
// standard workload (testdata/workload: real-sized lines, 842 bytes on
// average, five draft-3 schemas, one line in 20 invalid), the input the
// performance targets are stated on: the committed lines in order, again
// and again, on one goroutine, with the format of the workload README and
// IP policy hash. One op is one line: ns/op is ns/line, B/s the raw bytes
// processed.
func BenchmarkProcessStandard(b *testing.B) {
	raw, lines := loadWorkload(b)
	p := newWorkloadProcessor(b)
	f := mustFormat(b, workloadFormat)
	benchmarkLines(b, p, f, lines, int64(len(raw)-len(lines))/int64(len(lines))) // mean line, without "\n"
}

// benchmarkLines processes lines in turn, reporting lineBytes per line,
// lines/s and allocs/line; the outputs' slice is reused as the pipeline
// reuses it. A first pass over the lines, untimed, warms the schema cache.
func benchmarkLines(b *testing.B, p *Processor, f *lineformat.Format, lines [][]byte, lineBytes int64) {
	ctx := context.Background()
	var outs []Output
	for _, line := range lines {
		outs = p.Process(ctx, f, line, nil, outs[:0])
	}
	b.ReportAllocs()
	b.SetBytes(lineBytes)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	i := 0
	for b.Loop() {
		outs = p.Process(ctx, f, lines[i], nil, outs[:0])
		if i++; i == len(lines) {
			i = 0
		}
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N), "allocs/line")
}
