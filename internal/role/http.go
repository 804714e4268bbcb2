package role

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
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

// adminGuard is the guard of an admin route: c's admin networks, the
// intake's trusted proxies (whose X-Forwarded-For names the client) and
// the route's token, set by tokenKey.
func adminGuard(c config.Config, what, tokenKey, token string) (*httpauth.Guard, error) {
	nets, err := intake.ParseTrustedProxies(c.Security.AdminNetworks)
	if err != nil {
		return nil, fmt.Errorf("security.admin_networks: %w", err)
	}
	proxies, err := intake.ParseTrustedProxies(c.Intake.TrustedProxies)
	if err != nil {
		return nil, fmt.Errorf("intake.trusted_proxies: %w", err)
	}
	return httpauth.New(httpauth.Config{
		Networks:       nets,
		TrustedProxies: proxies,
		Token:          token,
		What:           what,
		NetworksKey:    "security.admin_networks",
		TokenKey:       tokenKey,
	}), nil
}
