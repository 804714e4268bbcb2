package e2e

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/eventlogging/eventlogging/internal/kafkatest"
	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// The PHP client's Kafka transport (clients/php/src/Kafka): the Producer
// against the standalone's embedded broker, the real broker and kfake
// clusters with faults, TLS and SASL; EventLogging::logEvent over Kafka
// through the processors; the Monolog handler's Avro records read back by
// `eventlogging tail` and Confluent's Python deserializer, and stored by
// the sinks. Each test runs PHP processes as a web server would.

const phpKafkaDriver = "../../clients/php/tests/kafka_driver.php"

// phpKafkaRecord is what the PHP Producer reports for one record.
type phpKafkaRecord struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Offset    *int64  `json:"offset"`
	Error     *string `json:"error"`
}

// phpKafkaResult is one line of kafka_driver.php produce/monolog.
type phpKafkaResult struct {
	OK     bool `json:"ok"`
	Result struct {
		OK       bool             `json:"ok"`
		Error    *string          `json:"error"`
		Records  []phpKafkaRecord `json:"records"`
		Attempts int              `json:"attempts"`
		Metadata string           `json:"metadata"`
		Elapsed  float64          `json:"elapsed"`
	} `json:"result"`
	Reported []string `json:"reported"`
	Pending  int      `json:"pending"`
}

func (r phpKafkaResult) String() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// phpProducer is one `php kafka_driver.php produce` process: each send is
// one sendMany in the same PHP process (its metadata cache, its
// connections), until close.
type phpProducer struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr *strings.Builder
}

func startPHPProducer(t *testing.T, php string, opts map[string]any) *phpProducer {
	t.Helper()
	o, err := json.Marshal(opts)
	if err != nil {
		t.Fatal(err)
	}
	p := &phpProducer{cmd: exec.CommandContext(t.Context(), php, phpKafkaDriver, "produce", string(o)), stderr: &strings.Builder{}}
	p.cmd.Stderr = p.stderr
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.out = bufio.NewScanner(stdout)
	p.out.Buffer(make([]byte, 1<<20), 16<<20)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.in.Close()
		_ = p.cmd.Wait()
	})
	return p
}

// send runs one command ({"records": [...], "fresh": bool}) and returns its result.
func (p *phpProducer) send(t *testing.T, cmd map[string]any) phpKafkaResult {
	t.Helper()
	b, err := json.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.in.Write(append(b, '\n')); err != nil {
		t.Fatalf("writing to php: %v\n%s", err, p.stderr)
	}
	if !p.out.Scan() {
		t.Fatalf("php printed no result: %v\n%s", p.out.Err(), p.stderr)
	}
	var r phpKafkaResult
	if err := json.Unmarshal(p.out.Bytes(), &r); err != nil {
		t.Fatalf("php printed %q: %v\n%s", p.out.Bytes(), err, p.stderr)
	}
	return r
}

