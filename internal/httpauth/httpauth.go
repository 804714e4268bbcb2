package httpauth

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Config says who a Guard admits. The zero value admits nobody.
type Config struct {
	// Networks admit the clients whose address is in one of them, without
	// a token; empty: no network is admitted.
	Networks []netip.Prefix
	// TrustedProxies are the peers whose X-Forwarded-For names the client;
	// empty: the socket's peer is always the client.
	TrustedProxies []netip.Prefix
	// Token admits a request from anywhere that sends it as
	// "Authorization: Bearer <token>"; compared in constant time. Empty: no
	// token admits.
	Token string
	// What names the guarded routes in refusals, e.g. "registry writes";
	// default "this route".
	What string
	// NetworksKey and TokenKey are the configuration keys of Networks and
	// Token, named in refusals so that an operator knows what to set, e.g.
	// "security.admin_networks" and "registry.write_token".
	NetworksKey string
	TokenKey    string
	// Hosts are the host names the guarded routes answer (see ParseHosts);
	// nil: any Host. A request whose Host header names another host is
	// refused with 421 Misdirected Request, before any other check.
	Hosts *Hosts
	// HostsKey is the configuration key of Hosts, named in refusals, e.g.
	// "security.allowed_hosts".
	HostsKey string
}

// Guard decides whether a request may use an admin route. It is safe for
// concurrent use.
type Guard struct {
	cfg       Config
	hasToken  bool
	tokenHash [sha256.Size]byte
	// csrf refuses cross-origin browser requests, net/http's way.
	csrf *http.CrossOriginProtection
}

// New returns the guard of cfg.
func New(cfg Config) *Guard {
	if cfg.What == "" {
		cfg.What = "this route"
	}
	return &Guard{cfg: cfg, hasToken: cfg.Token != "", tokenHash: sha256.Sum256([]byte(cfg.Token)),
		csrf: http.NewCrossOriginProtection()}
}

// RefusedError is a request the guard does not admit. Its text says how to
// get access; it names the client's address as the guard saw it, never the
// configured networks or whether a token is set.
type RefusedError struct {
	// Client is the client's address as the guard saw it (invalid when
	// the peer's address did not parse).
	Client netip.Addr
	// Status is the HTTP status of the refusal: 421 when the Host is not
	// one the routes answer, else 403.
	Status int
	msg    string
}

func (e *RefusedError) Error() string { return e.msg }

// HTTPStatus is e.Status.
func (e *RefusedError) HTTPStatus() int { return e.Status }

// Check returns nil when r is admitted, else a *RefusedError. In order:
// r's Host must be one of Config.Hosts (against DNS rebinding: a page on
// another site whose name now resolves to this server); r must not be a
// cross-origin browser request (net/http's CrossOriginProtection: by
// Sec-Fetch-Site, else Origin against Host) — a request that changes
// something never, a read only as a navigation (following a link), not as
// a fetch, an EventSource or an image; and its client must be in the
// admin networks or send the token. Requests without Origin and
// Sec-Fetch-Site — every client that is not a browser — pass the
// cross-origin check.
func (g *Guard) Check(r *http.Request) error {
	if h := g.cfg.Hosts; h != nil && !h.Allows(r.Host) {
		return &RefusedError{Status: http.StatusMisdirectedRequest, msg: fmt.Sprintf(
			"%s answer only the host names in %s, and the request was for host %q: if that is a name of this server, add it to %s",
			g.cfg.What, keyOr(g.cfg.HostsKey, "the allowed hosts"), r.Host, keyOr(g.cfg.HostsKey, "the allowed hosts"))}
	}
	if err := g.crossOrigin(r); err != nil {
		return err
	}
	client, ok := ClientAddr(r, g.cfg.TrustedProxies)
	if ok {
		for _, p := range g.cfg.Networks {
			if p.Contains(client) {
				return nil
			}
		}
	}
	if g.hasToken {
		if tok, ok := BearerToken(r); ok {
			sum := sha256.Sum256([]byte(tok))
			if subtle.ConstantTimeCompare(sum[:], g.tokenHash[:]) == 1 {
				return nil
			}
		}
	}
	seen := "the client"
	if ok {
		seen = client.String()
	}
	return &RefusedError{Client: client, Status: http.StatusForbidden, msg: fmt.Sprintf(
		"%s are open to the admin networks only, and %s is not in them: add the client's network to %s, or send the token (%s) as \"Authorization: Bearer <token>\"",
		g.cfg.What, seen, keyOr(g.cfg.NetworksKey, "the admin networks"), keyOr(g.cfg.TokenKey, "the route's token"))}
}

