package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/testsupport"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestDashboardUnderLoad: a standalone with 100 schemas is offered 10,000
// beacons/s (100 paced clients) while the dashboard's pages are read. On
// the 2-core test machine, generator, intake, processor, both sinks and the
// embedded broker share the cores and about 6,500/s get through (the file
// sink, with 600 partition files over 32 open, dominates); the test
// requires at least 4,000/s and logs the rate reached. Dashboard requests
// after a first read of each page are served in under 500 ms (server time,
// from the standalone's own eventlogging_http_request_duration_seconds; at
// least 98 %, and all under 1 s, when other jobs share the cores), and a
// live tail of the mixed topic read by a slow client drops frames instead
// of queueing them.
func TestDashboardUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test: skipped with -short")
	}
	if raceEnabled {
		t.Skip("load test: not meaningful under -race; scripts/test.sh runs it without -race in a pass of its own")
	}
	schemas := filepath.Join(t.TempDir(), "schemas")
	const nSchemas = 100
	for i := range nSchemas {
		dir := filepath.Join(schemas, fmt.Sprintf("Load%03d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		doc := fmt.Sprintf(`{"title":"Load%03d","type":"object","properties":{"button":{"type":"string","enum":["save","cancel"]},"page":{"type":"string"},"count":{"type":"integer","minimum":0}},"required":["button","page"],"examples":[{"button":"save","page":"Main_Page","count":1}]}`, i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.json", 5000+i)), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, base := startStandalone(t, nil, filepath.Join(t.TempDir(), "data"), "--schemas", schemas)

	// 10,000 events/s for the test's duration: 100 paced clients, one
	// event in 20 invalid (count < 0), over the 100 schemas.
	ctx, stop := context.WithCancel(t.Context())
	var sent, failed atomic.Int64
	var load sync.WaitGroup
	const clients, perClient = 100, 100 // events/s
	for c := range clients {
		load.Go(func() {
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}, Timeout: 10 * time.Second}
			tick := time.NewTicker(time.Second / perClient)
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				count := i
				if i%20 == 0 {
					count = -1
				}
				capsule := fmt.Sprintf(`{"schema":"Load%03d","revision":%d,"event":{"button":"save","page":"P%d","count":%d},"webHost":"load.test","wiki":"testwiki"}`, (c*perClient+i)%nSchemas, 5000+(c*perClient+i)%nSchemas, c, count)
				status, ok := getBeacon(ctx, hc, base, capsule)
				if !ok {
					if ctx.Err() == nil {
						failed.Add(1)
					}
					continue
				}
				if status != http.StatusNoContent {
					failed.Add(1)
				}
				sent.Add(1)
			}
		})
	}
	defer func() {
		stop()
		load.Wait()
	}()

	// The dashboard lists the mixed topic (every valid event) once the
	// processor created it and the metadata is fresh; never the raw topic,
	// whose lines hold client IPs (IP policy hash, the default).
	var topicsJSON string
	waitFor(t, 30*time.Second, "the mixed topic on the dashboard", func() bool {
		_, topicsJSON, _ = get(t.Context(), base+"/dashboard/api/topics")
		return strings.Contains(topicsJSON, `"eventlogging-valid-mixed"`)
	})
	if strings.Contains(topicsJSON, `"eventlogging-client-side"`) {
		t.Errorf("the dashboard offers the raw topic (client IPs) under IP policy hash: %s", topicsJSON)
	}

	// A slow live-tail reader of the mixed topic: 512 bytes every 100 ms
	// while the load runs, then as fast as it can until the server's
	// report of dropped frames reaches it (the socket buffers hold
	// megabytes of frames written before the server started dropping).
	slow := make(chan struct{})
	var dropped, frames atomic.Int64
	var tailStatus atomic.Value
	var tail sync.WaitGroup
	tail.Go(func() {
		tctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(tctx, http.MethodGet, base+"/dashboard/api/tail?topic=eventlogging-valid-mixed", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			tailStatus.Store(err.Error())
			return
		}
		defer resp.Body.Close()
		tailStatus.Store(resp.Status)
		br := bufio.NewReaderSize(resp.Body, 512)
		event := ""
		for dropped.Load() == 0 {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimSpace(strings.TrimPrefix(line, "event: "))
			case strings.HasPrefix(line, "data: ") && event == "":
				frames.Add(1)
			case strings.HasPrefix(line, "data: ") && event == "dropped":
				var n int64
				fmt.Sscan(strings.TrimPrefix(line, "data: "), &n)
				dropped.Store(n)
			case line == "\n":
				event = ""
				select {
				case <-slow:
				case <-time.After(100 * time.Millisecond): // the slow reader under test, not synchronisation
				}
			}
		}
	})

	// Read every page once (its first request may fetch from the registry
	// and load templates), then repeatedly for 15 s under the load; the
	// server-time check below counts the requests of those 15 s.
	pages := []string{"/dashboard/", "/dashboard/api/overview", "/dashboard/schemas", "/dashboard/schemas/Load050",
		"/dashboard/errors", "/dashboard/errors?schema=Load007", "/dashboard/tail", "/dashboard/api/topics"}
	first := map[string]time.Duration{}
	for _, p := range pages {
		start := time.Now()
		if status, _, err := get(t.Context(), base+p); err != nil || status != http.StatusOK {
			t.Fatalf("GET %s under load: %d, %v", p, status, err)
		}
		first[p] = time.Since(start)
	}
	t.Logf("first answer per page (client side): %v", first)
	before := dashboardServerTimes(t, base)
	deadline := time.Now().Add(15 * time.Second)
	reads := 0
	slowest := map[string]time.Duration{}
	for time.Now().Before(deadline) {
		for _, p := range pages {
			start := time.Now()
			status, _, err := get(t.Context(), base+p)
			if err != nil {
				t.Fatalf("GET %s: %v", p, err)
			}
			if status != http.StatusOK {
				t.Fatalf("GET %s under load: %d", p, status)
			}
			reads++
			slowest[p] = max(slowest[p], time.Since(start))
		}
	}
	t.Logf("slowest answer per page (client side): %v", slowest)
	elapsed := 15.0
	stop()
	load.Wait()
	close(slow)
	tail.Wait()
	rate := float64(sent.Load()) / elapsed
	t.Logf("load: %d beacons (%.0f/s), %d failed; %d dashboard reads; live tail (%v) got %d frames, dropped %d", sent.Load(), rate, failed.Load(), reads, tailStatus.Load(), frames.Load(), dropped.Load())
	if rate < 4000 {
		t.Errorf("the load reached %.0f beacons/s, want at least 4,000 of the 10,000 offered", rate)
	}
	if failed.Load() > 0 {
		t.Errorf("%d beacons failed under load", failed.Load())
	}
	if dropped.Load() == 0 || frames.Load()+dropped.Load() > sent.Load() {
		t.Errorf("slow live-tail client: %d frames received, %d reported dropped, %d events sent: want frames dropped, not queued without bound", frames.Load(), dropped.Load(), sent.Load())
	}

	// Server time of the dashboard requests of the 15 s (and of the live
	// tail, which ended since), from the histogram.
	after := dashboardServerTimes(t, base)
	total, under, underSecond := after.total-before.total, after.under-before.under, after.underSecond-before.underSecond
	// The live-tail request lasts the whole test: it is the one allowed
	// to take longer. On a quiet machine every request is under 500 ms
	// (311 of 311 measured); with other jobs on the same 2 cores at least
	// 98 % under 500 ms and all under 1 s.
	if total < uint64(reads) || underSecond+1 < total || float64(under) < 0.98*float64(total-1) {
		t.Errorf("dashboard server time: %d of %d requests took 500 ms or more, %d took 1 s or more", total-under, total, total-underSecond)
	}
	t.Logf("dashboard: %d requests, %d under 500 ms server time", total, under)
}

// serverTimes counts dashboard requests by server time.
type serverTimes struct{ total, under, underSecond uint64 }

// dashboardServerTimes reads the standalone's
// eventlogging_http_request_duration_seconds for handler "dashboard":
// requests in all, under 500 ms and under 1 s.
func dashboardServerTimes(t *testing.T, base string) serverTimes {
	t.Helper()
	_, page, err := get(t.Context(), base+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	fam := families["eventlogging_http_request_duration_seconds"]
	if fam == nil {
		t.Fatal("no eventlogging_http_request_duration_seconds in /metrics")
	}
	var st serverTimes
	for _, m := range fam.GetMetric() {
		handler := ""
		for _, l := range m.GetLabel() {
			if l.GetName() == "handler" {
				handler = l.GetValue()
			}
		}
		if handler != "dashboard" {
			continue
		}
		h := m.GetHistogram()
		st.total += h.GetSampleCount()
		for _, b := range h.GetBucket() {
			switch b.GetUpperBound() {
			case 0.5:
				st.under += b.GetCumulativeCount()
			case 1:
				st.underSecond += b.GetCumulativeCount()
			}
		}
	}
	return st
}

// waitFor polls cond until it holds, failing the test after timeout.
var waitFor = testsupport.WaitFor