// phpSendOnce runs a fresh PHP process that sends records once.
func phpSendOnce(t *testing.T, php string, opts map[string]any, records ...[]any) phpKafkaResult {
	t.Helper()
	r, err := runPHPSend(t.Context(), php, opts, records...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// runPHPSend is phpSendOnce returning its failure (for goroutines).
func runPHPSend(ctx context.Context, php string, opts map[string]any, records ...[]any) (phpKafkaResult, error) {
	var r phpKafkaResult
	o, err := json.Marshal(opts)
	if err != nil {
		return r, err
	}
	cmd, err := json.Marshal(map[string]any{"records": records})
	if err != nil {
		return r, err
	}
	c := exec.CommandContext(ctx, php, phpKafkaDriver, "produce", string(o))
	c.Stdin = strings.NewReader(string(cmd) + "\n")
	var stderr strings.Builder
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		return r, fmt.Errorf("php: %w\n%s", err, stderr.String())
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return r, fmt.Errorf("php printed %q: %w\n%s", out, err, stderr.String())
	}
	return r, nil
}

// createTopicN creates topic with partitions partitions on brokers.
func createTopicN(t *testing.T, brokers []string, topic string, partitions int32, opts ...kgo.Opt) {
	t.Helper()
	adm := kadm.NewClient(kafkaClient(t, brokers, opts...))
	resp, err := adm.CreateTopic(t.Context(), partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// readAll reads topic from the start until want records arrived (or 60 s).
func readAll(t *testing.T, brokers []string, topic string, want int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	var recs []*kgo.Record
	pollFrom(t, brokers, opts, topic, 60*time.Second, func(f kgo.Fetches) bool {
		f.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
		return len(recs) >= want
	}, func(kgo.Fetches) { t.Fatalf("%s: %d records after 60 s, want %d", topic, len(recs), want) })
	return recs
}

// TestClientPHPKafkaUnit runs the Kafka transport's own PHP tests: CRC-32C,
// murmur2 against Java's vectors, RecordBatch v2, SCRAM (RFC 7677), Avro
// encodings and refusals, options, failures that never throw.
func TestClientPHPKafkaUnit(t *testing.T) {
	php := phpBinary(t)
	out, _ := runPHP(t, php, "../../clients/php/tests/kafka_unit.php")
	if !strings.HasPrefix(out, "ok: ") {
		t.Fatal(out)
	}
	t.Log(strings.TrimSpace(out))
}

// startPHPStandalone starts `eventlogging standalone` with the example
// schemas and streams, sink batches of 200 ms; it returns the HTTP base
// URL, the embedded broker's address and the data directory.
func startPHPStandalone(t *testing.T) (base, broker, dataDir string) {
	t.Helper()
	dataDir = filepath.Join(t.TempDir(), "data")
	addr, kaddr := freeAddr(t), freeAddr(t)
	startService(t, "standalone", []string{"EVENTLOGGING_SINK_BATCH_TIME=200ms"}, "standalone", "--data-dir", dataDir,
		"--listen", addr, "--kafka-listen", kaddr, "--schemas", "../../examples/schemas", "--streams", "../../examples/streams.yaml")
	waitReady(t, "http://"+addr)
	return "http://" + addr, kaddr, dataDir
}

// TestClientPHPKafkaProducer: one PHP process per send, on the
// standalone's embedded broker and on the real broker. Every send that
// returned true is in the topic exactly once, at the partition and offset
// PHP reported, with its key and headers; a keyed record is on the
// partition franz-go's murmur2 partitioner (Java's) gives its key, checked
// by producing the same keys with franz-go; sendMany of 100 records in
// one process lands whole.
func TestClientPHPKafkaProducer(t *testing.T) {
	php := phpBinary(t)
	t.Run("embedded broker", func(t *testing.T) {
		_, broker, _ := startPHPStandalone(t)
		checkPHPProducer(t, php, []string{broker})
	})
	t.Run("real broker", func(t *testing.T) {
		checkPHPProducer(t, php, kafkatest.Brokers(t))
	})
}

func checkPHPProducer(t *testing.T, php string, brokers []string) {
	topic := kafkatest.Topic(t, "php-producer")
	const partitions = 6
	createTopicN(t, brokers, topic, partitions)
	nonce := strconv.FormatInt(time.Now().UnixNano(), 36)

	// 24 PHP processes, 4 at a time, one record each: a third without a
	// key, the others keyed; every other one asks for metadata on its send
	// ('none'), the others use the process cache (fresh per process).
	const sends = 24
	type sent struct {
		key    *string
		header string
		res    phpKafkaResult
	}
	results := make([]sent, sends)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i := range sends {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			var key *string
			if i%3 != 0 {
				k := fmt.Sprintf("user-%d", i%7)
				key = &k
			}
			cache := "process"
			if i%2 == 0 {
				cache = "none"
			}
			h := fmt.Sprintf("h-%d", i)
			r, err := runPHPSend(t.Context(), php, map[string]any{"brokers": brokers, "metadataCache": cache, "timeout": 5.0},
				[]any{topic, fmt.Sprintf("php-%s-%d", nonce, i), key, map[string]string{"n": h}})
			if err != nil {
				t.Error(err)
			}
			results[i] = sent{key: key, header: h, res: r}
		})
	}
	wg.Wait()

	// One process, sendMany of 100: half keyed.
	var many [][]any
	for i := range 100 {
		var key any
		if i%2 == 1 {
			key = fmt.Sprintf("order-%d", i)
		}
		many = append(many, []any{topic, fmt.Sprintf("many-%s-%d", nonce, i), key})
	}
	manyRes := phpSendOnce(t, php, map[string]any{"brokers": brokers, "timeout": 5.0}, many...)
	if !manyRes.OK || len(manyRes.Result.Records) != 100 {
		t.Fatalf("sendMany of 100: %s", manyRes)
	}
	t.Logf("sendMany of 100 records: %.1f ms", manyRes.Result.Elapsed*1000)

	want := map[string]phpKafkaRecord{} // value -> where PHP put it
	keys := map[string]*string{}
	headers := map[string]string{}
	for i, s := range results {
		if !s.res.OK {
			t.Errorf("send %d returned false: %s", i, s.res)
			continue
		}
		v := fmt.Sprintf("php-%s-%d", nonce, i)
		want[v], keys[v], headers[v] = s.res.Result.Records[0], s.key, s.header
	}
	for i, r := range manyRes.Result.Records {
		v := fmt.Sprintf("many-%s-%d", nonce, i)
		want[v] = r
		if i%2 == 1 {
			k := fmt.Sprintf("order-%d", i)
			keys[v] = &k
		}
	}

	// Keys produced by franz-go with its murmur2 partitioner (nil hasher:
	// Java's murmur2) land where PHP put the same keys.
	goCl := kafkaClient(t, brokers, kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	goPartition := map[string]int32{}
	for _, k := range keys {
		if k == nil || goPartition[*k] != 0 {
			continue
		}
		r := &kgo.Record{Topic: topic, Key: []byte(*k), Value: []byte("go-" + *k)}
		if err := goCl.ProduceSync(t.Context(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		goPartition[*k] = r.Partition + 1 // +1: 0 means not produced
	}

	recs := readAll(t, brokers, topic, len(want)+len(goPartition))
	seen := map[string]int{}
	keyed := 0
	for _, r := range recs {
		v := string(r.Value)
		if strings.HasPrefix(v, "go-") {
			continue
		}
		seen[v]++
		w, ok := want[v]
		if !ok {
			t.Errorf("record %q was not reported sent", v)
			continue
		}
		if w.Partition != r.Partition || w.Offset == nil || *w.Offset != r.Offset {
			t.Errorf("%s: at %d/%d, PHP reported %d/%v", v, r.Partition, r.Offset, w.Partition, w.Offset)
		}
		k := keys[v]
		switch {
		case k == nil && r.Key != nil:
			t.Errorf("%s: key %q, sent none", v, r.Key)
		case k != nil:
			keyed++
			if string(r.Key) != *k {
				t.Errorf("%s: key %q, sent %q", v, r.Key, *k)
			}
			if gp := goPartition[*k] - 1; gp != r.Partition {
				t.Errorf("key %q: PHP put it on partition %d, franz-go's murmur2 on %d", *k, r.Partition, gp)
			}
		}
		if h, ok := headers[v]; ok && (len(r.Headers) != 1 || r.Headers[0].Key != "n" || string(r.Headers[0].Value) != h) {
			t.Errorf("%s: headers %v, sent n=%s", v, r.Headers, h)
		}
	}
	for v := range want {
		if seen[v] != 1 {
			t.Errorf("%s: in the topic %d times, want exactly once", v, seen[v])
		}
	}
	used := map[int32]bool{}
	for _, w := range want {
		used[w.Partition] = true
	}
	t.Logf("%d records from %d PHP processes, each once; %d keyed records on franz-go's partition for their key (%d distinct keys); %d of %d partitions used",
		len(want), sends+1, keyed, len(goPartition), len(used), partitions)
}

// newKfake starts an in-process kfake cluster (franz-go's fake broker:
// the real protocol) with opts, closed when the test ends.
func newKfake(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestClientPHPKafkaFaults: on a 3-broker kfake cluster, a PHP process
// whose cached leader moved (NOT_LEADER_OR_FOLLOWER) or died (connection
// refused) refreshes its metadata and delivers on the second try, each
// record once; with a broker that never answers, or none listening, send
// returns false within its timeout and reports why.
func TestClientPHPKafkaFaults(t *testing.T) {
	php := phpBinary(t)
	const topic = "php-faults"
	c := newKfake(t, kfake.NumBrokers(3), kfake.SeedTopics(3, topic))
	brokers := c.ListenAddrs()

	p := startPHPProducer(t, php, map[string]any{"brokers": brokers, "metadataCache": "process", "timeout": 5.0})
	rec := func(v string) map[string]any { return map[string]any{"records": [][]any{{topic, v, "the-key"}}} }
	first := p.send(t, rec("before-move"))
	if !first.OK || first.Result.Attempts != 1 {
		t.Fatalf("first send: %s", first)
	}
	part := first.Result.Records[0].Partition
	leader := c.LeaderFor(topic, part)
	other := (leader + 1) % 3 // kfake's nodes are 0, 1, 2
	if err := c.MoveTopicPartition(topic, part, other); err != nil {
		t.Fatal(err)
	}
	moved := p.send(t, rec("after-move"))
	if !moved.OK || moved.Result.Attempts != 2 || moved.Result.Records[0].Partition != part || moved.Result.Metadata != "fetched" {
		t.Errorf("send after the leader moved from %d to %d: %s (want ok on the second attempt, same partition)", leader, other, moved)
	}
	t.Logf("leader of %s/%d moved %d → %d: delivered on attempt %d in %.1f ms", topic, part, leader, other, moved.Result.Attempts, moved.Result.Elapsed*1000)

	// The leader dies: a new Producer in the same process (no open
	// connection, the cached leader) is refused, asks again, delivers.
	dead := c.LeaderFor(topic, part)
	if err := c.RemoveNode(dead); err != nil {
		t.Fatal(err)
	}
	cmd := rec("after-death")
	cmd["fresh"] = true
	died := p.send(t, cmd)
	if !died.OK || died.Result.Attempts != 2 {
		t.Errorf("send after the leader %d died: %s (want ok on the second attempt)", dead, died)
	}
	t.Logf("leader %d removed: delivered on attempt %d in %.1f ms", dead, died.Result.Attempts, died.Result.Elapsed*1000)
	live := slices.DeleteFunc(slices.Clone(brokers), func(a string) bool {
		conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(t.Context(), "tcp", a)
		if err != nil {
			return true
		}
		conn.Close()
		return false
	})
	seen := map[string]int{}
	for _, r := range readAll(t, live, topic, 3) {
		seen[string(r.Value)]++
	}
	for _, v := range []string{"before-move", "after-move", "after-death"} {
		if seen[v] != 1 {
			t.Errorf("%s: %d times in the topic, want once (%v)", v, seen[v], seen)
		}
	}

	// A leader that takes the produce and never answers: false within the
	// 1 s timeout, the records' fate reported as unknown (a timeout).
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		return nil, nil, true // no answer
	})
	for _, tc := range []struct {
		name    string
		brokers []string
		wantErr string
	}{
		{"leader never answers the produce", live, "timeout waiting for an answer"},
		{"broker accepts, never answers", []string{holdingListener(t, nil)}, "timeout"},
		{"nothing listens", []string{freeAddr(t)}, "connecting to"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			r := phpSendOnce(t, php, map[string]any{"brokers": tc.brokers, "timeout": 1.0}, []any{topic, "hang", nil})
			wall := time.Since(start)
			if r.OK || r.Result.Error == nil || !strings.Contains(*r.Result.Error, tc.wantErr) || len(r.Reported) != 1 {
				t.Errorf("result %s, want false with %q, reported once", r, tc.wantErr)
			}
			if r.Result.Elapsed > 1.2 {
				t.Errorf("send took %.3f s, timeout 1 s", r.Result.Elapsed)
			}
			t.Logf("false after %.3f s (PHP process %.3f s): %s", r.Result.Elapsed, wall.Seconds(), *r.Result.Error)
		})
	}
}

// testCerts is a CA, a server certificate for 127.0.0.1 and a client
// certificate, the CA and client files as PEM in a temporary directory.
type testCerts struct {
	server                        tls.Certificate
	pool                          *x509.CertPool
	caFile, clientCert, clientKey string
	otherCAFile                   string
}

func newTestCerts(t *testing.T) testCerts {
	t.Helper()
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	serial := int64(0)
	issue := func(tmpl *x509.Certificate, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		serial++
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
		if parent == nil {
			parent, parentKey = tmpl, key
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		return cert, key, der
	}
	caTmpl := &x509.Certificate{Subject: pkix.Name{CommonName: "php test CA"}, IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	ca, caKey, caDER := issue(caTmpl, nil, nil)
	_, _, otherDER := issue(&x509.Certificate{Subject: pkix.Name{CommonName: "other CA"}, IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}, nil, nil)
	srv, srvKey, srvDER := issue(&x509.Certificate{Subject: pkix.Name{CommonName: "kafka.test"}, DNSNames: []string{"kafka.test"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}, ca, caKey)
	_, cliKey, cliDER := issue(&x509.Certificate{Subject: pkix.Name{CommonName: "php client"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}, ca, caKey)
	keyDER := func(k *ecdsa.PrivateKey) []byte {
		b, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return testCerts{
		server:      tls.Certificate{Certificate: [][]byte{srvDER}, PrivateKey: srvKey, Leaf: srv},
		pool:        pool,
		caFile:      write("ca.pem", "CERTIFICATE", caDER),
		otherCAFile: write("other-ca.pem", "CERTIFICATE", otherDER),
		clientCert:  write("client.pem", "CERTIFICATE", cliDER),
		clientKey:   write("client-key.pem", "PRIVATE KEY", keyDER(cliKey)),
	}
}

// TestClientPHPKafkaSecurity: TLS with a client certificate and SASL
// (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) on kfake clusters: the right
// settings deliver, a wrong CA, a missing client certificate and a wrong
// password return false naming the cause; and SCRAM against the real
// SCRAM broker of scripts/test.sh (EVENTLOGGING_KAFKA_SCRAM_BROKERS).
func TestClientPHPKafkaSecurity(t *testing.T) {
	php := phpBinary(t)
	const topic = "php-security"
	certs := newTestCerts(t)
	tlsCluster := newKfake(t, kfake.NumBrokers(1), kfake.SeedTopics(2, topic), kfake.TLS(&tls.Config{
		Certificates: []tls.Certificate{certs.server}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: certs.pool, MinVersion: tls.VersionTLS12}))
	saslCluster := newKfake(t, kfake.NumBrokers(1), kfake.SeedTopics(2, topic), kfake.EnableSASL(),
		kfake.Superuser("PLAIN", "plain-user", "plain-secret"),
		kfake.Superuser("SCRAM-SHA-256", "scram-user", "scram-secret"),
		kfake.Superuser("SCRAM-SHA-512", "scram-user", "scram-secret"))
	goodTLS := map[string]any{"cafile": certs.caFile, "cert": certs.clientCert, "key": certs.clientKey}
	cases := []struct {
		name    string
		brokers []string
		opts    map[string]any
		wantErr string // "" when it must deliver, unless refused
		refused bool   // the broker refuses: the failure's words depend on which side notices first
	}{
		{"TLS with a client certificate", tlsCluster.ListenAddrs(), map[string]any{"tls": goodTLS}, "", false},
		{"TLS, peer name checked", tlsCluster.ListenAddrs(), map[string]any{"tls": map[string]any{"cafile": certs.caFile, "cert": certs.clientCert, "key": certs.clientKey, "peer_name": "kafka.test"}}, "", false},
		{"TLS, unknown CA", tlsCluster.ListenAddrs(), map[string]any{"tls": map[string]any{"cafile": certs.otherCAFile, "cert": certs.clientCert, "key": certs.clientKey}}, "TLS with", false},
		{"TLS, wrong peer name", tlsCluster.ListenAddrs(), map[string]any{"tls": map[string]any{"cafile": certs.caFile, "cert": certs.clientCert, "key": certs.clientKey, "peer_name": "other.test"}}, "TLS with", false},
		{"TLS, no client certificate", tlsCluster.ListenAddrs(), map[string]any{"tls": map[string]any{"cafile": certs.caFile}}, "", true},
		{"plaintext to a TLS broker", tlsCluster.ListenAddrs(), map[string]any{}, "", true},
		{"SASL PLAIN", saslCluster.ListenAddrs(), map[string]any{"sasl": map[string]any{"mechanism": "PLAIN", "username": "plain-user", "password": "plain-secret"}}, "", false},
		{"SASL SCRAM-SHA-256", saslCluster.ListenAddrs(), map[string]any{"sasl": map[string]any{"mechanism": "SCRAM-SHA-256", "username": "scram-user", "password": "scram-secret"}}, "", false},
		{"SASL SCRAM-SHA-512", saslCluster.ListenAddrs(), map[string]any{"sasl": map[string]any{"mechanism": "SCRAM-SHA-512", "username": "scram-user", "password": "scram-secret"}}, "", false},
		{"SASL SCRAM-SHA-256, wrong password", saslCluster.ListenAddrs(), map[string]any{"sasl": map[string]any{"mechanism": "SCRAM-SHA-256", "username": "scram-user", "password": "wrong"}}, "SASL authentication failed", false},
		{"SASL PLAIN, wrong password", saslCluster.ListenAddrs(), map[string]any{"sasl": map[string]any{"mechanism": "PLAIN", "username": "plain-user", "password": "wrong"}}, "SASL authentication failed", false},
		{"no SASL to a SASL broker", saslCluster.ListenAddrs(), map[string]any{}, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := map[string]any{"brokers": tc.brokers, "timeout": 2.0}
			for k, v := range tc.opts {
				opts[k] = v
			}
			r := phpSendOnce(t, php, opts, []any{topic, "secure " + tc.name, nil})
			switch {
			case tc.refused:
				if r.OK || r.Result.Error == nil || r.Result.Elapsed > 2.2 {
					t.Errorf("result %s, want a failure within the timeout", r)
				}
				if strings.Contains(strings.Join(r.Reported, " "), "secret") {
					t.Errorf("the password was reported: %v", r.Reported)
				}
			case tc.wantErr == "":
				if !r.OK {
					t.Errorf("result %s, want delivered", r)
				}
			default:
				if r.OK || r.Result.Error == nil || !strings.Contains(*r.Result.Error, tc.wantErr) {
					t.Errorf("result %s, want false with %q", r, tc.wantErr)
				}
				if strings.Contains(*r.Result.Error, "wrong") || strings.Contains(*r.Result.Error, "secret") {
					t.Errorf("the error shows the password: %s", *r.Result.Error)
				}
			}
			if r.Result.Error != nil {
				t.Logf("%.3f s: %s", r.Result.Elapsed, *r.Result.Error)
			}
		})
	}

	t.Run("real SCRAM broker", func(t *testing.T) {
		brokers, user, password := scramBroker(t)
		realTopic := kafkatest.Topic(t, "php-scram")
		auth := kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha256Mechanism())
		createTopicN(t, brokers, realTopic, 3, auth)
		for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512"} {
			r := phpSendOnce(t, php, map[string]any{"brokers": brokers, "timeout": 5.0,
				"sasl": map[string]any{"mechanism": mech, "username": user, "password": password}}, []any{realTopic, "over " + mech, "k"})
			if !r.OK {
				t.Errorf("%s: %s", mech, r)
			}
			bad := phpSendOnce(t, php, map[string]any{"brokers": brokers, "timeout": 5.0,
				"sasl": map[string]any{"mechanism": mech, "username": user, "password": "not-" + password}}, []any{realTopic, "refused", nil})
			if bad.OK || bad.Result.Error == nil || !strings.Contains(*bad.Result.Error, "SASL authentication failed") {
				t.Errorf("%s with a wrong password: %s", mech, bad)
			}
		}
		got := map[string]bool{}
		for _, r := range readAll(t, brokers, realTopic, 2, auth) {
			got[string(r.Value)] = true
		}
		if !got["over SCRAM-SHA-256"] || !got["over SCRAM-SHA-512"] || len(got) != 2 {
			t.Errorf("the SCRAM broker's topic holds %v", got)
		}
	})
}

// TestClientPHPKafkaServerSide: EventLogging::configure(['transport' =>
// 'kafka']) on standalone: logEvent() and submit() produce raw server-side
// lines to eventlogging-server-side, which the processors read by default:
// the valid events become capsules in their topics (the legacy ones with
// the PHP host as recvFrom) and rows in SQLite, the invalid one an
// EventError pointing at its raw record.
func TestClientPHPKafkaServerSide(t *testing.T) {
	php := phpBinary(t)
	base, broker, dataDir := startPHPStandalone(t)
	_ = base
	opts := map[string]any{
		"brokers":  []string{broker},
		"wiki":     "testwiki",
		"webHost":  "php.example.org",
		"recvFrom": "php-host-1",
		"timeout":  5.0,
		"events": [][]any{
			{"NavigationTiming", 7, map[string]any{"responseStart": 101, "loadEventEnd": 901, "isHttps": true}},
			{"SearchQuery", 5, map[string]any{"query": "server side over kafka", "results": 3, "source": "fulltext"}},
			{"NavigationTiming", 7, map[string]any{"responseStart": "fast", "loadEventEnd": 903}},
		},
		"submit": [][]any{
			{"analytics.edit_funnel", map[string]any{"$schema": "/analytics/edit_funnel/1.0.0", "action": "save_success", "editor": "wikitext", "session_token": "php-kafka-session-1"}},
		},
	}
	o, _ := json.Marshal(opts)
	out, _ := runPHP(t, php, phpKafkaDriver, "serverside", string(o))
	var res struct {
		OK        bool             `json:"ok"`
		Transport string           `json:"transport"`
		Accepted  int              `json:"accepted"`
		Records   []phpKafkaRecord `json:"records"`
		Reported  []string         `json:"reported"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	if !res.OK || res.Transport != "kafka" || res.Accepted != 4 || len(res.Records) != 4 || res.Records[0].Topic != "eventlogging-server-side" {
		t.Fatalf("flush over Kafka: %s", out)
	}

	read := func(topic string, n int) []map[string]any {
		var recs []map[string]any
		for line := range strings.SplitSeq(strings.TrimSpace(runCLI(t, "tail", "--data-dir", dataDir, "--from-beginning", "--count", strconv.Itoa(n), "--timeout", "60s", topic)), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("tail %s: %q: %v", topic, line, err)
			}
			recs = append(recs, m)
		}
		if len(recs) != n {
			t.Fatalf("%s: %d records, want %d", topic, len(recs), n)
		}
		return recs
	}
	nav := read("eventlogging_NavigationTiming", 1)[0]
	if nav["recvFrom"] != "php-host-1" || nav["wiki"] != "testwiki" || nav["webHost"] != "php.example.org" || recordField(nav, "event.loadEventEnd") != 901.0 || nav["uuid"] == nil {
		t.Errorf("NavigationTiming capsule %v", nav)
	}
	if sq := read("eventlogging_SearchQuery", 1)[0]; recordField(sq, "event.query") != "server side over kafka" {
		t.Errorf("SearchQuery capsule %v", sq)
	}
	funnel := read("eventlogging_analytics.edit_funnel", 1)[0]
	if funnel["session_token"] != "php-kafka-session-1" || recordField(funnel, "meta.stream") != "analytics.edit_funnel" || recordField(funnel, "meta.id") == nil {
		t.Errorf("Event Platform event %v", funnel)
	}
	ee := read("eventlogging_EventError", 1)[0]
	if recordField(ee, "event.code") != "validation" || recordField(ee, "event.source.topic") != "eventlogging-server-side" ||
		!strings.Contains(recordField(ee, "event.rawEvent").(string), ` EventLogging {"schema":"NavigationTiming"`) {
		t.Errorf("EventError %v", ee)
	}

	db := openSQLite(t, filepath.Join(dataDir, "events.db"))
	var recvFrom, uuid string
	waitFor(t, 60*time.Second, "the NavigationTiming row in SQLite", func() bool {
		return db.QueryRowContext(t.Context(), `SELECT recvFrom, uuid FROM "NavigationTiming_7"`).Scan(&recvFrom, &uuid) == nil
	})
	if recvFrom != "php-host-1" || uuid != nav["uuid"] {
		t.Errorf("SQLite row recvFrom %q uuid %q, capsule %v", recvFrom, uuid, nav)
	}
	t.Logf("logEvent over Kafka: capsule %v in Kafka and SQLite; invalid event → EventError %q", nav["uuid"], recordField(ee, "event.message"))
}

// phpLogAvsc is the Avro schema of TestClientPHPKafkaMonologAvro's log records.
const phpLogAvsc = `{"type": "record", "name": "BillingLog", "namespace": "org.example.php", "fields": [
  {"name": "message", "type": "string"},
  {"name": "level", "type": {"type": "enum", "name": "Level", "symbols": ["DEBUG", "INFO", "NOTICE", "WARNING", "ERROR", "CRITICAL", "ALERT", "EMERGENCY"]}},
  {"name": "amount", "type": "double"},
  {"name": "cents", "type": "long"},
  {"name": "attempt", "type": "int"},
  {"name": "retried", "type": "boolean"},
  {"name": "user", "type": ["null", "string"], "default": null},
  {"name": "tags", "type": {"type": "array", "items": "string"}},
  {"name": "timings", "type": {"type": "map", "values": "long"}},
  {"name": "card", "type": ["null", {"type": "record", "name": "Card", "fields": [{"name": "brand", "type": "string"}, {"name": "last4", "type": "string"}]}], "default": null},
  {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}}
]}`

// TestClientPHPKafkaMonologAvro: Monolog 3 records through
// EventLogging\Kafka\MonologHandler on standalone: the billing channel's
// contexts become Avro records of the subject's latest schema (Confluent
// wire format, id from the project's registry), the search channel's JSON,
// all in ONE produce at close(); `eventlogging tail` decodes the Avro
// through the registry with every field equal to what was logged; a
// context that does not fit the schema is refused with the field's path
// and not sent; a record below the level or of an unmapped channel is not
// handled.
func TestClientPHPKafkaMonologAvro(t *testing.T) {
	php := phpBinary(t)
	base, broker, dataDir := startPHPStandalone(t)
	prefix := sinkPrefix(t, "phplog") // not under eventlogging_: the sinks leave it alone
	avroTopic, jsonTopic := prefix+"_billing", prefix+"_search"
	createTopicN(t, []string{broker}, avroTopic, 3)
	createTopicN(t, []string{broker}, jsonTopic, 3)
	subject := avroTopic + "-value"
	body, _ := json.Marshal(map[string]string{"schema": phpLogAvsc, "schemaType": "AVRO"})
	status, answer := httpPost(t, base+"/registry/subjects/"+subject+"/versions", string(body))
	if status != http.StatusOK {
		t.Fatalf("register %s: %d %s", subject, status, answer)
	}
	var reg struct{ ID int }
	_ = json.Unmarshal(answer, &reg)

	billing := []map[string]any{
		{"message": "card declined", "level": "ERROR", "amount": 12.5, "cents": int64(9007199254740993), "attempt": 2, "retried": true,
			"user": "u-17", "tags": []any{"eu", "visa"}, "timings": map[string]any{"gateway_ms": 2300, "db_ms": 4},
			"card": map[string]any{"brand": "visa", "last4": "4242"}, "at": "@datetime:2026-03-01T10:20:30.456Z"},
		{"message": "payment ok", "level": "INFO", "amount": 3.0, "cents": 300, "attempt": 1, "retried": false,
			"tags": []any{}, "timings": map[string]any{}, "at": "@datetime:2026-03-01T10:20:31Z"},
	}
	records := [][]any{
		{"billing", "error", "card declined", billing[0]},
		{"billing", "info", "payment ok", billing[1]},
		{"billing", "warning", "does not fit", map[string]any{"message": "x", "level": "WARNING", "amount": "lots", "cents": 1, "attempt": 1,
			"retried": false, "tags": []any{}, "timings": map[string]any{}, "at": 0}},
		{"search", "notice", "slow search", map[string]any{"query": "kafka", "ms": 830, "when": "@datetime:2026-03-01T10:20:32Z"}},
		{"search", "debug", "below the level", map[string]any{"query": "no"}},
		{"unmapped", "error", "no topic", map[string]any{"x": 1}},
	}
	opts := map[string]any{
		"handler": map[string]any{
			"brokers":  []string{broker},
			"topics":   map[string]string{"billing": avroTopic, "search": jsonTopic},
			"subjects": map[string]string{"billing": subject},
			"registry": base + "/registry",
			"level":    "info",
			"kafka":    map[string]any{"timeout": 5.0},
		},
		"records": records,
	}
	o, _ := json.Marshal(opts)
	out, _ := runPHP(t, php, phpKafkaDriver, "monolog", string(o))
	var res phpKafkaResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	if !res.OK || res.Pending != 3 || len(res.Result.Records) != 3 || res.Result.Attempts != 1 {
		t.Fatalf("want one produce of 3 records: %s", out)
	}
	if len(res.Reported) != 1 || !strings.Contains(res.Reported[0], "/amount") || !strings.Contains(res.Reported[0], "want double") {
		t.Errorf("reported %q, want the record that does not fit, with its field", res.Reported)
	}

	tailed := runCLI(t, "tail", "--data-dir", dataDir, "--from-beginning", "--count", "2", "--timeout", "60s", avroTopic)
	got := map[string]map[string]any{}
	for line := range strings.SplitSeq(strings.TrimSpace(tailed), "\n") {
		var m map[string]any
		d := json.NewDecoder(strings.NewReader(line))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			t.Fatalf("tail printed %q: %v", line, err)
		}
		got[fmt.Sprint(m["message"])] = m
	}
	wantRows := map[string]map[string]any{
		"card declined": {"message": "card declined", "level": "ERROR", "amount": "12.5", "cents": "9007199254740993", "attempt": "2", "retried": true,
			"user": "u-17", "tags": []any{"eu", "visa"}, "timings": map[string]any{"gateway_ms": "2300", "db_ms": "4"},
			"card": map[string]any{"brand": "visa", "last4": "4242"}, "at": time.Date(2026, 3, 1, 10, 20, 30, 456e6, time.UTC)},
		"payment ok": {"message": "payment ok", "level": "INFO", "amount": "3", "cents": "300", "attempt": "1", "retried": false,
			"user": nil, "tags": []any{}, "timings": map[string]any{}, "card": nil, "at": time.Date(2026, 3, 1, 10, 20, 31, 0, time.UTC)},
	}
	for msg, want := range wantRows {
		g, ok := got[msg]
		if !ok {
			t.Errorf("%q not in %s:\n%s", msg, avroTopic, tailed)
			continue
		}
		if len(g) != len(want) {
			t.Errorf("%q: fields %v, want %v", msg, keysOf(g), keysOf(want))
		}
		for k, w := range want {
			if !avroFieldEqual(g[k], w) {
				t.Errorf("%q: %s = %#v, want %#v", msg, k, g[k], w)
			}
		}
	}
	// The records are Confluent wire format with the registered id.
	for _, r := range readAll(t, []string{broker}, avroTopic, 2) {
		if len(r.Value) < 5 || r.Value[0] != 0 || int(r.Value[1])<<24|int(r.Value[2])<<16|int(r.Value[3])<<8|int(r.Value[4]) != reg.ID {
			t.Errorf("record %x: want magic 0 and schema id %d", r.Value[:min(5, len(r.Value))], reg.ID)
		}
	}
	search := readAll(t, []string{broker}, jsonTopic, 1)
	var js map[string]any
	if err := json.Unmarshal(search[0].Value, &js); err != nil || js["query"] != "kafka" || js["ms"] != 830.0 || !strings.HasPrefix(fmt.Sprint(js["when"]), "2026-03-01T10:20:32") {
		t.Errorf("JSON record %s (%v)", search[0].Value, err)
	}
	t.Logf("Monolog → Avro (schema id %d) → tail: %d records equal; JSON channel: %s", reg.ID, len(wantRows), search[0].Value)
}

// phpBillingJSONSchema is the Event Platform schema /php/billing_log/1.0.0
// of TestClientPHPKafkaMonologAvroStored's records: the sinks take a
// record's table, columns and Parquet schema from its $schema.
const phpBillingJSONSchema = `title: php/billing_log
$schema: https://json-schema.org/draft/2020-12/schema
type: object
properties:
  $schema: {type: string}
  meta:
    type: object
    properties:
      stream: {type: string}
      id: {type: string}
      dt: {type: string, format: date-time}
    required: [stream, id, dt]
  message: {type: string}
  level: {type: string, enum: [DEBUG, INFO, NOTICE, WARNING, ERROR, CRITICAL, ALERT, EMERGENCY]}
  amount: {type: number}
  cents: {type: integer}
  attempt: {type: integer}
  retried: {type: boolean}
  user: {type: string}
  tags: {type: array, items: {type: string}}
  timings: {type: object, additionalProperties: {type: integer}}
  card:
    type: object
    properties:
      brand: {type: string}
      last4: {type: string}
  at: {type: string, format: date-time}
required: [$schema, meta, message, level, amount, cents, attempt, retried, tags, timings, at]
`

// phpBillingStoredAvsc is phpLogAvsc with the fields the sinks need of an
// Avro record (docs/avro.md): _schema for $schema, and meta.
var phpBillingStoredAvsc = strings.Replace(phpLogAvsc, `"fields": [`, `"fields": [
  {"name": "_schema", "type": "string"},
  {"name": "meta", "type": {"type": "record", "name": "Meta", "fields": [
    {"name": "stream", "type": "string"}, {"name": "id", "type": "string"}, {"name": "dt", "type": "string"}]}},`, 1)

// TestClientPHPKafkaMonologAvroStored: Monolog records through
// EventLogging\Kafka\MonologHandler as Avro (the subject's schema in the
// project's registry, a topic the standalone's sinks read,
// eventlogging_php_billing) are decoded by Confluent's own Python
// AvroDeserializer against the project's registry, and stored by the
// sinks: the row in SQLite (table php_billing_log_1_0_0, from the
// records' $schema) and in Parquet; every field equal to what was logged
// in all three, nothing in the sink-error topic.
func TestClientPHPKafkaMonologAvroStored(t *testing.T) {
	php := phpBinary(t)
	// startPHPStandalone's, kept to be stopped: a clean stop publishes
	// the open Parquet files.
	dataDir := filepath.Join(t.TempDir(), "data")
	addr, broker := freeAddr(t), freeAddr(t)
	base := "http://" + addr
	sa := startService(t, "standalone", []string{"EVENTLOGGING_SINK_BATCH_TIME=200ms"}, "standalone", "--data-dir", dataDir,
		"--listen", addr, "--kafka-listen", broker, "--schemas", "../../examples/schemas", "--streams", "../../examples/streams.yaml")
	waitReady(t, base)
	const (
		topic     = "eventlogging_php_billing" // the sinks' default sink.topics, ^eventlogging_.+
		subject   = topic + "-value"
		schemaURI = "/php/billing_log/1.0.0"
		table     = "php_billing_log_1_0_0"
	)
	createTopicN(t, []string{broker}, topic, 3)
	dir := t.TempDir()
	file := filepath.Join(dir, "jsonschema", "php", "billing_log", "1.0.0.yaml")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(phpBillingJSONSchema), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := runCLI(t, "schema", "push", dir, "--registry", base+"/registry"); !strings.Contains(out, "1 registered") {
		t.Fatalf("schema push: %s", out)
	}
	body, _ := json.Marshal(map[string]string{"schema": phpBillingStoredAvsc, "schemaType": "AVRO"})
	if status, answer := httpPost(t, base+"/registry/subjects/"+subject+"/versions", string(body)); status != http.StatusOK {
		t.Fatalf("register %s: %d %s", subject, status, answer)
	}

	recv := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	ids := [2]string{"0b7e3a52-55a4-4f0e-9a3c-6f1d2c3b4a01", "0b7e3a52-55a4-4f0e-9a3c-6f1d2c3b4a02"}
	meta := func(id string) map[string]any { return map[string]any{"stream": "php.billing", "id": id, "dt": recv} }
	records := [][]any{
		{"billing", "error", "card declined", map[string]any{"_schema": schemaURI, "meta": meta(ids[0]),
			"message": "card declined", "level": "ERROR", "amount": 12.5, "cents": int64(9007199254740993), "attempt": 2, "retried": true,
			"user": "u-17", "tags": []any{"eu", "visa"}, "timings": map[string]any{"gateway_ms": 2300, "db_ms": 4},
			"card": map[string]any{"brand": "visa", "last4": "4242"}, "at": "@datetime:2026-03-01T10:20:30.456Z"}},
		{"billing", "info", "payment ok", map[string]any{"_schema": schemaURI, "meta": meta(ids[1]),
			"message": "payment ok", "level": "INFO", "amount": 3.0, "cents": 300, "attempt": 1, "retried": false,
			"tags": []any{}, "timings": map[string]any{}, "at": "@datetime:2026-03-01T10:20:31Z"}},
	}
	o, _ := json.Marshal(map[string]any{
		"handler": map[string]any{
			"brokers":  []string{broker},
			"topics":   map[string]string{"billing": topic},
			"subjects": map[string]string{"billing": subject},
			"registry": base + "/registry",
			"kafka":    map[string]any{"timeout": 5.0},
		},
		"records": records,
	})
	out, _ := runPHP(t, php, phpKafkaDriver, "monolog", string(o))
	var res phpKafkaResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	if !res.OK || len(res.Result.Records) != 2 || len(res.Reported) != 0 {
		t.Fatalf("want one produce of 2 records: %s", out)
	}
	sent := time.Now()

	// What was logged, in avroFieldEqual's terms (numbers as text).
	at := [2]time.Time{time.Date(2026, 3, 1, 10, 20, 30, 456e6, time.UTC), time.Date(2026, 3, 1, 10, 20, 31, 0, time.UTC)}
	logged := map[string]map[string]any{
		"card declined": {"_schema": schemaURI, "meta": map[string]any{"stream": "php.billing", "id": ids[0], "dt": recv},
			"message": "card declined", "level": "ERROR", "amount": "12.5", "cents": "9007199254740993", "attempt": "2", "retried": true,
			"user": "u-17", "tags": []any{"eu", "visa"}, "timings": map[string]any{"gateway_ms": "2300", "db_ms": "4"},
			"card": map[string]any{"brand": "visa", "last4": "4242"}, "at": at[0]},
		"payment ok": {"_schema": schemaURI, "meta": map[string]any{"stream": "php.billing", "id": ids[1], "dt": recv},
			"message": "payment ok", "level": "INFO", "amount": "3", "cents": "300", "attempt": "1", "retried": false,
			"user": nil, "tags": []any{}, "timings": map[string]any{}, "card": nil, "at": at[1]},
	}

	t.Run("Confluent AvroDeserializer", func(t *testing.T) {
		py := python(t)
		cmd := exec.CommandContext(t.Context(), py, "../../scripts/interop/confluent_avro.py", "consume",
			"--registry", base+"/registry", "--brokers", broker, "--topic", topic, "--count", "2", "--timeout", "60")
		printed := output(t, cmd, "confluent_avro.py consume")
		got := map[string]map[string]any{}
		for line := range strings.SplitSeq(strings.TrimSpace(printed), "\n") {
			var m map[string]any
			d := json.NewDecoder(strings.NewReader(line))
			d.UseNumber()
			if err := d.Decode(&m); err != nil {
				t.Fatalf("python printed %q: %v", line, err)
			}
			got[fmt.Sprint(m["message"])] = m
		}
		for msg, want := range logged {
			g := got[msg]
			if len(g) != len(want) {
				t.Errorf("%q: Python decoded fields %v, want %v", msg, keysOf(g), keysOf(want))
			}
			for k, w := range want {
				if !avroFieldEqual(g[k], w) {
					t.Errorf("%q: Python decoded %s = %#v, want %#v", msg, k, g[k], w)
				}
			}
		}
		t.Logf("Confluent's AvroDeserializer (registry %s/registry): %s", base, strings.TrimSpace(printed))
	})

	// SQLite: the table of the $schema; every event column is a field
	// (nested ones flattened, arrays and maps as JSON text), the capsule
	// columns are meta's.
	wantSQL := map[string]map[string]any{
		"card declined": {"uuid": ids[0], "dt": recv, "schema": schemaURI, "event_$schema": schemaURI, "event_meta_stream": "php.billing",
			"event_meta_id": ids[0], "event_meta_dt": recv, "event_meta": nil, "event_message": "card declined", "event_level": "ERROR",
			"event_amount": 12.5, "event_cents": int64(9007199254740993), "event_attempt": int64(2), "event_retried": int64(1),
			"event_user": "u-17", "event_tags": `["eu","visa"]`, "event_timings": `{"db_ms":4,"gateway_ms":2300}`,
			"event_card_brand": "visa", "event_card_last4": "4242", "event_card": nil, "event_at": at[0]},
		"payment ok": {"uuid": ids[1], "dt": recv, "schema": schemaURI, "event_$schema": schemaURI, "event_meta_stream": "php.billing",
			"event_meta_id": ids[1], "event_meta_dt": recv, "event_meta": nil, "event_message": "payment ok", "event_level": "INFO",
			"event_amount": 3.0, "event_cents": int64(300), "event_attempt": int64(1), "event_retried": int64(0),
			"event_user": nil, "event_tags": `[]`, "event_timings": `{}`,
			"event_card_brand": nil, "event_card_last4": nil, "event_card": nil, "event_at": at[1]},
	}
	db := openSQLite(t, filepath.Join(dataDir, "events.db"))
	var sqlRows map[string]map[string]any
	waitFor(t, 60*time.Second, "the Monolog records' rows in SQLite", func() bool {
		rows, err := sqlRowsBy(t, db, table, "event_message")
		sqlRows = rows
		return err == nil && len(rows) == len(wantSQL)
	})
	inSQL := time.Since(sent)
	for msg, want := range wantSQL {
		row := sqlRows[msg]
		for col, v := range row {
			if _, ok := want[col]; !ok && strings.HasPrefix(col, "event_") {
				t.Errorf("%q: SQLite column %s = %#v, not a logged field", msg, col, v)
			}
		}
		for col, w := range want {
			if !storedEqual(row[col], w) {
				t.Errorf("%q: SQLite %s = %#v, want %#v", msg, col, row[col], w)
			}
		}
	}

	if n := countRecords(t, []string{broker}, "eventlogging_SinkError"); n != 0 {
		t.Errorf("eventlogging_SinkError holds %d records", n)
	}

	// Parquet: the same records under the topic's folder, nested as
	// logged, once a clean stop published the open file.
	sa.stop(t)
	pqDir := filepath.Join(dataDir, "files", topic)
	pq := map[string]map[string]any{}
	waitFor(t, 10*time.Second, "the Monolog records in Parquet", func() bool {
		clear(pq)
		err := testsupport.WalkParquet(pqDir, true, func(p string, pf *parquet.File) error {
			rows, err := testsupport.ParquetRows(pf)
			for _, r := range rows {
				pq[fmt.Sprint(r["message"])] = r
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return len(pq) == len(logged)
	})
	inPQ := time.Since(sent)
	wantPQ := map[string]map[string]any{
		"card declined": {"$schema": schemaURI, "meta": map[string]any{"stream": "php.billing", "id": ids[0], "dt": recv},
			"message": "card declined", "level": "ERROR", "amount": 12.5, "cents": int64(9007199254740993), "attempt": int64(2), "retried": true,
			"user": "u-17", "tags": `["eu","visa"]`, "timings": `{"db_ms":4,"gateway_ms":2300}`,
			"card": map[string]any{"brand": "visa", "last4": "4242"}, "at": at[0]},
		"payment ok": {"$schema": schemaURI, "meta": map[string]any{"stream": "php.billing", "id": ids[1], "dt": recv},
			"message": "payment ok", "level": "INFO", "amount": 3.0, "cents": int64(300), "attempt": int64(1), "retried": false,
			"user": nil, "tags": `[]`, "timings": `{}`, "card": nil, "at": at[1]},
	}
	for msg, want := range wantPQ {
		row := pq[msg]
		if len(row) != len(want) {
			t.Errorf("%q: Parquet columns %v, want %v", msg, keysOf(row), keysOf(want))
		}
		for col, w := range want {
			if !storedEqual(row[col], w) {
				t.Errorf("%q: Parquet %s = %#v, want %#v", msg, col, row[col], w)
			}
		}
	}

	t.Logf("Monolog → Avro (%s) → %s: %d records, every field equal in SQLite %s (after %v) and in Parquet (after the stop, %v)",
		subject, topic, len(logged), table, inSQL.Round(time.Millisecond), inPQ.Round(time.Millisecond))
}

// storedEqual compares a stored value with what was logged: a time with
// RFC 3339 text of the same instant, anything else exactly.
func storedEqual(got, want any) bool {
	if w, ok := want.(time.Time); ok {
		s, _ := got.(string)
		g, err := time.Parse(time.RFC3339Nano, s)
		return err == nil && g.Equal(w)
	}
	return reflect.DeepEqual(got, want)
}

// avroFieldEqual compares a field printed by tail or confluent_avro.py
// (json.Number for numbers) with what was logged; a time is compared with
// the timestamp-millis printed, as a number of milliseconds, RFC 3339, or
// Python's str(datetime) ("2026-03-01 10:20:30.456000+00:00").
func avroFieldEqual(got, want any) bool {
	switch w := want.(type) {
	case time.Time:
		switch g := got.(type) {
		case json.Number:
			return g.String() == strconv.FormatInt(w.UnixMilli(), 10)
		case string:
			t, err := time.Parse(time.RFC3339Nano, g)
			if err != nil {
				t, err = time.Parse("2006-01-02 15:04:05.999999999-07:00", g)
			}
			return err == nil && t.Equal(w)
		}
		return false
	case string:
		if n, ok := got.(json.Number); ok {
			return n.String() == w || numEqual(n.String(), w)
		}
		return got == w
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !avroFieldEqual(g[i], w[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for k := range w {
			if !avroFieldEqual(g[k], w[k]) {
				return false
			}
		}
		return true
	}
	return got == want
}

// numEqual reports whether two decimal texts are the same float64.
func numEqual(a, b string) bool {
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	return err1 == nil && err2 == nil && x == y
}

// BenchmarkClientPHPKafka measures what a web request pays for one event
// and what sendMany sustains, against `eventlogging standalone` (built
// without -race) and, when EVENTLOGGING_KAFKA_BROKERS is set, the real
// broker:
//
//   - php-startup: a fresh `php -r ”`, the floor of every case below;
//   - send/*: a fresh php process sending one record with the Producer,
//     its connection, ApiVersions and metadata included (acks -1);
//   - post/intake: a fresh php process sending one event with the HTTP
//     transport (EventLogging::flush, the synchronous POST /v1/events);
//   - sendMany100/*: one php process, sendMany of 100 records of 200
//     bytes, b.N times after a first call (records/s).
//
// Wall times per process as p50-ms and p99-ms. Run with
//
//	go test -run '^$' -bench BenchmarkClientPHPKafka -benchtime 200x ./test/e2e
func BenchmarkClientPHPKafka(b *testing.B) {
	php, err := exec.LookPath("php")
	if err != nil {
		b.Skip("php not installed")
	}
	bin, err := plainBuild()
	if err != nil {
		b.Fatal(err)
	}
	dataDir := filepath.Join(b.TempDir(), "data")
	sa := exec.CommandContext(b.Context(), bin, "standalone", "--data-dir", dataDir, "--listen", "127.0.0.1:0", "--kafka-listen", "127.0.0.1:0",
		"--schemas", "../../examples/schemas")
	if err := sa.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = sa.Process.Signal(os.Interrupt)
		_ = sa.Wait()
	})
	var info struct{ HTTP string }
	var broker struct{ Brokers []string }
	for deadline := time.Now().Add(60 * time.Second); ; {
		s, err1 := os.ReadFile(filepath.Join(dataDir, "standalone.json"))
		k, err2 := os.ReadFile(filepath.Join(dataDir, "kafka", "broker.json"))
		if err1 == nil && err2 == nil && json.Unmarshal(s, &info) == nil && json.Unmarshal(k, &broker) == nil && isReady(b.Context(), info.HTTP) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("standalone not ready after 60 s")
		}
		time.Sleep(100 * time.Millisecond) // polling interval
	}
	targets := [][2]string{{"embedded", strings.Join(broker.Brokers, ",")}}
	if v := strings.TrimSpace(os.Getenv(kafkatest.EnvBrokers)); v != "" {
		targets = append(targets, [2]string{"real", v})
	}
	topic := "php-bench-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	for _, tg := range targets {
		cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(tg[1], ",")...))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := kadm.NewClient(cl).CreateTopic(b.Context(), 6, 1, nil, topic); err != nil {
			b.Fatal(err)
		}
		cl.Close()
	}

	b.Run("php-startup", func(b *testing.B) { benchProcess(b, php, "", "-r", "") })
	for _, tg := range targets {
		opts, _ := json.Marshal(map[string]any{"brokers": strings.Split(tg[1], ","), "timeout": 5.0})
		cmd := fmt.Sprintf(`{"records":[[%q,"{\"bench\":true,\"n\":1}"]]}`, topic)
		b.Run("send/"+tg[0], func(b *testing.B) { benchProcess(b, php, cmd+"\n", phpKafkaDriver, "produce", string(opts)) })
	}
	b.Run("post/intake", func(b *testing.B) { benchProcess(b, php, "", phpKafkaDriver, "post", info.HTTP) })
	for _, tg := range targets {
		b.Run("sendMany100/"+tg[0], func(b *testing.B) {
			opts, _ := json.Marshal(map[string]any{"producer": map[string]any{"brokers": strings.Split(tg[1], ","), "timeout": 5.0},
				"topic": topic, "n": b.N, "batch": 100, "size": 200})
			out, err := exec.CommandContext(b.Context(), php, phpKafkaDriver, "bench", string(opts)).Output()
			if err != nil {
				b.Fatal(err)
			}
			var r struct {
				Records int
				Seconds float64
				Failed  int
			}
			if err := json.Unmarshal(out, &r); err != nil || r.Failed != 0 {
				b.Fatalf("%s: %v", out, err)
			}
			b.ReportMetric(float64(r.Records)/r.Seconds, "records/s")
			b.ReportMetric(r.Seconds/float64(b.N)*1000, "ms/sendMany")
		})
	}
}

// benchProcess runs php with args b.N times (stdin as input), each a
// fresh process that must print "ok":true (unless it prints nothing),
// and reports the wall time percentiles.
func benchProcess(b *testing.B, php, stdin string, args ...string) {
	var took, inPHP []float64 // milliseconds
	for b.Loop() {
		cmd := exec.CommandContext(b.Context(), php, args...)
		cmd.Stdin = strings.NewReader(stdin)
		start := time.Now()
		out, err := cmd.Output()
		took = append(took, float64(time.Since(start).Microseconds())/1000)
		if len(out) == 0 && err == nil {
			continue
		}
		var r struct {
			OK     bool
			Result struct{ Elapsed float64 }
		}
		if err != nil || json.Unmarshal(out, &r) != nil || !r.OK {
			b.Fatalf("php %v: %v\n%s", args, err, out)
		}
		inPHP = append(inPHP, r.Result.Elapsed*1000)
	}
	at := func(ms []float64, q float64) float64 {
		slices.Sort(ms)
		return ms[int(q*float64(len(ms)-1))]
	}
	b.ReportMetric(at(took, 0.5), "p50-ms")
	b.ReportMetric(at(took, 0.99), "p99-ms")
	if len(inPHP) > 0 {
		// The send itself, measured in PHP with hrtime: no interpreter start.
		b.ReportMetric(at(inPHP, 0.5), "send-p50-ms")
		b.ReportMetric(at(inPHP, 0.99), "send-p99-ms")
	}
	b.ReportMetric(0, "ns/op")
}
