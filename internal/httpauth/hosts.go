package httpauth

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Hosts are the host names the admin routes answer
// (security.allowed_hosts): a request's Host header must name one of them,
// so that a page whose name an attacker re-points at this server (DNS
// rebinding) cannot use the routes with the operator's browser. An address
// (127.0.0.1, [::1], 10.0.0.5:8090) always passes — rebinding needs a name
// — and so does a request without a Host header (no browser sends one).
// The zero value allows no name. A Hosts is safe for concurrent use.
type Hosts struct {
	any     bool
	entries []hostPort
}

// hostPort is an allowed name, lower case without a trailing dot, and its
// port ("": any).
type hostPort struct{ host, port string }

// ParseHosts reads a list of host names, addresses and host:port entries
// ("dashboard.example.org", "localhost:8090", "[::1]"), case-insensitively.
// An entry without a port allows the name on any port; "*" allows every
// host (the check is off). An entry that is none of these is an error that
// quotes it.
func ParseHosts(list []string) (*Hosts, error) {
	h := &Hosts{}
	for _, raw := range list {
		e := strings.TrimSpace(raw)
		if e == "*" {
			h.any = true
			continue
		}
		host, port := splitHost(e)
		if !validHost(host) || (port != "" && !validPort(port)) || (port == "" && strings.HasSuffix(e, ":")) {
			return nil, fmt.Errorf("%q is not a host name, an address or host:port (e.g. dashboard.example.org, localhost:8090, [::1], or * for any)", raw)
		}
		h.entries = append(h.entries, hostPort{host, port})
	}
	return h, nil
}

// Allows reports whether host, a request's Host header ("name",
// "name:port", "[::1]:8080"), is allowed.
func (h *Hosts) Allows(host string) bool {
	if h.any || host == "" {
		return true
	}
	name, port := splitHost(host)
	if _, err := netip.ParseAddr(name); err == nil {
		return true
	}
	for _, e := range h.entries {
		if e.host == name && (e.port == "" || e.port == port) {
			return true
		}
	}
	return false
}

// splitHost splits "name", "name:port", "[v6]", "[v6]:port" or a bare IPv6
// address into its host, lower case without brackets or a trailing dot,
// and its port ("" when there is none).
func splitHost(s string) (host, port string) {
	h, p, err := net.SplitHostPort(s)
	if err != nil {
		h, p = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"), ""
	}
	return strings.TrimSuffix(strings.ToLower(h), "."), p
}

// validHost reports whether s is an address or a DNS name: dot-separated
// labels of letters, digits, '-' and '_'.
func validHost(s string) bool {
	if _, err := netip.ParseAddr(s); err == nil {
		return true
	}
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '_' {
				return false
			}
		}
	}
	return true
}

func validPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n > 0 && n < 1<<16 && strconv.Itoa(n) == s
}
