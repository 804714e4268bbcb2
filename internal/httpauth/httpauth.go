package httpauth

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
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
}

// Guard decides whether a request may use an admin route. It is safe for
// concurrent use.
type Guard struct {
	cfg       Config
	hasToken  bool
	tokenHash [sha256.Size]byte
}

// New returns the guard of cfg.
func New(cfg Config) *Guard {
	if cfg.What == "" {
		cfg.What = "this route"
	}
	return &Guard{cfg: cfg, hasToken: cfg.Token != "", tokenHash: sha256.Sum256([]byte(cfg.Token))}
}

// RefusedError is a request the guard does not admit. Its text says how to
// get access; it names the client's address as the guard saw it, never the
// configured networks or whether a token is set.
type RefusedError struct {
	// Client is the client's address as the guard saw it (invalid when
	// the peer's address did not parse).
	Client netip.Addr
	msg    string
}

func (e *RefusedError) Error() string { return e.msg }

// Check returns nil when r is admitted, else a *RefusedError.
func (g *Guard) Check(r *http.Request) error {
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
	return &RefusedError{Client: client, msg: fmt.Sprintf(
		"%s are open to the admin networks only, and %s is not in them: add the client's network to %s, or send the token (%s) as \"Authorization: Bearer <token>\"",
		g.cfg.What, seen, keyOr(g.cfg.NetworksKey, "the admin networks"), keyOr(g.cfg.TokenKey, "the route's token"))}
}

func keyOr(key, otherwise string) string {
	if key == "" {
		return otherwise
	}
	return key
}

// Handler returns next guarded: a request Check refuses is answered 403
// with {"status": 403, "error": "<how to get access>"}, and next is not
// called.
func (g *Guard) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if err := g.Check(r); err != nil {
			var body bytes.Buffer
			enc := json.NewEncoder(&body)
			enc.SetEscapeHTML(false) // "<token>" stays readable; served as JSON, never HTML
			_ = enc.Encode(struct {
				Status int    `json:"status"`
				Error  string `json:"error"`
			}{http.StatusForbidden, err.Error()})
			h := rw.Header()
			h.Set("Content-Type", "application/json")
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("Cache-Control", "no-store")
			rw.WriteHeader(http.StatusForbidden)
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