// crossOrigin refuses r when it is a cross-origin browser request: one
// that changes something, or a read that is not a navigation.
func (g *Guard) crossOrigin(r *http.Request) error {
	probe := r
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		if r.Header.Get("Sec-Fetch-Mode") == "navigate" || (r.Header.Get("Sec-Fetch-Site") == "" && r.Header.Get("Origin") == "") {
			return nil // following a link, or not a browser
		}
		// CrossOriginProtection admits every read: ask it as if r changed
		// something.
		p := *r
		p.Method = http.MethodPost
		probe = &p
	}
	if g.csrf.Check(probe) == nil {
		return nil
	}
	from := "Sec-Fetch-Site: " + r.Header.Get("Sec-Fetch-Site")
	if r.Header.Get("Sec-Fetch-Site") == "" {
		from = fmt.Sprintf("Origin %q for host %q", r.Header.Get("Origin"), r.Host)
	}
	return &RefusedError{Status: http.StatusForbidden, msg: fmt.Sprintf(
		"%s refuse cross-origin browser requests (%s): use them from this server's own pages, or from a client that is not a browser",
		g.cfg.What, from)}
}

func keyOr(key, otherwise string) string {
	if key == "" {
		return otherwise
	}
	return key
}

// Handler returns next guarded: a request Check refuses is answered with
// the refusal's status (403, or 421 for a Host not allowed) and
// {"status": <status>, "error": "<how to get access>"}, and next is not
// called.
func (g *Guard) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if err := g.Check(r); err != nil {
			status := http.StatusForbidden
			var re *RefusedError
			if errors.As(err, &re) && re.Status != 0 {
				status = re.Status
			}
			var body bytes.Buffer
			enc := json.NewEncoder(&body)
			enc.SetEscapeHTML(false) // "<token>" stays readable; served as JSON, never HTML
			_ = enc.Encode(struct {
				Status int    `json:"status"`
				Error  string `json:"error"`
			}{status, err.Error()})
			h := rw.Header()
			h.Set("Content-Type", "application/json")
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("Cache-Control", "no-store")
			rw.WriteHeader(status)
			_, _ = rw.Write(body.Bytes())
			return
		}
		next.ServeHTTP(rw, r)
	})
}

// BearerToken is the token of r's "Authorization: Bearer <token>" header
// (the scheme in any case); false when there is none.
func BearerToken(r *http.Request) (string, bool) {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// ClientAddr is r's client address: the socket's peer or — only when the
// peer is in trusted — the right-most X-Forwarded-For hop that is not
// itself in trusted. A hop that does not parse ends the walk at the peer
// (a broken or forged header is not believed). False when the peer's
// address does not parse. IPv4-mapped IPv6 addresses are unmapped.
func ClientAddr(r *http.Request, trusted []netip.Prefix) (netip.Addr, bool) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	peer = peer.Unmap()
	if !contains(trusted, peer) {
		return peer, true
	}
	hops := r.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		parts := strings.Split(hops[i], ",")
		for j := len(parts) - 1; j >= 0; j-- {
			a, err := netip.ParseAddr(strings.TrimSpace(parts[j]))
			if err != nil {
				return peer, true
			}
			if a = a.Unmap(); !contains(trusted, a) {
				return a, true
			}
		}
	}
	return peer, true
}

func contains(prefixes []netip.Prefix, a netip.Addr) bool {
	for _, p := range prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
