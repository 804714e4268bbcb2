package role

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestInProcess(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /registry/subjects/{name}/versions", func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.RequestURI != "/registry/subjects/a%2Fb/versions?x=1" || r.Host != "127.0.0.1:1" || r.RemoteAddr == "" {
			t.Errorf("server side: RequestURI %q, Host %q, RemoteAddr %q", r.RequestURI, r.Host, r.RemoteAddr)
		}
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(http.StatusCreated)
		io.WriteString(rw, `{"subject":"`+r.PathValue("name")+`","body":`+string(body)+`}`)
	})
	served := 0
	mux.HandleFunc("GET /empty", func(http.ResponseWriter, *http.Request) { served++ })
	cl := InProcess(mux)
	// do sends a request and returns the status, the length it announced
	// and the body.
	do := func(ctx context.Context, method, url, body string) (int, int64, string, error) {
		req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := cl.Do(req)
		if err != nil {
			return 0, 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.ContentLength, string(b), err
	}

	status, n, body, err := do(t.Context(), http.MethodPost, "http://127.0.0.1:1/registry/subjects/a%2Fb/versions?x=1", `{"n":1}`)
	if err != nil || status != http.StatusCreated || n != int64(len(body)) || body != `{"subject":"a/b","body":{"n":1}}` {
		t.Errorf("POST: %d, length %d, %q, %v", status, n, body, err)
	}
	// No route: the mux's 404, with its body.
	if status, _, body, err = do(t.Context(), http.MethodGet, "http://127.0.0.1:1/nothing", ""); err != nil || status != http.StatusNotFound || !strings.Contains(body, "404") {
		t.Errorf("unrouted: %d %q %v", status, body, err)
	}
	// A handler that writes nothing answers 200; a cancelled request is
	// not served.
	if status, _, _, err = do(t.Context(), http.MethodGet, "http://127.0.0.1:1/empty", ""); err != nil || status != http.StatusOK {
		t.Errorf("empty handler: %d %v", status, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, _, err := do(ctx, http.MethodGet, "http://127.0.0.1:1/empty", ""); err == nil || served != 1 {
		t.Errorf("cancelled request: err %v, served %d times", err, served)
	}
}
