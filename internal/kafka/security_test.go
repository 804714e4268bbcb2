package kafka

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
)

// testPKI is a CA with a server certificate for 127.0.0.1 / "kafka.test"
// and a client certificate, as PEM files in a temporary directory.
type testPKI struct {
	caFile, serverCert, serverKey, clientCert, clientKey string
	ca                                                   *x509.Certificate
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	serial := int64(0)
	certify := func(tmpl *x509.Certificate, key *ecdsa.PrivateKey, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) *x509.Certificate {
		serial++
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore = time.Now().Add(-time.Hour)
		tmpl.NotAfter = time.Now().Add(time.Hour)
		if parent == nil {
			parent, parentKey = tmpl, key
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
		if err != nil {
			t.Fatal(err)
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	keyDER := func(k *ecdsa.PrivateKey) []byte {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return der
	}
	caKey := newKey()
	ca := certify(&x509.Certificate{
		Subject: pkix.Name{CommonName: "eventlogging test CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}, caKey, nil, nil)
	srvKey := newKey()
	srv := certify(&x509.Certificate{
		Subject: pkix.Name{CommonName: "kafka.test"}, DNSNames: []string{"kafka.test"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, srvKey, ca, caKey)
	cliKey := newKey()
	cli := certify(&x509.Certificate{
		Subject:  pkix.Name{CommonName: "eventlogging"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, cliKey, ca, caKey)
	return testPKI{
		caFile:     write("ca.pem", "CERTIFICATE", ca.Raw),
		serverCert: write("server.pem", "CERTIFICATE", srv.Raw),
		serverKey:  write("server-key.pem", "PRIVATE KEY", keyDER(srvKey)),
		clientCert: write("client.pem", "CERTIFICATE", cli.Raw),
		clientKey:  write("client-key.pem", "PRIVATE KEY", keyDER(cliKey)),
		ca:         ca,
	}
}

// serverTLS is the broker side: the server certificate, client
// certificates from the CA required.
func (p testPKI) serverTLS(t *testing.T) *tls.Config {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(p.serverCert, p.serverKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(p.ca)
	return &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
}

// TestTLSConfigFromFiles: opts() builds the TLS configuration from PEM
// files (CA, client certificate and key, server name), and says which file
// is wrong when one is.
func TestTLSConfigFromFiles(t *testing.T) {
	pki := newTestPKI(t)
	c := Config{Brokers: []string{"127.0.0.1:9093"}, TLS: &TLS{CAFile: pki.caFile, CertFile: pki.clientCert, KeyFile: pki.clientKey, ServerName: "kafka.test"}}
	if _, err := c.opts(); err != nil {
		t.Fatalf("opts: %v", err)
	}
	tc, err := c.TLS.Config()
	if err != nil {
		t.Fatal(err)
	}
	if tc.ServerName != "kafka.test" || tc.InsecureSkipVerify || tc.MinVersion != tls.VersionTLS12 || len(tc.Certificates) != 1 {
		t.Errorf("tls config: server name %q, insecure %v, min version %x, %d certificates", tc.ServerName, tc.InsecureSkipVerify, tc.MinVersion, len(tc.Certificates))
	}
	// The pool holds the CA: the server certificate verifies against it.
	srvPEM, _ := os.ReadFile(pki.serverCert)
	block, _ := pem.Decode(srvPEM)
	srv, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Verify(x509.VerifyOptions{Roots: tc.RootCAs, DNSName: "kafka.test"}); err != nil {
		t.Errorf("server certificate does not verify against the CA file's pool: %v", err)
	}
	leaf, err := x509.ParseCertificate(tc.Certificates[0].Certificate[0])
	if err != nil || leaf.Subject.CommonName != "eventlogging" {
		t.Errorf("client certificate %v (%v)", leaf.Subject, err)
	}
	// No CA file: the system roots (nil pool); no client certificate.
	if tc, err := (&TLS{}).Config(); err != nil || tc.RootCAs != nil || len(tc.Certificates) != 0 {
		t.Errorf("empty TLS: %+v, %v", tc, err)
	}

	notPEM := filepath.Join(t.TempDir(), "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		tls  TLS
		want string
	}{
		{"missing CA file", TLS{CAFile: "/nonexistent/ca.pem"}, "CA file: open /nonexistent/ca.pem"},
		{"CA file without certificates", TLS{CAFile: notPEM}, "no PEM certificate"},
		{"certificate without key", TLS{CertFile: pki.clientCert}, "both a certificate file and a key file"},
		{"key without certificate", TLS{KeyFile: pki.clientKey}, "both a certificate file and a key file"},
		{"key of another certificate", TLS{CertFile: pki.clientCert, KeyFile: pki.serverKey}, "client certificate"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Config{Brokers: []string{"b:9093"}, TLS: &c.tls}.opts()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

// TestTLSAndSASLOnKfake: a client with the CA file, a client certificate
// and SCRAM-SHA-256 creates a topic, produces and reads back on a broker
// that requires all three (kfake with TLS and SASL: SASL_SSL); without the
// CA, or with the wrong password, it does not get in.
func TestTLSAndSASLOnKfake(t *testing.T) {
	pki := newTestPKI(t)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(pki.serverTLS(t)),
		kfake.EnableSASL(), kfake.Superuser(SASLScramSHA256, "eventlogging", "s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	good := Config{
		Brokers: cluster.ListenAddrs(),
		TLS:     &TLS{CAFile: pki.caFile, CertFile: pki.clientCert, KeyFile: pki.clientKey},
		SASL:    &SASL{Mechanism: "scram-sha-256", Username: "eventlogging", Password: "s3cret"},
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cl, err := NewClient(good)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := NewTopics(cl, TopicDefaults{}).Ensure(ctx, "secure"); err != nil {
		t.Fatalf("ensure topic over SASL_SSL: %v", err)
	}
	if err := ProduceSync(ctx, cl, []Message{{Topic: "secure", Value: []byte("hello")}}); err != nil {
		t.Fatalf("produce: %v", err)
	}
	var got []string
	rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
	defer rcancel()
	err = Read(rctx, ReadConfig{Kafka: good, Topic: "secure", AllPartitions: true}, func(r Record) error {
		got = append(got, string(r.Value))
		return nil
	})
	if err != nil || len(got) != 1 || got[0] != "hello" {
		t.Fatalf("read back %q, %v", got, err)
	}
	if err := CheckAuth(ctx, good); err != nil {
		t.Errorf("CheckAuth with good credentials: %v", err)
	}

	// Without the CA the broker's certificate is not trusted.
	noCA := good
	noCA.TLS = &TLS{CertFile: pki.clientCert, KeyFile: pki.clientKey}
	wantPingFails(ctx, t, noCA, "ping without the CA")
	// Plaintext to a TLS listener does not get in either.
	plain := good
	plain.TLS = nil
	wantPingFails(ctx, t, plain, "plaintext ping to the TLS listener")
}

// wantPingFails fails t if a client with cfg can ping the broker within 5
// seconds; what names the attempt.
func wantPingFails(ctx context.Context, t *testing.T, cfg Config, what string) {
	t.Helper()
	cl, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := Ping(pctx, cl); err == nil {
		t.Errorf("%s succeeded", what)
	}
}

// TestSASLMechanisms: PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 each
// authenticate against a broker holding that user; an unknown mechanism is
// an error before any connection.
func TestSASLMechanisms(t *testing.T) {
	for _, mech := range []string{SASLPlain, SASLScramSHA256, SASLScramSHA512} {
		t.Run(mech, func(t *testing.T) {
			cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser(mech, "u", "p"))
			if err != nil {
				t.Fatal(err)
			}
			defer cluster.Close()
			cl, err := NewClient(Config{Brokers: cluster.ListenAddrs(), SASL: &SASL{Mechanism: mech, Username: "u", Password: "p"}})
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
			defer cancel()
			if err := NewTopics(cl, TopicDefaults{}).Ensure(ctx, "t"); err != nil {
				t.Fatalf("%s: %v", mech, err)
			}
		})
	}
	_, err := Config{Brokers: []string{"b:9092"}, SASL: &SASL{Mechanism: "GSSAPI", Username: "u", Password: "p"}}.opts()
	if err == nil || !strings.Contains(err.Error(), `mechanism "GSSAPI"`) {
		t.Errorf("unknown mechanism: %v", err)
	}
}

// TestSASLPasswordNeverPrinted: the SASL settings print and log without
// the password, and an authentication error names the keys to check.
func TestSASLPasswordNeverPrinted(t *testing.T) {
	s := SASL{Mechanism: "scram-sha-512", Username: "eventlogging", Password: "hunter2-secret"}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("kafka", "sasl", s, "config", Config{SASL: &s})
	js, err := json.Marshal(Config{SASL: &s})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{s.String(), fmt.Sprint(s), fmt.Sprintf("%+v %#v %v", s, s, &s), buf.String(), string(js)} {
		if strings.Contains(text, "hunter2") {
			t.Errorf("password printed: %s", text)
		}
	}
	if !strings.Contains(s.String(), "SCRAM-SHA-512") || !strings.Contains(buf.String(), `"username":"eventlogging"`) {
		t.Errorf("printed %q / %s", s.String(), buf.String())
	}

	err = explainAuth(fmt.Errorf("create topics [x]: %w", kerr.SaslAuthenticationFailed))
	if !errors.Is(err, ErrAuthentication) || !errors.Is(err, kerr.SaslAuthenticationFailed) ||
		!strings.Contains(err.Error(), "SASL authentication failed") || !strings.Contains(err.Error(), "kafka.sasl_password") {
		t.Errorf("explainAuth: %v", err)
	}
	other := errors.New("dial tcp: connection refused")
	if got := explainAuth(other); errors.Is(got, ErrAuthentication) || got.Error() != other.Error() || explainAuth(nil) != nil {
		t.Error("explainAuth changed a non-authentication error")
	}
}
