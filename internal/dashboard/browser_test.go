package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/testsupport"

	"github.com/chromedp/chromedp"

	"github.com/eventlogging/eventlogging/internal/httpauth"
	"github.com/eventlogging/eventlogging/internal/inspect"
)

// browserBackend changes between calls, so that the page's scripts have
// something to show: every Overview counts up and, from the second on,
// reports one more stream; Tail sends the records the test asks for.
type browserBackend struct {
	*fakeBackend
	calls   atomic.Int64
	batches chan int // Tail sends this many records
}

func (b *browserBackend) Overview(ctx context.Context) (inspect.Overview, error) {
	n := b.calls.Add(1)
	o, err := b.fakeBackend.Overview(ctx)
	o.ValidRate += float64(n)
	o.Roles = slices.Clone(o.Roles)
	if n > 1 {
		o.Streams = append(slices.Clone(o.Streams), inspect.StreamStats{Topic: "eventlogging_New", Kind: "schema", Total: 5, Rate: 1, Recent: []float64{0, 1}})
		o.Roles[1].Healthy = true
	}
	return o, err
}

func (b *browserBackend) Tail(ctx context.Context, topic string, fn func(inspect.TailEvent) error) error {
	var next int64
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case n := <-b.batches:
			for range n {
				ev := inspect.TailEvent{Topic: topic, Offset: next, Time: testNow, Value: fmt.Appendf(nil, `{"n":%d}`, next)}
				if err := fn(ev); err != nil {
					return err
				}
				next++
			}
		}
	}
}

