package e2e

// The load of the reliability tests and the verdict on what it delivered.

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// sender offers beacons (or hasty batches) at a steady rate, or as fast as
// its clients go, and records the answer to every event by its id (the
// event's articleId; its wiki is the run's marker).
type sender struct {
	base, run string
	clients   int
	rate      float64 // events/s over all clients; 0: as fast as they go
	batch     int     // >1: POST /v1/events?hasty=true with this many events
	status    []uint16
	answered  []int32 // per event: ms after start when the answer came
	next      atomic.Int64
	acked     atomic.Int64
	refused   atomic.Int64
	start     time.Time
	lat       [][]int32 // per client, µs

	noRetryAfter atomic.Int64
	halted       atomic.Bool
}

// halt stops the sender after the requests in flight.
func (s *sender) halt() { s.halted.Store(true) }

// Answers recorded per event id, beside the HTTP status codes.
const (
	notSent       = 0
	transportFail = 1
)

// newSender returns a sender whose clock (the pacing and the samples'
// times) starts now; offer right after.
func newSender(base, run string, clients int, rate float64, capacity int) *sender {
	return &sender{start: time.Now(), base: base, run: run, clients: clients, rate: rate, batch: 1, status: make([]uint16, capacity), answered: make([]int32, capacity), lat: make([][]int32, clients)}
}

func (s *sender) event(i int) string {
	return fmt.Sprintf(`{"event":{"articleId":%d,"articleTitle":"%s"},"revision":13,"schema":"Generic","webHost":"reliability.test","wiki":%q}`, i, s.run, s.run)
}

// offerInBackground offers for d in a goroutine, stopped when the test
// ends; the channel is closed once it stopped.
func (s *sender) offerInBackground(t *testing.T, d time.Duration) <-chan struct{} {
	ctx, stop := context.WithCancel(t.Context())
	t.Cleanup(stop)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.offer(ctx, d)
	}()
	return done
}

// offer sends until ctx is done, d has passed or the ids are used up.
func (s *sender) offer(ctx context.Context, d time.Duration) {
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for c := range s.clients {
		wg.Go(func() { s.client(ctx, c, end) })
	}
	wg.Wait()
}

func (s *sender) client(ctx context.Context, c int, end time.Time) {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}, Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	for ctx.Err() == nil && !s.halted.Load() {
		first := int(s.next.Add(int64(s.batch))) - s.batch
		if first+s.batch > len(s.status) {
			return
		}
		due := time.Now()
		if s.rate > 0 {
			due = s.start.Add(time.Duration(float64(first) / s.rate * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(d): // pacing the offered load
				}
			}
		}
		if due.After(end) || time.Now().After(end) {
			return
		}
		t0 := time.Now()
		code := s.send(ctx, hc, first)
		s.lat[c] = append(s.lat[c], int32(min(time.Since(t0).Microseconds(), 1<<31-1)))
		at := int32(time.Since(s.start).Milliseconds())
		for i := first; i < first+s.batch; i++ {
			s.status[i], s.answered[i] = code, at
		}
		switch code {
		case http.StatusNoContent, http.StatusAccepted:
			s.acked.Add(int64(s.batch))
		case http.StatusServiceUnavailable:
			s.refused.Add(int64(s.batch))
		}
	}
}

func (s *sender) send(ctx context.Context, hc *http.Client, first int) uint16 {
	var req *http.Request
	if s.batch <= 1 {
		req, _ = http.NewRequestWithContext(ctx, http.MethodGet, beaconURL(s.base, s.event(first)), nil)
	} else {
		var b strings.Builder
		b.WriteByte('[')
		for i := first; i < first+s.batch; i++ {
			if i > first {
				b.WriteByte(',')
			}
			b.WriteString(s.event(i))
		}
		b.WriteByte(']')
		req, _ = http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/v1/events?hasty=true", strings.NewReader(b.String()))
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return transportFail
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
		s.noRetryAfter.Add(1)
	}
	return uint16(resp.StatusCode)
}

// sent is the number of events offered (answered or not).
func (s *sender) sent() int {
	n := 0
	for _, c := range s.status[:min(int(s.next.Load()), len(s.status))] {
		if c != notSent {
			n++
		}
	}
	return n
}

func (s *sender) isAcked(i int) bool {
	return s.status[i] == http.StatusNoContent || s.status[i] == http.StatusAccepted
}

// summary describes the answers: counts per status and latency quantiles.
func (s *sender) summary() string {
	codes := map[uint16]int{}
	for _, c := range s.status {
		if c != notSent {
			codes[c]++
		}
	}
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(codes)) {
		name := strconv.Itoa(int(c))
		if c == transportFail {
			name = "no answer"
		}
		parts = append(parts, fmt.Sprintf("%s: %d", name, codes[c]))
	}
	q := s.latencyQuantile
	return fmt.Sprintf("%d events offered (%s); request latency p50 %v, p99 %v, max %v",
		s.sent(), strings.Join(parts, ", "), q(0.5), q(0.99), q(1))
}

