package role

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/httpauth"
	"github.com/eventlogging/eventlogging/internal/intake"
	"github.com/eventlogging/eventlogging/internal/logging"
)

// HostAddr is addr with an unspecified IP replaced by 127.0.0.1.
func HostAddr(addr net.Addr) string {
	if ta, ok := addr.(*net.TCPAddr); ok && ta.IP.IsUnspecified() {
		return fmt.Sprintf("127.0.0.1:%d", ta.Port)
	}
	return addr.String()
}

// requestLog wraps a role's mux with the sampled request log.
func requestLog(h http.Handler, c config.Config, log *slog.Logger) http.Handler {
	return logging.Requests(h, log.With("component", "http"), c.Log.RequestSample)
}

// serveMux is the mux of a role that listens itself: /metrics and the
// role's handler at the root, instrumented under name.
func serveMux(m *Metrics, name string, h http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	mux.Handle("/", m.Wrap(name, h))
	return mux
}

// lateHandler serves 503 until its handler is set (standalone serves HTTP
// before the intake is ready), and again once it is closed, after the
// requests in flight ended.
type lateHandler struct {
	h      atomic.Pointer[http.Handler]
	mu     sync.RWMutex // held for reading by requests in flight
	closed bool
}

func (l *lateHandler) set(h http.Handler) { l.h.Store(&h) }

// close answers 503 from now on and waits for the requests in flight.
func (l *lateHandler) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
}

func (l *lateHandler) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if h := l.h.Load(); h != nil && !l.closed {
		(*h).ServeHTTP(rw, r)
		return
	}
	rw.Header().Set("Retry-After", "1")
	msg := `{"status":503,"error":"starting"}`
	if l.closed {
		msg = `{"status":503,"error":"stopping"}`
	}
	http.Error(rw, msg, http.StatusServiceUnavailable)
}

// adminGuard is the guard of an admin route: c's allowed hosts with the
// host names of reachedAt (the route's listen address and the URLs it is
// known by), c's admin networks, the intake's trusted proxies (whose
// X-Forwarded-For names the client) and the route's token, set by
// tokenKey. It also refuses cross-origin browser requests.
func adminGuard(c config.Config, what, tokenKey, token string, reachedAt ...string) (*httpauth.Guard, error) {
	nets, err := intake.ParseTrustedProxies(c.Security.AdminNetworks)
	if err != nil {
		return nil, fmt.Errorf("security.admin_networks: %w", err)
	}
	proxies, err := intake.ParseTrustedProxies(c.Intake.TrustedProxies)
	if err != nil {
		return nil, fmt.Errorf("intake.trusted_proxies: %w", err)
	}
	hosts, err := allowedHosts(c.Security.AllowedHosts, reachedAt)
	if err != nil {
		return nil, fmt.Errorf("security.allowed_hosts: %w", err)
	}
	return httpauth.New(httpauth.Config{
		Networks:       nets,
		TrustedProxies: proxies,
		Token:          token,
		What:           what,
		NetworksKey:    "security.admin_networks",
		TokenKey:       tokenKey,
		Hosts:          hosts,
		HostsKey:       "security.allowed_hosts",
	}), nil
}

// allowedHosts are the configured hosts and the host names of reachedAt,
// listen addresses ("name:8090", ":8090") and URLs; addresses and empty
// hosts are left out (an address always passes).
func allowedHosts(configured, reachedAt []string) (*httpauth.Hosts, error) {
	list := slices.Clone(configured)
	for _, a := range reachedAt {
		host := a
		if strings.Contains(a, "://") {
			u, err := url.Parse(a)
			if err != nil {
				continue
			}
			host = u.Hostname()
		} else if h, _, err := net.SplitHostPort(a); err == nil {
			host = h
		}
		if _, err := netip.ParseAddr(host); err == nil || host == "" {
			continue
		}
		if _, err := httpauth.ParseHosts([]string{host}); err == nil {
			list = append(list, host)
		}
	}
	return httpauth.ParseHosts(list)
}
