package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eventlogging/eventlogging/internal/loadgen"
)

// ack is one line of the acknowledgement log: an event the load sent and
// whether the intake acknowledged it (204 beacon, 202 hasty, a per-event
// result of a synchronous POST), with the uuid a synchronous POST answered.
// Every event sent gets a line, acknowledged or not; an event without a
// line was never sent.
type ack struct {
	Seq     uint64 `json:"seq"`
	Mode    string `json:"mode"`
	Invalid bool   `json:"invalid"` // generated with a violation
	Acked   bool   `json:"acked"`
	Status  int    `json:"status,omitempty"` // HTTP status; 0: no answer
	UUID    string `json:"uuid,omitempty"`
	Answer  string `json:"answer,omitempty"` // a synchronous POST's per-event status
	Intake  int    `json:"intake"`
}

// load offers events to the intakes at a steady rate: of the requests 80 %
// beacons, 10 % synchronous POSTs and 10 % hasty POSTs of 10 events each
// (about 30 %, 35 % and 35 % of the events),
// about 5 % invalid, alternating between the intakes. No request is
// retried: an event without success is not acknowledged.
type load struct {
	intakes []string
	rate    float64 // events/s
	gen     *loadgen.Generator
	seed    uint64
	out     *bufio.Writer
	outMu   sync.Mutex
	seq     atomic.Uint64
	hc      *http.Client

	sent, acked, failed atomic.Int64
}

const loadBatch = 10

func newLoad(ctx context.Context, intakes []string, schemasDir, runID string, rate float64, seed uint64, w io.Writer) (*load, error) {
	set, err := loadgen.LoadSchemas(ctx, schemasDir)
	if err != nil {
		return nil, err
	}
	schemas, weights, _, err := set.Mix(nil)
	if err != nil {
		return nil, err
	}
	gen, err := loadgen.NewGenerator(schemas, weights, loadgen.GenConfig{RunID: runID, Invalid: 0.05})
	if err != nil {
		return nil, err
	}
	return &load{
		intakes: intakes, rate: rate, gen: gen, seed: seed, out: bufio.NewWriterSize(w, 1<<16),
		hc: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}},
	}, nil
}

// run sends until ctx ends, from workers clients.
func (l *load) run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	start := time.Now()
	for w := range workers {
		wg.Go(func() { l.worker(ctx, w, workers, start) })
	}
	wg.Wait()
	l.outMu.Lock()
	_ = l.out.Flush()
	l.outMu.Unlock()
}

func (l *load) worker(ctx context.Context, w, workers int, start time.Time) {
	rng := rand.New(rand.NewPCG(l.seed, uint64(w)+1))
	perWorker := l.rate / float64(workers)
	next := time.Now()
	var body, target []byte
	for n := 0; ctx.Err() == nil; n++ {
		mode, events := "beacon", 1
		switch rng.IntN(10) {
		case 8:
			mode, events = "post", loadBatch
		case 9:
			mode, events = "hasty", loadBatch
		}
		// Pace: events/perWorker seconds per request.
		next = next.Add(time.Duration(float64(events) / perWorker * float64(time.Second)))
		if d := time.Until(next); d > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(d):
			}
		} else if d < -5*time.Second {
			next = time.Now() // far behind (an intake hung): do not burst
		}
		intake := (w + n) % len(l.intakes)
		first := l.seq.Add(uint64(events)) - uint64(events)
		micros := time.Since(start).Microseconds()
		invalid := make([]bool, events)
		if mode == "beacon" {
			var bad bool
			body, _, bad = l.gen.Event(body[:0], rng, first, micros)
			invalid[0] = bad
			target = append(append(target[:0], l.intakes[intake]...), "/beacon/event?"...)
			target = append(appendURIComponent(target, body), ';')
		} else {
			body = append(body[:0], '[')
			for i := range events {
				if i > 0 {
					body = append(body, ',')
				}
				var bad bool
				body, _, bad = l.gen.Event(body, rng, first+uint64(i), micros)
				invalid[i] = bad
			}
			body = append(body, ']')
			target = append(append(target[:0], l.intakes[intake]...), "/v1/events"...)
			if mode == "hasty" {
				target = append(target, "?hasty=true"...)
			}
		}
		l.send(ctx, mode, string(target), body, first, invalid, intake)
	}
}

