package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// crawlEvents are sent before the crawl, so that every kind of page and
// link exists: legacy and Event Platform events, valid and invalid, of
// registered and unregistered schemas.
var crawlEvents = []struct {
	name string
	json string
	// schema and code of the EventError the event becomes; "" when valid.
	schema, code string
}{
	{"legacy valid", `{"schema":"NavigationTiming","revision":7,"event":{"responseStart":80,"loadEventEnd":700},"webHost":"en.wikipedia.org","wiki":"enwiki"}`, "", ""},
	{"legacy invalid", `{"schema":"NavigationTiming","revision":7,"event":{"responseStart":"soon"},"webHost":"en.wikipedia.org","wiki":"enwiki"}`, "NavigationTiming", "validation"},
	{"legacy unregistered", `{"schema":"NoSuchSchema","revision":3,"event":{"x":1},"webHost":"en.wikipedia.org","wiki":"enwiki"}`, "NoSuchSchema", "processor"},
	{"platform valid", `{"$schema":"/analytics/edit_funnel/1.0.0","meta":{"stream":"analytics.edit_funnel"},"dt":"2026-11-30T10:00:00Z","action":"init","editor":"visualeditor","session_token":"f3a9c2d4e5b6a7c8","page_id":15580374}`, "", ""},
	{"platform invalid 1.0.0", `{"$schema":"/analytics/edit_funnel/1.0.0","meta":{"stream":"analytics.edit_funnel"},"action":"explode","editor":"visualeditor","session_token":"f3a9c2d4e5b6a7c8"}`, "/analytics/edit_funnel/1.0.0", "validation"},
	{"platform invalid 1.1.0", `{"$schema":"/analytics/edit_funnel/1.1.0","meta":{"stream":"analytics.edit_funnel"},"action":"bogus","editor":"wikitext","session_token":"a1b2c3d4e5f6a7b8"}`, "/analytics/edit_funnel/1.1.0", "validation"},
	{"platform unregistered version", `{"$schema":"/analytics/edit_funnel/9.9.9","meta":{"stream":"analytics.edit_funnel"},"action":"init","editor":"wikitext","session_token":"a1b2c3d4e5f6a7b8"}`, "/analytics/edit_funnel/9.9.9", "processor"},
}

// badRevision is how a page shows an unknown revision as if it were one:
// "revision -1", "rev -1", "r-1", "v-1", "version: -1", "Name/-1".
var badRevision = regexp.MustCompile(`(?i)\b(?:revision|rev|r|version|v)\s*[:#]?\s*-1\b|/-1\b`)

