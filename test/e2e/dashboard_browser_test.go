package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/testsupport"

	"github.com/chromedp/chromedp"
)

// chromium finds the browser (testsupport.Chromium).
func chromium(t *testing.T) string { return testsupport.Chromium(t) }

// artifactDir is where the screenshots (PNG) go: $EVENTLOGGING_ARTIFACTS or a
// fresh folder under the temporary directory; it outlives the test.
func artifactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("EVENTLOGGING_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("eventlogging-dashboard-%s", time.Now().UTC().Format("20060102T150405")))
	}
	dir = filepath.Join(dir, "dashboard")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("dashboard screenshots: %s", dir)
	return dir
}

// browserContext is a context of the browser at path (with extra
// options) for 4 minutes at most, closed when the test ends.
func browserContext(t *testing.T, path string, extra ...chromedp.ExecAllocatorOption) context.Context {
	return testsupport.Browser(t, path, 4*time.Minute, extra...)
}

func postHasty(t *testing.T, base, body string) {
	t.Helper()
	code, b := request(t, http.MethodPost, base+"/v1/events?hasty=true", body, map[string]string{"Content-Type": "text/plain"})
	if code != http.StatusAccepted {
		t.Fatalf("hasty POST: %d %s %s", code, http.StatusText(code), b)
	}
}

