package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browserTestPage is the page of the browser client test: before the
// module loads it sets the session token (sampling), for the DNT variant
// makes navigator.doNotTrack say '1', and wraps navigator.sendBeacon to
// note each call in sessionStorage (which outlives the page) — for the
// refuse variant, to refuse every call as a full beacon quota does; then it
// imports the client from the intake (another origin) and initialises it
// with a flush interval of 10 minutes, so that only the pagehide flush can
// send. Events go to url, a recording proxy in front of the intake.
const browserTestPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>eventlogging client test</title>
<script>
  sessionStorage.setItem('eventlogging.sessionToken', %q);
  if (%t) {
    Object.defineProperty(Navigator.prototype, 'doNotTrack', { get: () => '1', configurable: true });
  }
  const sendBeacon = navigator.sendBeacon.bind(navigator);
  navigator.sendBeacon = (url, body) => {
    const ok = %t ? false : sendBeacon(url, body);
    const calls = JSON.parse(sessionStorage.getItem('beacons') || '[]');
    calls.push({ url: String(url), ok, events: JSON.parse(body).length, page: location.search });
    sessionStorage.setItem('beacons', JSON.stringify(calls));
    return ok;
  };
</script>
<script type="module">
  import * as el from '%s/static/eventlogging.js';
  window.el = el;
  window.reported = [];
  el.init({ url: '%s', wiki: 'testwiki', dnt: 'respect', flushInterval: 600000, debug: true,
            onError: (e) => window.reported.push(e.code + ': ' + e.message) });
  window.ready = true;