// TestBrowser runs the pages and their scripts in Chromium under the
// handler's Content-Security-Policy: the overview refreshes, the live tail
// renders, pauses and filters, a refused replay shows the refusal (the 403
// of internal/httpauth in front of the handler) and a replay its result,
// and no page logs an error or a CSP violation.
func TestBrowser(t *testing.T) {
	chromium := testsupport.Chromium(t)
	b := &browserBackend{fakeBackend: newFake(), batches: make(chan int)}
	h := newTestHandler(t, b, Config{Prefix: "/dashboard", TailBuffer: 1024})
	// Replays are refused (by a guard that admits nobody) until refuse is
	// cleared.
	var refuse atomic.Bool
	refuse.Store(true)
	nobody := httpauth.New(httpauth.Config{What: "replays"}).Handler(h)
	mux := http.NewServeMux()
	mux.Handle("/dashboard/", http.StripPrefix("/dashboard", http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/replay" && refuse.Load() {
			nobody.ServeHTTP(rw, r)
			return
		}
		h.ServeHTTP(rw, r)
	})))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	base := srv.URL + "/dashboard"

	ctx := testsupport.Browser(t, chromium, 2*time.Minute)

	// Collect what the pages write to the console.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	var (
		mu       sync.Mutex
		problems []string
	)
	consoleCtx, stopConsole := context.WithCancel(ctx)
	messages := chromedp.Console(consoleCtx)
	var consoleDone sync.WaitGroup
	consoleDone.Go(func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			expected := strings.Contains(m.Text, "status of 403") || strings.Contains(m.URL, "favicon")
			if (m.Type == chromedp.ConsoleError || m.IsException() || m.Source == "security") && !expected {
				mu.Lock()
				problems = append(problems, fmt.Sprintf("%s %s:%d %s", m.Type, m.URL, m.Line+1, m.Text))
				mu.Unlock()
			}
		}
	})
	defer func() {
		stopConsole()
		consoleDone.Wait()
		for _, p := range problems {
			t.Errorf("console: %s", p)
		}
	}()

	run := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	eval := func(what, js string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return s
	}
	waitJS := func(what, predicate string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](predicate, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
			t.Fatalf("waiting for %s (%s): %v", what, predicate, err)
		}
	}

	// Overview: the script refreshes the numbers and adds the new stream.
	run("open the overview", chromedp.Navigate(base+"/"))
	first := eval("read #valid-rate", `document.getElementById("valid-rate").textContent`)
	waitJS("#valid-rate to refresh", fmt.Sprintf(`document.getElementById("valid-rate").textContent !== %q`, first))
	waitJS("the new stream row", `(document.querySelector('tr.stream[data-topic="eventlogging_New"] .total') || {}).textContent === "5"`)
	waitJS("sink-sql to turn healthy", `document.querySelector('li.role[data-role="sink-sql"]').classList.contains("healthy")`)
	if pts := eval("sparkline", `document.querySelector('tr.stream[data-topic="eventlogging_New"] polyline').getAttribute("points")`); pts != sparkPoints([]float64{0, 1}) {
		t.Errorf("refreshed sparkline %q, want %q as the server draws it", pts, sparkPoints([]float64{0, 1}))
	}

	// Live tail: at most 200 rows, newest first; pause keeps records
	// without rendering them; the filter matches the JSON.
	run("open the tail", chromedp.Navigate(base+"/tail?topic=eventlogging_NavigationTiming"))
	waitJS("the stream to open", `document.getElementById("tail-status").textContent === "live"`)
	send := func(n int) {
		t.Helper()
		select {
		case b.batches <- n:
		case <-ctx.Done():
			t.Fatal("the backend's Tail is not running")
		}
	}
	send(250)
	waitJS("200 rows, newest first", `document.querySelectorAll("#tail-rows tr.tail-row").length === 200 && document.querySelector("#tail-rows tr .offset").textContent === "249"`)
	run("pause", chromedp.Click(chromedp.ID("pause")))
	if got := eval("pause button", `document.getElementById("pause").textContent`); got != "Resume" {
		t.Errorf("pause button says %q", got)
	}
	send(10)
	waitJS("records received while paused", `document.getElementById("tail").dataset.received === "260"`)
	if top := eval("top row", `document.querySelector("#tail-rows tr .offset").textContent`); top != "249" {
		t.Errorf("paused tail rendered up to offset %s", top)
	}
	run("resume", chromedp.Click(chromedp.ID("pause")))
	waitJS("the kept records after resume", `document.querySelector("#tail-rows tr .offset").textContent === "259" && document.querySelectorAll("#tail-rows tr").length === 200`)
	run("filter", chromedp.SendKeys(chromedp.ID("filter"), `"n":255}`))
	waitJS("the filtered row", `document.querySelectorAll("#tail-rows tr").length === 1 && document.querySelector("#tail-rows tr .offset").textContent === "255"`)

	// Replay: refused, then done.
	run("open the errors", chromedp.Navigate(base+"/errors"),
		chromedp.Click(chromedp.CSS(`tr.error-row[data-uuid="u-1"] input.replay-select`)),
		chromedp.Click(chromedp.ID("replay-button")))
	waitJS("the refusal", `document.getElementById("replay-result").className === "failed" && document.getElementById("replay-result").textContent.includes("Not allowed: replays are open to the admin networks only")`)
	refuse.Store(false)
	run("replay again", chromedp.Click(chromedp.ID("replay-button")))
	waitJS("the replay result", `document.getElementById("replay-result").className === "ok" && document.getElementById("replay-result").dataset.replayed === "1"`)
	b.mu.Lock()
	replays := slices.Clone(b.replays)
	b.mu.Unlock()
	if len(replays) != 1 || !slices.Equal(replays[0], []string{"u-1"}) {
		t.Errorf("backend replayed %v, want [[u-1]]", replays)
	}

	// The highlighted event: the violation is marked, the hostile value
	// stays text.
	run("open an error", chromedp.Navigate(base+"/errors/u-1"))
	if got := eval("violation", `String(document.querySelector('#event-json span[data-path="/event/action"]').classList.contains("violation")) + " " + document.querySelectorAll("#event-json img").length`); got != "true 0" {
		t.Errorf("violation marked, images: %s; want true 0", got)
	}
}
