package intake

import (
	"bytes"
	"io"
	"net/http"
	"testing"
)

// TestStaticClientServed: GET /static/eventlogging.js answers the module
// with a JavaScript type, CORS for cross-origin imports, and an ETag that
// revalidates to 304.
func TestStaticClientServed(t *testing.T) {
	ti := newTestIntake(t, Config{})
	get := func(etag string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, ti.http.URL+"/static/eventlogging.js", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Origin", "http://pages.example.org")
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := get("")
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, clientJS) {
		t.Fatalf("GET /static/eventlogging.js: %s, %d bytes (want 200 and the %d-byte client)", resp.Status, len(body), len(clientJS))
	}
	for h, want := range map[string]string{
		"Content-Type":                "text/javascript; charset=utf-8",
		"Access-Control-Allow-Origin": "*",
		"X-Content-Type-Options":      "nosniff",
		"ETag":                        clientJSETag,
	} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("%s: %q, want %q", h, got, want)
		}
	}
	again := get(resp.Header.Get("ETag"))
	again.Body.Close()
	if again.StatusCode != http.StatusNotModified {
		t.Errorf("revalidation with the ETag: %s, want 304", again.Status)
	}
	// Only GET (and HEAD) serve it.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ti.http.URL+"/static/eventlogging.js", nil)
	post, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	post.Body.Close()
	if post.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /static/eventlogging.js: %s, want 405", post.Status)
	}
}