// TestDashboardCrawl: after legacy and Event Platform events, valid and
// invalid, every link of the dashboard of a real standalone leads
// somewhere. The crawl starts at /dashboard/ and follows, breadth first,
// every same-origin href and src (and the action of GET forms), failing
// on any 4xx or 5xx with the page that linked to it. No page shows an
// unknown revision as "revision -1"; Event Platform schemas show their
// versions (1.0.0, 1.1.0) and legacy schemas their revisions, on the
// pages and in `eventlogging status`.
func TestDashboardCrawl(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	_, base := startStandalone(t, nil, dataDir, "--schemas", "../../examples/schemas", "--streams", "../../examples/streams.yaml")

	var batch []string
	wantErrors := map[string]string{} // schema → code
	for _, e := range crawlEvents {
		batch = append(batch, e.json)
		if e.schema != "" {
			wantErrors[e.schema] = e.code
		}
	}
	postHasty(t, base, "["+strings.Join(batch, ",")+"]")

	// The EventErrors visible in the dashboard's API, and the imported
	// schemas in its list, before the crawl.
	var errs []struct {
		UUID   string `json:"uuid"`
		Schema string `json:"schema"`
		Code   string `json:"code"`
	}
	waitFor(t, 60*time.Second, "every EventError in /dashboard/api/errors", func() bool {
		status, body, err := get(t.Context(), base+"/dashboard/api/errors?limit=1000")
		if err != nil || status != http.StatusOK || json.Unmarshal([]byte(body), &errs) != nil {
			return false
		}
		got := map[string]string{}
		for _, e := range errs {
			got[e.Schema] = e.Code
		}
		return len(errs) == len(wantErrors) && fmt.Sprint(got) == fmt.Sprint(wantErrors)
	})
	waitFor(t, 30*time.Second, "analytics/edit_funnel in /dashboard/api/schemas", func() bool {
		status, body, err := get(t.Context(), base+"/dashboard/api/schemas")
		return err == nil && status == http.StatusOK && strings.Contains(body, `"analytics/edit_funnel"`)
	})

	pages := crawl(t, base+"/dashboard/")
	if len(pages) < 20 {
		t.Errorf("the crawl reached %d pages, want every schema, version and EventError page (at least 20)", len(pages))
	}

	// No page shows an unknown revision as if it were one.
	for _, u := range slices.Sorted(maps.Keys(pages)) {
		if m := badRevision.FindString(pages[u].text); m != "" {
			t.Errorf("%s shows %q:\n%s", u, m, around(pages[u].text, m))
		}
	}

	// The schema list shows the revision users know: a legacy schema's
	// revision, an Event Platform schema's version.
	list := pages[base+"/dashboard/schemas"]
	if list == nil {
		t.Fatal("the crawl did not reach /dashboard/schemas")
	}
	for name, want := range map[string]string{"NavigationTiming": "7", "SearchQuery": "5", "analytics/edit_funnel": "1.1.0", "analytics/search_satisfaction": "1.0.0"} {
		row := findElem(list.doc, func(n *html.Node) bool { return n.DataAtom == atom.Tr && attr(n, "data-name") == name })
		cell := findElem(row, func(n *html.Node) bool { return hasClass(n, "latest") })
		if got := strings.TrimSpace(textOf(cell)); got != want {
			t.Errorf("/dashboard/schemas: %s latest %q, want %q", name, got, want)
		}
	}

	// A schema's page lists its versions by the names events use.
	funnel := pages[base+"/dashboard/schemas/analytics%2Fedit_funnel"]
	if funnel == nil {
		t.Fatal("the crawl did not reach the page of analytics/edit_funnel")
	}
	versions := textOf(findElem(funnel.doc, func(n *html.Node) bool { return attr(n, "id") == "versions" }))
	for _, v := range []string{"1.0.0", "1.1.0"} {
		if !strings.Contains(versions, v) {
			t.Errorf("analytics/edit_funnel versions %q lack %s", versions, v)
		}
	}

	// The page of each EventError names its schema's version, and links to
	// the schema's page when the registry has the schema (issue 31: the
	// Schema link of an Event Platform error was a 404).
	for _, e := range errs {
		var p *crawledPage
		for u, cp := range pages {
			if strings.HasPrefix(u, base+"/dashboard/errors/"+e.UUID) {
				p = cp
			}
		}
		if p == nil {
			t.Errorf("the crawl did not reach the page of EventError %s (%s)", e.UUID, e.Schema)
			continue
		}
		dd := findElem(p.doc, func(n *html.Node) bool { return attr(n, "id") == "error-schema" })
		if dd == nil {
			t.Errorf("EventError %s (%s): no #error-schema", e.UUID, e.Schema)
			continue
		}
		link := findElem(dd, func(n *html.Node) bool { return n.DataAtom == atom.A })
		switch e.Schema {
		case "NavigationTiming":
			wantSchema(t, e.Schema, dd, link, "revision 7", "/dashboard/schemas/NavigationTiming?b=1")
		case "NoSuchSchema":
			wantSchema(t, e.Schema, dd, link, "revision 3", "")
		case "/analytics/edit_funnel/1.0.0":
			wantSchema(t, e.Schema, dd, link, "version 1.0.0", "/dashboard/schemas/analytics%2Fedit_funnel?b=1")
		case "/analytics/edit_funnel/1.1.0":
			wantSchema(t, e.Schema, dd, link, "version 1.1.0", "/dashboard/schemas/analytics%2Fedit_funnel?b=2")
		case "/analytics/edit_funnel/9.9.9":
			wantSchema(t, e.Schema, dd, link, "version 9.9.9", "/dashboard/schemas/analytics%2Fedit_funnel")
		}
	}

	// `eventlogging status` names the versions the same way (its exit
	// status, whether the sinks have joined yet, is not what is tested).
	out, _ := runCLIStatus(t, "status", "--data-dir", dataDir, "--interval", "200ms", "--errors", "20")
	if m := badRevision.FindString(out); m != "" {
		t.Errorf("status shows %q:\n%s", m, out)
	}
	for _, want := range []string{"NavigationTiming/7 ", "/analytics/edit_funnel/1.0.0 ", "/analytics/edit_funnel/9.9.9 "} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
}

// wantSchema checks the Schema entry of an EventError's page: its text
// names the version, and it links to href (no link when href is "").
func wantSchema(t *testing.T, schema string, dd, link *html.Node, version, href string) {
	t.Helper()
	if txt := textOf(dd); !strings.Contains(txt, version) {
		t.Errorf("EventError of %s: Schema %q does not name %q", schema, txt, version)
	}
	switch {
	case href == "" && link != nil:
		t.Errorf("EventError of %s: Schema links to %s, but the registry has no such schema", schema, attr(link, "href"))
	case href != "" && link == nil:
		t.Errorf("EventError of %s: Schema %q has no link, want %s", schema, textOf(dd), href)
	case href != "" && attr(link, "href") != href:
		t.Errorf("EventError of %s: Schema links to %s, want %s", schema, attr(link, "href"), href)
	}
}

