// Package dashboard serves the pipeline's web dashboard: stream rates and
// consumer lag, the schemas in the registry with version diffs, a live tail
// of any topic, and the latest EventErrors with their violations
// highlighted and a button to replay them.
//
// Pages are rendered on the server with html/template; templates, CSS and
// the small scripts that refresh the overview, run the live tail and send
// replays are embedded in the binary and served under /static/, so the
// pages work under a Content-Security-Policy of default-src 'self' and
// without any CDN. Every page has a JSON twin under /api/ for scripts and
// tests. The data comes from a Backend (implemented by package inspect);
// each page's backend calls run under a short deadline, and a failed call
// is shown on the page in an error box.
//
// Who may open the dashboard and replay is decided in front of the handler
// (internal/httpauth: the admin networks or the dashboard's token); the
// handler itself refuses cross-site replay requests.
package dashboard
