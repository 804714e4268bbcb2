package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TLS says how broker connections are encrypted. A nil *TLS in Config
// means plaintext.
type TLS struct {
	// CAFile is a PEM bundle of the certificate authorities that sign the
	// brokers' certificates; empty: the system's roots.
	CAFile string
	// CertFile and KeyFile are a PEM client certificate and its key, for
	// brokers that require mutual TLS; both or neither.
	CertFile, KeyFile string
	// ServerName is the name checked against the brokers' certificates;
	// empty: the host of each broker address dialled.
	ServerName string
	// InsecureSkipVerify accepts any broker certificate. For tests only:
	// the connection is then open to a man in the middle.
	InsecureSkipVerify bool
}

// Config builds the crypto/tls configuration, reading the files now (so a
// certificate renewed on disk is used by the next client created).
func (t *TLS) Config() (*tls.Config, error) {
	tc := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         t.ServerName,
		InsecureSkipVerify: t.InsecureSkipVerify,
	}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("kafka tls: CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("kafka tls: CA file %s: no PEM certificate in it", t.CAFile)
		}
		tc.RootCAs = pool
	}
	switch {
	case t.CertFile != "" && t.KeyFile != "":
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("kafka tls: client certificate %s / key %s: %w", t.CertFile, t.KeyFile, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	case t.CertFile != "" || t.KeyFile != "":
		return nil, errors.New("kafka tls: a client certificate needs both a certificate file and a key file")
	}
	return tc, nil
}

// SASL mechanisms Config.SASL accepts.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// SASL authenticates the clients to the brokers. A nil *SASL in Config
// means no authentication.
type SASL struct {
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (case-insensitive).
	// PLAIN sends the password as it is: use it over TLS only.
	Mechanism string
	// Username and Password are the credentials. The password is never
	// logged or put in an error.
	Username, Password string
}

// String names the mechanism and user, never the password.
func (s SASL) String() string {
	return fmt.Sprintf("%s user %q", strings.ToUpper(s.Mechanism), s.Username)
}

// GoString is String, so that %#v does not print the password either.
func (s SASL) GoString() string { return s.String() }

// MarshalJSON writes the settings with the password as "***" (for
// loggers and dumps that encode structs as JSON).
func (s SASL) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct{ Mechanism, Username, Password string }{strings.ToUpper(s.Mechanism), s.Username, "***"})
}

// LogValue keeps the password out of logs.
func (s SASL) LogValue() slog.Value {
	return slog.GroupValue(slog.String("mechanism", strings.ToUpper(s.Mechanism)), slog.String("username", s.Username), slog.String("password", "***"))
}

func (s SASL) mechanism() (sasl.Mechanism, error) {
	switch strings.ToUpper(s.Mechanism) {
	case SASLPlain:
		return plain.Auth{User: s.Username, Pass: s.Password}.AsMechanism(), nil
	case SASLScramSHA256:
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha256Mechanism(), nil
	case SASLScramSHA512:
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("kafka sasl: mechanism %q: want %s, %s or %s", s.Mechanism, SASLPlain, SASLScramSHA256, SASLScramSHA512)
}

// securityOpts are the client options for TLS and SASL.
func (c Config) securityOpts() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if c.TLS != nil {
		tc, err := c.TLS.Config()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if c.SASL != nil {
		m, err := c.SASL.mechanism()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

// ErrAuthentication is wrapped by errors of requests the brokers refused
// because they did not accept the SASL credentials or mechanism.
var ErrAuthentication = errors.New("kafka: SASL authentication failed (check kafka.sasl_mechanism, kafka.sasl_username and kafka.sasl_password)")

// explainAuth marks a broker's refusal of the credentials with
// ErrAuthentication, so that a role stops saying so rather than "not
// reachable". franz-go's error, kept behind it, names the mechanism, never
// the password. Other errors are returned as they are.
func explainAuth(err error) error {
	if err == nil || errors.Is(err, ErrAuthentication) {
		return err
	}
	if errors.Is(err, kerr.SaslAuthenticationFailed) || errors.Is(err, kerr.UnsupportedSaslMechanism) || errors.Is(err, kerr.IllegalSaslState) {
		return fmt.Errorf("%w: %w", ErrAuthentication, err)
	}
	return err
}

// CheckAuth reports whether the brokers refuse c's SASL credentials: a
// wrong password never starts working by itself, so roles that would
// otherwise retry forever (sinks, dashboard) call it at start and stop with
// the error. Only an authentication failure is returned (wrapping
// ErrAuthentication); an unreachable broker is nil here, for the caller's
// own retries. Without SASL it makes no request.
func CheckAuth(ctx context.Context, c Config) error {
	if c.SASL == nil {
		return nil
	}
	cl, err := NewClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	return checkAuth(ctx, cl)
}

func checkAuth(ctx context.Context, cl *kgo.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := Ping(ctx, cl); errors.Is(err, ErrAuthentication) {
		return err
	}
	return nil
}