// send makes one request and logs the outcome of each of its events.
func (l *load) send(ctx context.Context, mode, target string, body []byte, first uint64, invalid []bool, intake int) {
	method, rd := http.MethodGet, io.Reader(nil)
	if mode == "post" || mode == "hasty" {
		method, rd = http.MethodPost, bytes.NewReader(body)
	}
	// Not ctx: a request under way when the load stops is answered, so
	// its events' fate is known.
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), method, target, rd)
	if err != nil {
		return
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	acks := make([]ack, len(invalid))
	for i := range acks {
		acks[i] = ack{Seq: first + uint64(i), Mode: mode, Invalid: invalid[i], Intake: intake + 1}
	}
	resp, err := l.hc.Do(req)
	if err == nil {
		answer, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		for i := range acks {
			acks[i].Status = resp.StatusCode
		}
		switch {
		case (mode == "beacon" || mode == "probe") && resp.StatusCode == http.StatusNoContent,
			mode == "hasty" && resp.StatusCode == http.StatusAccepted:
			for i := range acks {
				acks[i].Acked = true
			}
		case mode == "post" && (resp.StatusCode == http.StatusCreated || resp.StatusCode == http.StatusMultiStatus || resp.StatusCode == http.StatusBadRequest):
			var a struct {
				Events []struct {
					Index  int    `json:"index"`
					Status string `json:"status"`
					UUID   string `json:"uuid"`
				} `json:"events"`
			}
			if json.Unmarshal(answer, &a) == nil {
				for _, e := range a.Events {
					if e.Index >= 0 && e.Index < len(acks) {
						acks[e.Index].Acked, acks[e.Index].UUID, acks[e.Index].Answer = true, e.UUID, e.Status
					}
				}
			}
		}
	}
	var n int64
	l.outMu.Lock()
	for _, a := range acks {
		b, _ := json.Marshal(a)
		_, _ = l.out.Write(append(b, '\n'))
		if a.Acked {
			n++
		}
	}
	l.outMu.Unlock()
	l.sent.Add(int64(len(acks)))
	l.acked.Add(n)
	l.failed.Add(int64(len(acks)) - n)
}

// probes sends, until ctx ends, a beacon every 200 ms of a revision of
// Generic the registry does not have yet (probeRevision): the processors
// turn them into EventErrors until `schema push` registers the revision and
// `replay` re-submits them; then they must reach every sink once.
func (l *load) probes(ctx context.Context, runID string) {
	var target []byte
	for n := 0; ctx.Err() == nil; n++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
		seq := l.seq.Add(1) - 1
		ev := fmt.Sprintf(`{"schema":"Generic","revision":%d,"wiki":"soakwiki","webHost":"%s%d-0","event":{"articleId":%d,"articleTitle":"probe","soakNote":"pushed mid-run"}}`,
			probeRevision, loadgen.MarkerPrefix(runID), seq, seq)
		intake := n % len(l.intakes)
		target = append(append(target[:0], l.intakes[intake]...), "/beacon/event?"...)
		target = append(appendURIComponent(target, []byte(ev)), ';')
		l.send(ctx, "probe", string(target), nil, seq, []bool{false}, intake)
	}
}

// probeRevision is the revision of Generic pushed during the run.
const probeRevision = 900013

// probeSchema is its schema: Generic/13 and one more property.
const probeSchema = `{
  "description": "Generic and a note: the revision scripts/soak.sh pushes mid-run",
  "properties": {
    "articleId": {"type": "integer", "required": true},
    "articleTitle": {"type": "string", "required": true},
    "soakNote": {"type": "string"}
  }
}
`

// String summarises the counts.
func (l *load) String() string {
	return fmt.Sprintf("%d events sent, %d acknowledged, %d not", l.sent.Load(), l.acked.Load(), l.failed.Load())
}

// appendURIComponent percent-encodes s as JavaScript's encodeURIComponent
// does (what the browser client sends).
func appendURIComponent(dst, s []byte) []byte {
	const hexDigits = "0123456789ABCDEF"
	for _, c := range s {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '-' || c == '_' || c == '.' || c == '!' || c == '~' || c == '*' || c == '\'' || c == '(' || c == ')':
			dst = append(dst, c)
		default:
			dst = append(dst, '%', hexDigits[c>>4], hexDigits[c&15])
		}
	}
	return dst
}
