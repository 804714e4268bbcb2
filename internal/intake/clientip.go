package intake

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/eventlogging/eventlogging/internal/httpauth"
)

// ParseTrustedProxies parses addresses and CIDR prefixes ("10.0.0.0/8",
// "127.0.0.1").
func ParseTrustedProxies(list []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(list))
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if strings.Contains(s, "/") {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("trusted proxy %q: %w", s, err)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: %w", s, err)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// clientIP is the socket peer, or — only when the peer is a trusted proxy —
// the right-most address of X-Forwarded-For that is not itself a trusted
// proxy (httpauth.ClientAddr, which the admin routes use too). "" when
// nothing parses.
func clientIP(r *http.Request, proxies []netip.Prefix) string {
	a, ok := httpauth.ClientAddr(r, proxies)
	if !ok {
		return ""
	}
	return a.String()
}