// TestDashboardInChromium drives the dashboard of a standalone in real
// Chromium: counts change as events arrive, an invalid event shows its
// violation at its JSON path, and an event of a schema version that was
// missing is replayed after the version is registered and arrives valid.
func TestDashboardInChromium(t *testing.T) {
	browser := chromium(t)
	shots := artifactDir(t)

	// The schema folder without edit_funnel 1.1.0: events of that version
	// fail until it is registered.
	schemas, fixed := schemasWithoutEditFunnel11(t)

	_, base := startStandalone(t, []string{"EVENTLOGGING_PROCESS_NEGATIVE_CACHE_TTL=1s", "EVENTLOGGING_METRICS_LAG_INTERVAL=1s"},
		filepath.Join(t.TempDir(), "data"), "--schemas", schemas, "--streams", "../../examples/streams.yaml")

	ctx := browserContext(t, browser, chromedp.WindowSize(1280, 900))

	shot := func(name string) {
		t.Helper()
		buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(shots, name+".png"), buf, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	page := func() string {
		html, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("main") ? document.querySelector("main").outerHTML : ""`))
		return tail(html, 3000)
	}
	open := func(url string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
			t.Fatalf("open %s: %v", url, err)
		}
	}
	// waitJS polls a JavaScript condition until it is true.
	waitJS := func(what, expr string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(60*time.Second), chromedp.WithPollingInterval(250*time.Millisecond))); err != nil {
			shot("failed")
			t.Fatalf("waiting for %s (%s): %v\npage:\n%s", what, expr, err, page())
		}
	}
	eval := func(what, js string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
	click := func(what, css string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(css))); err != nil {
			t.Fatalf("click %s (%s): %v\npage:\n%s", what, css, err, page())
		}
	}
	total := func(topic string) string {
		return fmt.Sprintf(`(() => { const c = document.querySelector('tr.stream[data-topic=%q] td.total'); return c ? Number(c.textContent.replace(/[^0-9]/g, '')) : 0 })()`, topic)
	}

	// 1. The overview, open while the events arrive: the counts change
	// without a reload.
	open(base + "/dashboard/")
	waitJS("the overview", `!!document.getElementById("valid-rate")`)
	shot("1-overview-before")
	nav := `{"schema":"NavigationTiming","revision":7,"event":{"responseStart":80,"loadEventEnd":700},"webHost":"en.wikipedia.org","wiki":"enwiki"}`
	postHasty(t, base, "["+strings.Repeat(nav+",", 2)+nav+"]")
	// Invalid: "explode" is not an edit_funnel action (validation, at /action).
	postHasty(t, base, `[{"$schema":"/analytics/edit_funnel/1.0.0","meta":{"stream":"analytics.edit_funnel"},"action":"explode","editor":"visualeditor","session_token":"f3a9c2d4e5b6a7c8"}]`)
	// A version not registered yet (processor error: unknown schema).
	postHasty(t, base, `[{"$schema":"/analytics/edit_funnel/1.1.0","meta":{"stream":"analytics.edit_funnel"},"action":"save_success","editor":"wikitext","session_token":"a1b2c3d4e5f6a7b8","page_id":42,"edit_duration_ms":1234}]`)
	waitJS("3 NavigationTiming events on the overview", total("eventlogging_NavigationTiming")+" === 3")
	waitJS("2 EventErrors on the overview", total("eventlogging_EventError")+" === 2")
	waitJS("every role healthy", `document.querySelectorAll("ul#roles li.role.unhealthy").length === 0 && document.querySelectorAll("ul#roles li.role.healthy").length >= 4`)
	shot("2-overview-after")

	// 2. The invalid events: the validation error highlighted at /action.
	open(base + "/dashboard/errors")
	waitJS("both EventErrors listed", `document.querySelectorAll("tr.error-row").length === 2`)
	shot("3-errors")
	byCode := func(code string) string {
		return eval("uuid of the "+code+" error", fmt.Sprintf(`[...document.querySelectorAll("tr.error-row")].filter(r => r.querySelector("td.code").textContent.includes(%q)).map(r => r.dataset.uuid)[0] || ""`, code))
	}
	validationUUID, unknownUUID := byCode("validation"), byCode("processor")
	if validationUUID == "" || unknownUUID == "" {
		t.Fatalf("errors page: validation error %q, unknown-schema error %q\n%s", validationUUID, unknownUUID, page())
	}
	open(base + "/dashboard/errors/" + validationUUID)
	waitJS("the violation highlighted at /action", `(() => { const s = document.querySelector('pre#event-json span.violation[data-path="/action"]'); return !!s && s.textContent.includes("explode") })()`)
	shot("4-error-detail")

	// 3. Register the missing version, replay the error from the page,
	// and see the event arrive valid.
	if out := runCLI(t, "schema", "push", fixed, "--registry", base+"/registry"); !strings.Contains(out, "1 registered") {
		t.Fatalf("schema push of the fixed version: %q", out)
	}
	open(base + "/dashboard/errors")
	row := fmt.Sprintf(`tr.error-row[data-uuid=%q]`, unknownUUID)
	waitJS("the unknown-schema error replayable", fmt.Sprintf(`!!document.querySelector('%s input.replay-select:not([disabled])')`, row))
	click("the error's checkbox", row+" input.replay-select")
	click("replay", "#replay-button")
	waitJS("the replay result", `(() => { const r = document.getElementById("replay-result"); return !!r && r.dataset.replayed === "1" })()`)
	shot("5-replayed")
	open(base + "/dashboard/")
	waitJS("the replayed event in its stream's topic", total("eventlogging_analytics.edit_funnel")+" === 1")
	waitJS("no new EventError", total("eventlogging_EventError")+" === 2")
	shot("6-overview-replayed")

	// The replayed error cannot be replayed twice.
	open(base + "/dashboard/errors")
	waitJS("the replayed error marked", fmt.Sprintf(`!!document.querySelector('%s input.replay-select[disabled]')`, row))

	// The other pages: a schema's versions side by side, the live tail.
	open(base + "/dashboard/schemas/analytics%2Fedit_funnel")
	waitJS("two versions side by side", `document.querySelectorAll("table#diff tr.diff-row td.right.added").length > 0`)
	shot("7-schema-diff")
	open(base + "/dashboard/tail?topic=eventlogging_NavigationTiming")
	waitJS("the live tail", `!!document.getElementById("tail-rows")`)
	postHasty(t, base, "["+nav+"]")
	waitJS("a live event", `document.querySelectorAll("#tail-rows tr.tail-row").length >= 1`)
	shot("8-tail")
}
