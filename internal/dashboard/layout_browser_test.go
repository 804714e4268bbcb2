package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/eventlogging/eventlogging/internal/inspect"
	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// Long lines for the layout test: a sentence, and a word longer than any
// screen.
var (
	longSentence = strings.Repeat("a long description that goes on and on, ", 12)
	longWord     = strings.Repeat("unbreakable", 60)
)

// withLongLines adds a schema whose versions have long lines ("Wide"), and
// a live tail sending records with long JSON lines to f.
func withLongLines(f *fakeBackend) *fakeBackend {
	v1 := fmt.Sprintf(`{"title":"Wide","type":"object","description":%q,"properties":{"action":{"type":"string"}}}`, longSentence)
	v2 := fmt.Sprintf(`{"title":"Wide","type":"object","description":%q,"properties":{"action":{"type":"string","enum":[%q,"click"]},"duration":{"type":"integer","description":%q}}}`,
		longSentence+"changed", longWord, longSentence)
	sum := inspect.SchemaSummary{Name: "Wide", Type: "JSON", Versions: []int{1, 2}, Latest: 2, LatestLabel: "2", Compatibility: "NONE"}
	f.schemas = append(f.schemas, sum)
	f.details["Wide"] = inspect.SchemaDetail{SchemaSummary: sum, Versions: []inspect.SchemaVersion{
		{Version: 1, ID: 1, Label: "1", Schema: json.RawMessage(v1)},
		{Version: 2, ID: 2, Label: "2", Schema: json.RawMessage(v2)},
	}}
	f.tail = func(ctx context.Context, topic string, fn func(inspect.TailEvent) error) error {
		for k, v := range tailLongRecords() {
			if err := fn(inspect.TailEvent{Topic: topic, Offset: int64(k), Time: testNow, Value: json.RawMessage(v)}); err != nil {
				return err
			}
		}
		<-ctx.Done()
		return ctx.Err()
	}
	return f
}

// tailLongRecords are the live tail's records: many short tokens (the one
// with "k00"), a token longer than any screen, a string with spaces.
func tailLongRecords() []string {
	var b strings.Builder
	b.WriteString(`{"meta":{"stream":"analytics.edit_funnel","id":"4a6f1f5e-9b0a-4c3e-8d2f-0123456789ab"}`)
	for k := range 60 {
		fmt.Fprintf(&b, `,"k%02d":"value-%02d-abcdefgh"`, k, k)
	}
	b.WriteString(`,"n":[1,2,3,{"deep":true}]}`)
	return []string{
		b.String(),
		`{"blob":"` + longWord + `"}`,
		`{"userAgent":"` + strings.Repeat("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 ", 8) + `"}`,
	}
}

// noOverflowJS is a JavaScript expression: "" when neither the page nor
// any element matching sel scrolls horizontally, else what does.
func noOverflowJS(sel string) string {
	return fmt.Sprintf(`(() => {
  const out = [];
  const d = document.documentElement;
  if (d.scrollWidth > d.clientWidth) out.push("page " + d.scrollWidth + " > " + d.clientWidth);
  for (const e of document.querySelectorAll(%q)) {
    if (e.scrollWidth > e.clientWidth + 1) out.push(e.tagName + "." + e.className + " " + e.scrollWidth + " > " + e.clientWidth);
  }
  return out.join("; ");
})()`, sel)
}

