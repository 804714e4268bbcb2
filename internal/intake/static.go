package intake

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"time"

	jsclient "github.com/eventlogging/eventlogging/clients/js"
)

// The browser client (clients/js/eventlogging.js), served as-is at
// GET /static/eventlogging.js: there is no minification step (no npm in the
// build), the file is small and compresses well.
var clientJS = jsclient.Module

// clientJSETag is a strong validator of the embedded file.
var clientJSETag = func() string {
	sum := sha256.Sum256(clientJS)
	return `"` + hex.EncodeToString(sum[:12]) + `"`
}()

// clientScript serves the browser client. It is an ES module, and module
// scripts are fetched with CORS: ServeHTTP's Access-Control-Allow-Origin
// lets pages of other origins import it.
func clientScript(rw http.ResponseWriter, r *http.Request) {
	h := rw.Header()
	h.Set("Content-Type", "text/javascript; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "public, max-age=300")
	h.Set("ETag", clientJSETag)
	http.ServeContent(rw, r, "eventlogging.js", time.Time{}, bytes.NewReader(clientJS))
}