</script>
</head><body><p>eventlogging browser client test page</p></body></html>`

// TestClientBrowser runs the browser client (served by the intake at
// /static/eventlogging.js, imported cross-origin) in Chromium: events of
// two legacy schemas and one sampled Event Platform stream, queued with a
// 10-minute flush interval, leave in one sendBeacon POST when the page
// navigates away (pagehide) and arrive valid in their topics; an event too
// large for the 2,000-character beacon URL is refused with an error; a
// session out of the stream's sample sends nothing; with Do-Not-Track
// nothing at all is sent; when sendBeacon refuses, the GET beacon and
// fetch(keepalive) deliver.
func TestClientBrowser(t *testing.T) {
	browser := chromium(t)
	p := startClientPipeline(t)
	navSchema, err := os.ReadFile("../../examples/schemas/NavigationTiming/7.json")
	if err != nil {
		t.Fatal(err)
	}

	// A recording proxy in front of the intake: every request the pages
	// make to the event URL, in order.
	type request struct{ method, url, contentType, fetchMode string }
	var (
		mu       sync.Mutex
		requests []request
	)
	target, err := url.Parse(p.base)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests = append(requests, request{r.Method, r.URL.RequestURI(), r.Header.Get("Content-Type"), r.Header.Get("Sec-Fetch-Mode")})
		mu.Unlock()
		rp.ServeHTTP(rw, r)
	}))
	defer proxy.Close()
	seen := func(path string) []request {
		mu.Lock()
		defer mu.Unlock()
		var out []request
		for _, r := range requests {
			if strings.HasPrefix(r.url, path) {
				out = append(out, r)
			}
		}
		return out
	}

	pages := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/page":
			rw.Header().Set("Content-Type", "text/html; charset=utf-8")
			q := r.URL.Query()
			_, _ = fmt.Fprintf(rw, browserTestPage, q.Get("token"), q.Get("dnt") == "1", q.Get("refuse") == "1", p.base, proxy.URL)
		case "/bye":
			_, _ = fmt.Fprint(rw, "<!doctype html><title>bye</title><p>another page</p>")
		default:
			http.NotFound(rw, r)
		}
	}))
	defer pages.Close()
	// Tokens: the first 8 hex digits / 2^32 against the sample rate 0.5.
	const inSample, outOfSample = "00000000aaaaaaaaaaaa", "ffffffffaaaaaaaaaaaa"

	ctx := browserContext(t, browser)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	var (
		consoleMu sync.Mutex
		console   []string
	)
	watchCtx, stopWatching := context.WithCancel(ctx)
	var watcher sync.WaitGroup
	messages := chromedp.Console(watchCtx)
	watcher.Go(func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			consoleMu.Lock()
			console = append(console, string(m.Type)+": "+m.Text)
			consoleMu.Unlock()
		}
	})
	defer func() {
		stopWatching()
		watcher.Wait()
	}()
	consoleHas := func(text string) bool {
		consoleMu.Lock()
		defer consoleMu.Unlock()
		return slices.ContainsFunc(console, func(s string) bool { return strings.Contains(s, text) })
	}

	waitJS := func(what, expr string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			t.Fatalf("waiting for %s (%s): %v", what, expr, err)
		}
	}
	open := func(u string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
			t.Fatalf("open %s: %v", u, err)
		}
		waitJS("the client to load", `window.ready === true || location.pathname === "/bye"`)
	}
	// run evaluates an async function body and decodes its JSON result.
	run := func(what, body string, out any) {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(async () => { `+body+` })().then(JSON.stringify)`, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if err := json.Unmarshal([]byte(s), out); err != nil {
			t.Fatalf("%s: %q: %v", what, s, err)
		}
	}

	// 1. Do-Not-Track: every call answers 'do-not-track'; a pagehide sends
	// nothing (checked with the proxy's log at the end).
	open(pages.URL + "/page?dnt=1&token=" + inSample)
	var dnt []string
	run("log with Do-Not-Track", `
		const out = [];
		out.push(await el.logEvent('NavigationTiming', 7, { responseStart: 4242, loadEventEnd: 4243 }));
		out.push(await el.logEvent('SearchQuery', 5, { query: 'dnt', results: 1, source: 'fulltext' }));
		out.push(await el.submit('analytics.search_satisfaction', { $schema: '/analytics/search_satisfaction/1.0.0', search_session_id: 'dntdntdntdnt', action: 'click' }));
		out.push(String(el.pending()));
		dispatchEvent(new PageTransitionEvent('pagehide'));
		await el.flush();
		return out;`, &dnt)
	if want := []string{"do-not-track", "do-not-track", "do-not-track", "0"}; !slices.Equal(dnt, want) {
		t.Errorf("with Do-Not-Track: %q, want %q", dnt, want)
	}
	open(pages.URL + "/bye") // a real pagehide

	// 2. A session out of the stream's sample (rate 0.5): sampled out.
	open(pages.URL + "/page?token=" + outOfSample)
	var sampled string
	run("submit out of sample", `return await el.submit('analytics.search_satisfaction', { $schema: '/analytics/search_satisfaction/1.0.0', search_session_id: 'outoutoutout', action: 'click' });`, &sampled)
	if sampled != "sampled-out" {
		t.Errorf("out-of-sample session: %q, want sampled-out", sampled)
	}
	open(pages.URL + "/bye")

	// 3. The main page: 3 NavigationTiming, 2 SearchQuery, 1 Event Platform
	// event in sample, 1 event invalid by the registered schema (debug: a
	// console error; still sent, the intake records the EventError), and
	// one too large (refused, never sent).
	open(pages.URL + "/page?token=" + inSample)
	var res struct {
		Nav, Search []string
		EP, Invalid string
		Oversized   string
		Pending     int
		Reported    []string
	}
	run("log the events", fmt.Sprintf(`
		const out = {};
		out.nav = await Promise.all([1, 2, 3].map((i) => el.logEvent('NavigationTiming', 7, { responseStart: 100 + i, loadEventEnd: 900 + i, isHttps: true, mobileMode: 'stable' })));
		out.search = await Promise.all([1, 2].map((i) => el.logEvent('SearchQuery', 5, { query: 'browser ' + i, results: i, source: 'fulltext' })));
		out.ep = await el.submit('analytics.search_satisfaction', { $schema: '/analytics/search_satisfaction/1.0.0', search_session_id: 'abcdef0123456789', action: 'searchResultPage', query: 'kafka', hits_returned: 20 });
		try {
			await el.logEvent('NavigationTiming', 7, { responseStart: 1, loadEventEnd: 2, mobileMode: 'x'.repeat(3000) });
			out.oversized = 'queued';
		} catch (e) {
			out.oversized = e.name + ' ' + e.code + ': ' + e.message;
		}
		el.registerSchema('NavigationTiming', 7, %s);
		out.invalid = await el.logEvent('NavigationTiming', 7, { responseStart: 'fast', loadEventEnd: 5 });
		out.pending = el.pending();
		out.reported = window.reported;
		return out;`, navSchema), &res)
	if !slices.Equal(res.Nav, []string{"queued", "queued", "queued"}) || !slices.Equal(res.Search, []string{"queued", "queued"}) || res.EP != "queued" || res.Invalid != "queued" {
		t.Errorf("outcomes: %+v", res)
	}
	if !strings.Contains(res.Oversized, "EventLoggingError too-large") || !strings.Contains(res.Oversized, "2000-character limit") {
		t.Errorf("the oversized event: %q, want a rejected promise with a too-large EventLoggingError", res.Oversized)
	}
	if len(res.Reported) != 1 || !strings.HasPrefix(res.Reported[0], "too-large: ") {
		t.Errorf("onError got %q, want the oversized event's error", res.Reported)
	}
	if res.Pending != 7 {
		t.Errorf("%d events queued, want 7", res.Pending)
	}
	deadline := time.Now().Add(10 * time.Second)
	for (!consoleHas("/responseStart") || !consoleHas("2000-character limit")) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // polling interval: console events arrive asynchronously
	}
	if !consoleHas("/responseStart") || !consoleHas("2000-character limit") {
		consoleMu.Lock()
		t.Errorf("debug mode: want console errors for the invalid event (/responseStart) and the oversized one; console: %q", console)
		consoleMu.Unlock()
	}
	if got := seen("/v1/events"); len(got) != 0 {
		t.Fatalf("events were sent before the page was hidden (flush interval 10 min): %+v", got)
	}

	// Navigating away fires pagehide: one sendBeacon call carries the queue.
	open(pages.URL + "/bye")
	var beacons []struct {
		URL    string
		OK     bool
		Events int
		Page   string
	}
	run("read the sendBeacon log", `return JSON.parse(sessionStorage.getItem('beacons') || '[]');`, &beacons)
	if len(beacons) != 1 || beacons[0].URL != proxy.URL+"/v1/events?hasty=true" || !beacons[0].OK || beacons[0].Events != 7 || beacons[0].Page != "?token="+inSample {
		t.Errorf("sendBeacon calls %+v, want one of 7 events from the main page to /v1/events?hasty=true", beacons)
	}

	// Every event arrives valid in its topic.
	nav := p.read(t, p.topic("NavigationTiming"), 3)
	var starts []float64
	for _, c := range nav {
		starts = append(starts, recordField(c, "event.responseStart").(float64))
		if c["schema"] != "NavigationTiming" || c["revision"] != 7.0 || c["wiki"] != "testwiki" || c["webHost"] != "127.0.0.1" || c["uuid"] == "" ||
			!strings.Contains(fmt.Sprint(c["userAgent"]), "Chrome") {
			t.Errorf("NavigationTiming capsule %v", c)
		}
	}
	slices.Sort(starts)
	if !slices.Equal(starts, []float64{101, 102, 103}) {
		t.Errorf("NavigationTiming events: responseStart %v, want 101..103 (none from the Do-Not-Track page)", starts)
	}
	for _, c := range p.read(t, p.topic("SearchQuery"), 2) {
		if q := recordField(c, "event.query"); q != "browser 1" && q != "browser 2" {
			t.Errorf("SearchQuery capsule %v", c)
		}
	}
	ep := p.read(t, p.topic("analytics.search_satisfaction"), 1)[0]
	if recordField(ep, "meta.stream") != "analytics.search_satisfaction" || ep["search_session_id"] != "abcdef0123456789" || ep["$schema"] != "/analytics/search_satisfaction/1.0.0" {
		t.Errorf("Event Platform event %v", ep)
	}
	if dt, _ := ep["dt"].(string); dt == "" {
		t.Errorf("the client set no dt: %v", ep)
	} else if _, err := time.Parse(time.RFC3339Nano, dt); err != nil {
		t.Errorf("dt %q: %v", dt, err)
	}
	ee := p.read(t, p.topic("EventError"), 1)[0]
	if b, _ := json.Marshal(ee); recordField(ee, "event.code") != "validation" || !strings.Contains(string(b), "responseStart") {
		t.Errorf("EventError of the invalid event: %s", b)
	}

	// What the pages sent, by the proxy's log: the main page's one POST (a
	// sendBeacon: text/plain, no-cors), the stream configuration for the
	// out-of-sample and main pages — nothing from the Do-Not-Track page,
	// whose pagehide came before the main page's.
	posts := seen("/v1/events")
	if len(posts) != 1 || posts[0].method != http.MethodPost || posts[0].url != "/v1/events?hasty=true" ||
		!strings.HasPrefix(posts[0].contentType, "text/plain") || posts[0].fetchMode != "no-cors" {
		t.Errorf("POSTs of events %+v, want one sendBeacon (text/plain, no-cors) to /v1/events?hasty=true", posts)
	}
	if got := seen("/v1/streams"); len(got) != 2 {
		t.Errorf("%d stream configuration requests, want 2 (none under Do-Not-Track): %+v", len(got), got)
	}
	if got := seen("/beacon/"); len(got) != 0 {
		t.Errorf("GET beacons %+v, want none (sendBeacon worked)", got)
	}
	// And nothing more arrived: no event of the Do-Not-Track or
	// out-of-sample pages, no oversized event.
	if n := len(p.read(t, p.topic("NavigationTiming"), 0)); n != 3 {
		t.Errorf("NavigationTiming holds %d events, want 3", n)
	}
	if n := len(p.read(t, p.topic("analytics.search_satisfaction"), 0)); n != 1 {
		t.Errorf("analytics.search_satisfaction holds %d events, want 1", n)
	}

	// 4. sendBeacon refuses (its quota used up): at pagehide the legacy
	// event takes the GET beacon and the Event Platform event a
	// fetch(keepalive) POST; both arrive.
	open(pages.URL + "/page?refuse=1&token=" + inSample)
	var fallback []string
	run("log with sendBeacon refusing", `return [
		await el.logEvent('NavigationTiming', 7, { responseStart: 201, loadEventEnd: 1201 }),
		await el.submit('analytics.search_satisfaction', { $schema: '/analytics/search_satisfaction/1.0.0', search_session_id: 'fallbackfallback', action: 'click', position: 3 })];`, &fallback)
	if !slices.Equal(fallback, []string{"queued", "queued"}) {
		t.Errorf("outcomes with sendBeacon refusing: %q", fallback)
	}
	open(pages.URL + "/bye")
	if starts := p.read(t, p.topic("NavigationTiming"), 4); !slices.ContainsFunc(starts, func(c map[string]any) bool { return recordField(c, "event.responseStart") == 201.0 }) {
		t.Errorf("the GET beacon's event is not in NavigationTiming: %v", starts)
	}
	if eps := p.read(t, p.topic("analytics.search_satisfaction"), 2); !slices.ContainsFunc(eps, func(c map[string]any) bool { return c["search_session_id"] == "fallbackfallback" }) {
		t.Errorf("the fetch(keepalive) event is not in analytics.search_satisfaction: %v", eps)
	}
	if got := seen("/beacon/event?"); len(got) != 1 || got[0].method != http.MethodGet || !strings.HasSuffix(got[0].url, ";") {
		t.Errorf("GET beacons %+v, want one /beacon/event?<json>;", got)
	}
	if posts := seen("/v1/events"); len(posts) != 2 || posts[1].fetchMode != "cors" || posts[1].url != "/v1/events?hasty=true" {
		t.Errorf("POSTs %+v, want the fetch(keepalive) POST (cors) after the sendBeacon one", posts)
	}
}