// TestBrowserLayout checks, in Chromium, at a desktop and a narrow width,
// that long lines wrap and never make the page scroll sideways (issue
// 31): the schema diff fills the page width, its two code columns sharing
// it, and wraps its long lines; the live tail wraps long JSON between
// tokens (after a comma or colon), never inside one that fits on a line.
// With $EVENTLOGGING_ARTIFACTS set, it saves screenshots there.
func TestBrowserLayout(t *testing.T) {
	chromium := testsupport.Chromium(t)
	h := newTestHandler(t, withLongLines(withEventPlatform(newFake())), Config{Prefix: "/dashboard"})
	srv := httptest.NewServer(http.StripPrefix("/dashboard", h))
	t.Cleanup(srv.Close) // after the browser's cleanups, which end its live tail
	base := srv.URL + "/dashboard"
	ctx := testsupport.Browser(t, chromium, 2*time.Minute)
	shots := os.Getenv("EVENTLOGGING_ARTIFACTS")

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
	shot := func(name string) {
		t.Helper()
		if shots == "" {
			return
		}
		buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.MkdirAll(shots, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(shots, name+".png"), buf, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	for _, width := range []int64{1600, 700} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 900)); err != nil {
				t.Fatal(err)
			}

			// The schema diff.
			if err := chromedp.Do(ctx, chromedp.Navigate(base+"/schemas/Wide")); err != nil {
				t.Fatal(err)
			}
			waitJS("the diff", `document.querySelectorAll("table#diff tr.diff-row").length > 0`)
			shot(fmt.Sprintf("schema-diff-%d", width))
			if got := eval("overflow", noOverflowJS("table#diff, table#diff td, main")); got != "" {
				t.Errorf("the schema page scrolls sideways: %s", got)
			}
			// The table fills the page's width (its padding aside), and
			// each code column has more than 40% of it: the line numbers
			// take what they need.
			geometry := eval("diff geometry", `(() => {
  const tbl = document.getElementById("diff").getBoundingClientRect().width;
  const page = document.documentElement.clientWidth;
  const row = document.querySelector("table#diff tr.diff-row");
  const left = row.querySelector("td.left").getBoundingClientRect().width;
  const right = row.querySelector("td.right").getBoundingClientRect().width;
  return [tbl >= page - 2*24 - 2, left > 0.4*tbl, right > 0.4*tbl].join(" ") + " (table " + tbl + ", page " + page + ", code columns " + left + ", " + right + ")";
})()`)
			if !strings.HasPrefix(geometry, "true true true") {
				t.Errorf("diff: fills the page, left and right columns over 40%% of it: %s", geometry)
			}
			// The long lines wrap: their rows are taller than one line.
			if got := eval("wrapped rows", `(() => {
  const rows = [...document.querySelectorAll("table#diff tr.diff-row")].filter(r => r.textContent.includes("unbreakable") || r.textContent.includes("goes on and on"));
  const line = parseFloat(getComputedStyle(document.querySelector("table#diff td.left")).lineHeight) || 16;
  return rows.length + " " + rows.filter(r => r.getBoundingClientRect().height > 1.5*line).length;
})()`); got == "" || strings.Fields(got)[0] == "0" || strings.Fields(got)[0] != strings.Fields(got)[1] {
				t.Errorf("long diff rows, wrapped: %s", got)
			}

			// The live tail.
			if err := chromedp.Do(ctx, chromedp.Navigate(base+"/tail?topic=eventlogging_NavigationTiming")); err != nil {
				t.Fatal(err)
			}
			waitJS("the records", `document.querySelectorAll("#tail-rows tr.tail-row").length === 3`)
			shot(fmt.Sprintf("tail-%d", width))
			if got := eval("overflow", noOverflowJS("table#tail, #tail td.value, main")); got != "" {
				t.Errorf("the live tail scrolls sideways: %s", got)
			}
			// Where the record of short tokens wraps: the character before
			// each line break.
			breaks := eval("line breaks", `(() => {
  const td = [...document.querySelectorAll("#tail-rows td.value")].find(td => td.textContent.includes('"k00"'));
  const walker = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
  const r = document.createRange();
  let prevTop = null, prev = "", lines = 1;
  const bad = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    for (let i = 0; i < n.length; i++) {
      r.setStart(n, i);
      r.setEnd(n, i + 1);
      const rects = r.getClientRects();
      if (!rects.length) continue;
      const top = rects[0].top;
      if (prevTop !== null && top > prevTop + 2) {
        lines++;
        if (prev !== "," && prev !== ":") bad.push(prev + "|" + n.data[i]);
      }
      prevTop = top;
      prev = n.data[i];
    }
  }
  return lines + " " + bad.join(" ");
})()`)
			lines, bad, _ := strings.Cut(breaks, " ")
			if lines == "1" || lines == "" {
				t.Errorf("the record of %d characters is on one line", len(tailLongRecords()[0]))
			}
			if bad != "" {
				t.Errorf("the record wraps inside tokens (before|after each break): %s", bad)
			}
			// The text is the record, unchanged (copy and paste, the filter).
			if got := eval("record text", `[...document.querySelectorAll("#tail-rows td.value")].map(td => td.textContent).reverse().join("\n")`); got != strings.Join(tailLongRecords(), "\n") {
				t.Errorf("the records read %q", got)
			}

			// The EventErrors, with what came of their replays.
			for name, target := range map[string]string{"errors": "/errors", "error": "/errors/u-1"} {
				if err := chromedp.Do(ctx, chromedp.Navigate(base+target)); err != nil {
					t.Fatal(err)
				}
				waitJS(target, `document.querySelectorAll(".replay-outcome").length > 0`)
				shot(fmt.Sprintf("%s-%d", name, width))
				if got := eval("overflow", noOverflowJS("main")); got != "" {
					t.Errorf("%s scrolls sideways: %s", target, got)
				}
			}
		})
	}
}