// crawledPage is an HTML page of the dashboard.
type crawledPage struct {
	doc  *html.Node
	text string // the whole body
}

// crawl GETs start and, breadth first, every same-origin URL that an HTML
// page under start's path links to (href, src, and the action of a GET
// form), failing the test for each that answers 4xx or 5xx (with the page
// that linked to it). It returns the HTML pages under start's path, by
// URL.
func crawl(t *testing.T, start string) map[string]*crawledPage {
	t.Helper()
	root, err := url.Parse(start)
	if err != nil {
		t.Fatal(err)
	}
	// Redirects are links too: followed here, so that each is checked
	// and stays same-origin.
	client := &http.Client{
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	type link struct{ url, from string }
	queue := []link{{start, "(start)"}}
	seen := map[string]bool{start: true}
	pages := map[string]*crawledPage{}
	const maxURLs = 2000
	for len(queue) > 0 {
		l := queue[0]
		queue = queue[1:]
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, l.url, nil)
		if err != nil {
			t.Fatalf("GET %s (linked from %s): %v", l.url, l.from, err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Errorf("GET %s (linked from %s): %v", l.url, l.from, err)
			continue
		}
		var body strings.Builder
		_, err = io.Copy(&body, resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			t.Errorf("GET %s (linked from %s): reading the body: %v", l.url, l.from, err)
			continue
		}
		if resp.StatusCode >= 400 {
			t.Errorf("GET %s: %d %s, linked from %s: %s", l.url, resp.StatusCode, http.StatusText(resp.StatusCode), l.from, failureText(body.String()))
			continue
		}
		u, _ := url.Parse(l.url)
		var refs []string
		switch {
		case resp.StatusCode >= 300:
			refs = []string{resp.Header.Get("Location")}
		case strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") && strings.HasPrefix(u.Path, root.Path):
			doc, err := html.Parse(strings.NewReader(body.String()))
			if err != nil {
				t.Errorf("%s: parsing the page: %v", l.url, err)
				continue
			}
			pages[l.url] = &crawledPage{doc: doc, text: body.String()}
			refs = pageLinks(doc)
		}
		for _, ref := range refs {
			target, err := u.Parse(ref)
			if err != nil {
				t.Errorf("%s links to %q, not a URL: %v", l.url, ref, err)
				continue
			}
			if target.Scheme != root.Scheme || target.Host != root.Host {
				continue // another origin: not the dashboard's to answer
			}
			target.Fragment = ""
			if s := target.String(); !seen[s] {
				seen[s] = true
				queue = append(queue, link{s, l.url})
			}
		}
		if len(seen) > maxURLs {
			t.Fatalf("more than %d URLs: the crawl does not end", maxURLs)
		}
	}
	t.Logf("crawled %d URLs from %s, %d of them pages", len(seen), start, len(pages))
	return pages
}

// pageLinks are the URLs a page makes a browser GET: every href and src,
// and the action of each GET form (without its fields). The action of a
// POST form (replay) is an action, not a link: it is left out.
func pageLinks(doc *html.Node) []string {
	var out []string
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			for _, a := range n.Attr {
				switch {
				case a.Key == "href" || a.Key == "src":
					out = append(out, a.Val)
				case a.Key == "action" && n.DataAtom == atom.Form && !strings.EqualFold(attr(n, "method"), http.MethodPost):
					out = append(out, a.Val)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return out
}

// findElem is the first node under n (n included) for which match holds;
// nil when none does or n is nil.
func findElem(n *html.Node, match func(*html.Node) bool) *html.Node {
	if n == nil {
		return nil
	}
	if n.Type == html.ElementNode && match(n) {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := findElem(c, match); f != nil {
			return f
		}
	}
	return nil
}

// attr is n's attribute key, "" when it has none.
func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, class string) bool {
	return slices.Contains(strings.Fields(attr(n, "class")), class)
}

// textOf is the text under n; "" for nil.
func textOf(n *html.Node) string {
	if n == nil {
		return ""
	}
	if n.Type == html.TextNode {
		return n.Data
	}
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		b.WriteString(textOf(c))
	}
	return b.String()
}

// failureText is what a failed page says: its error box, else the end of
// the body.
func failureText(body string) string {
	if doc, err := html.Parse(strings.NewReader(body)); err == nil {
		if box := findElem(doc, func(n *html.Node) bool { return attr(n, "id") == "backend-error" }); box != nil {
			return strings.Join(strings.Fields(textOf(box)), " ")
		}
	}
	return tail(body, 300)
}

// around is the line of s holding m, for a failure message.
func around(s, m string) string {
	i := strings.Index(s, m)
	start := strings.LastIndexByte(s[:i], '\n') + 1
	end := strings.IndexByte(s[i:], '\n')
	if end < 0 {
		return s[start:]
	}
	return s[start : i+end]
}
