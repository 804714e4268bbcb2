package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/eventlogging/eventlogging/internal/schema"
)

// maxClientBody bounds the answers a Client reads.
const maxClientBody = 64 << 20

// Client reads schemas from a registry over HTTP — this package's API, or
// Confluent's for the legacy (name, revision) ids. It is a [schema.Source]
// and a [schema.URISource], so a [schema.Resolver] resolves through the
// registry. Safe for concurrent use.
//
// Timeouts come from the caller's ctx. Missing schemas (any 404) give
// errors wrapping [schema.ErrNotFound]; every other failure is transient.
type Client struct {
	base string
	hc   *http.Client
}

// NewClient returns a Client of the registry at baseURL, e.g.
// "http://localhost:8080/registry". hc nil selects a client without a
// timeout of its own (ctx bounds each fetch).
func NewClient(baseURL string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("registry: client base URL %q: want http(s)://host[:port][/path]", baseURL)
	}
	if hc == nil {
		hc = &http.Client{}
	}
	return &Client{base: strings.TrimSuffix(baseURL, "/"), hc: hc}, nil
}

// Fetch returns the schema text with global id id.Revision, which must be
// registered under subject id.Name (soft-deleted versions count: old
// events still name them). Otherwise the error wraps [schema.ErrNotFound].
func (c *Client) Fetch(ctx context.Context, id schema.ID) ([]byte, error) {
	if err := id.Validate(); err != nil || id.Revision > 1<<31-1 {
		return nil, fmt.Errorf("registry: fetch %s: %w: %w", id, schema.ErrNotFound, err)
	}
	rev := strconv.FormatInt(id.Revision, 10)
	body, err := c.get(ctx, "/schemas/ids/"+rev+"/versions?deleted=true")
	if err != nil {
		return nil, fmt.Errorf("registry: fetch %s: %w", id, err)
	}
	var usages []subjectVersion
	if err := json.Unmarshal(body, &usages); err != nil {
		return nil, fmt.Errorf("registry: fetch %s: decoding the subjects of id %s: %w", id, rev, err)
	}
	if !slices.ContainsFunc(usages, func(u subjectVersion) bool { return u.Subject == id.Name }) {
		return nil, fmt.Errorf("registry: fetch %s: %w: id %s is not registered under subject %s", id, schema.ErrNotFound, rev, id.Name)
	}
	text, err := c.get(ctx, "/schemas/ids/"+rev+"/schema")
	if err != nil {
		return nil, fmt.Errorf("registry: fetch %s: %w", id, err)
	}
	return text, nil
}

// FetchURI returns the schema named by an Event Platform $schema path
// ("/analytics/button_click/1.0.0"): GET <base><path>. Paths under the
// registry's own API (/subjects/…, /schemas/…) name no schema: their
// answers are not schema documents.
func (c *Client) FetchURI(ctx context.Context, uri string) ([]byte, error) {
	p, err := schema.Path(uri)
	if err != nil {
		return nil, fmt.Errorf("registry: fetch: %w", err)
	}
	if root, _, _ := strings.Cut(p[1:], "/"); slices.Contains(apiRoots, root) {
		return nil, fmt.Errorf("registry: fetch %s: %w: /%s/… is the registry's API, not a schema", p, schema.ErrNotFound, root)
	}
	body, err := c.get(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("registry: fetch %s: %w", p, err)
	}
	return body, nil
}

// get GETs base+path and returns the body of a 200.
func (c *Client) get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json, application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxClientBody+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: reading the answer: %w", path, err)
	}
	if len(body) > maxClientBody {
		return nil, fmt.Errorf("GET %s: answer exceeds %d bytes", path, maxClientBody)
	}
	if resp.StatusCode == http.StatusOK {
		return body, nil
	}
	var ae apiError
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &ae) == nil && ae.Message != "" {
		msg = fmt.Sprintf("%s (error code %d)", ae.Message, ae.Code)
	}
	if len(msg) > 512 {
		msg = msg[:512] + "…"
	}
	if resp.StatusCode == http.StatusNotFound {
		return nil, fmt.Errorf("%w: GET %s: %s", schema.ErrNotFound, path, msg)
	}
	return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, msg)
}