// latencyQuantile is the p-quantile of the request latencies.
func (s *sender) latencyQuantile(p float64) time.Duration {
	var all []int32
	for _, l := range s.lat {
		all = append(all, l...)
	}
	if len(all) == 0 {
		return 0
	}
	slices.Sort(all)
	return time.Duration(all[min(len(all)-1, int(p*float64(len(all))))]) * time.Microsecond
}

// delivery is the verdict on the acknowledged events of a sender.
type delivery struct {
	offered, acked, stored, lost, duplicated, unackedStored int
	lostIDs                                                 []int
	waited                                                  time.Duration
}

func (d delivery) String() string {
	return fmt.Sprintf("offered %d, acknowledged %d, stored %d distinct, lost %d, duplicated in SQL %d, stored without acknowledgement %d (checked %v after the load)",
		d.offered, d.acked, d.stored, d.lost, d.duplicated, d.unackedStored, d.waited.Round(time.Second))
}

// storedCounts maps each articleId of the run to its number of rows.
func storedCounts(ctx context.Context, db *sql.DB, run string) (map[int]int, error) {
	return articleCounts(ctx, db, `SELECT event_articleId, count(*) FROM "Generic_13" WHERE wiki = ? GROUP BY event_articleId`, run)
}

// articleCounts runs query (articleId, count pairs of the run) into a map.
func articleCounts(ctx context.Context, db *sql.DB, query, run string) (map[int]int, error) {
	rows, err := db.QueryContext(ctx, query, run)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	got := map[int]int{}
	for rows.Next() {
		var id, n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, err
		}
		got[id] = n
	}
	return got, rows.Err()
}

// ackedIDs are the events s sent that were acknowledged.
func (s *sender) ackedIDs() []int {
	var acked []int
	for i := range s.status {
		if s.isAcked(i) {
			acked = append(acked, i)
		}
	}
	return acked
}

// verdict compares what was stored (got) with what s sent and had
// acknowledged.
func (s *sender) verdict(got map[int]int, acked []int, start time.Time) delivery {
	d := delivery{offered: s.sent(), acked: len(acked), stored: len(got), waited: time.Since(start)}
	for _, i := range acked {
		if got[i] == 0 {
			d.lost++
			d.lostIDs = append(d.lostIDs, i)
		}
	}
	for i, n := range got {
		if n > 1 {
			d.duplicated++
		}
		if i < 0 || i >= len(s.status) || !s.isAcked(i) {
			d.unackedStored++
		}
	}
	return d
}

// missing counts the acknowledged events not in got.
func missing(got map[int]int, acked []int) int {
	n := 0
	for _, i := range acked {
		if got[i] == 0 {
			n++
		}
	}
	return n
}

// waitStored polls SQL until every event s acknowledged is stored, or the
// pipeline is idle (no row added for 5 s and drained reports nothing in
// flight, or no row added for a minute: what is missing is lost), or
// timeout; it returns the verdict.
func waitStored(t *testing.T, db *sql.DB, s *sender, timeout time.Duration, drained func() bool) delivery {
	t.Helper()
	const quiet = time.Minute
	start := time.Now()
	acked := s.ackedIDs()
	var (
		got      map[int]int
		lastMax  int64 = -1
		lastMove       = time.Now()
	)
	for {
		var maxID int64
		_ = db.QueryRowContext(t.Context(), `SELECT coalesce(max(id), 0) FROM "Generic_13"`).Scan(&maxID)
		if maxID != lastMax {
			lastMax, lastMove = maxID, time.Now()
		}
		idle := time.Since(lastMove) > quiet || (time.Since(lastMove) > 5*time.Second && drained())
		if maxID >= int64(len(acked)) || idle || time.Since(start) > timeout {
			var err error
			got, err = storedCounts(t.Context(), db, s.run)
			if err != nil && (idle || time.Since(start) > timeout) {
				t.Fatalf("reading SQL: %v", err)
			}
			if missing(got, acked) == 0 || idle || time.Since(start) > timeout {
				break
			}
		}
		time.Sleep(500 * time.Millisecond) // polling interval
	}
	return s.verdict(got, acked, start)
}

// check fails the test when an acknowledged event is missing or stored twice.
func (d delivery) check(t *testing.T) {
	t.Helper()
	if d.lost > 0 || d.duplicated > 0 {
		t.Errorf("%v; first lost ids %v", d, d.lostIDs[:min(len(d.lostIDs), 20)])
	}
}
