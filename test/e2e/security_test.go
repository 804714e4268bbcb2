package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/kafkatest"
	"github.com/eventlogging/eventlogging/internal/testsupport"
	"github.com/parquet-go/parquet-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// clientIP is the address every event of TestNoRawClientIPStored comes
// from (TEST-NET-3, through a trusted proxy's X-Forwarded-For).
const clientIP = "203.0.113.77"

// TestNoRawClientIPStored: with process.ip hash (Parquet files) and drop
// (JSON-lines files), events from one client — beacons, a synchronous
// batch, a hasty batch, valid and invalid, legacy and Event Platform with
// http, and an EventError replayed from the dashboard — leave that
// client's IP nowhere but in the raw topic: not in any other topic (keys,
// values, headers), the SQLite database, the files of the file sink
// (decompressed, and Parquet column values decoded), the dashboard's error
// pages, /metrics or the log. The control run with keep must find the IP
// in the topics, SQL and files, so the search is known to look.
func TestNoRawClientIPStored(t *testing.T) {
	for _, c := range []struct {
		policy, format string
	}{
		{"hash", "parquet"},
		{"drop", "jsonl.gz"},
		{"keep", "parquet"}, // control
	} {
		t.Run(c.policy, func(t *testing.T) { noRawIPRun(t, c.policy, c.format) })
	}
}

func noRawIPRun(t *testing.T, policy, format string) {
	dataDir := filepath.Join(t.TempDir(), "data")
	addr, kafkaAddr := freeAddr(t), freeAddr(t)
	base := "http://" + addr
	sa := startService(t, "standalone", []string{
		"EVENTLOGGING_INTAKE_TRUSTED_PROXIES=127.0.0.1/32",
		"EVENTLOGGING_PROCESS_IP=" + policy,
		"EVENTLOGGING_SINK_FORMAT=" + format,
		"EVENTLOGGING_SINK_BATCH_TIME=200ms",
		"EVENTLOGGING_LOG_LEVEL=debug",
	}, "standalone", "--data-dir", dataDir, "--listen", addr, "--kafka-listen", kafkaAddr,
		"--schemas", "../../examples/schemas", "--streams", "../../examples/streams.yaml")
	waitReady(t, base)
	brokers := []string{kafkaAddr}

	send := func(method, path, ctype, body string, want int) {
		t.Helper()
		h := map[string]string{"X-Forwarded-For": clientIP, "User-Agent": "security-test/1.0"}
		if ctype != "" {
			h["Content-Type"] = ctype
		}
		if status, b := request(t, method, base+path, body, h); status != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, status, b, want)
		}
	}
	const (
		nav        = `{"schema":"NavigationTiming","revision":7,"event":{"responseStart":80,"loadEventEnd":700}}`
		navInvalid = `{"schema":"NavigationTiming","revision":7,"event":{"responseStart":"fast"}}`
		generic    = `{"schema":"Generic","revision":13,"event":{"articleId":"one"}}`
		funnel     = `{"$schema":"/analytics/edit_funnel/1.0.0","meta":{"stream":"analytics.edit_funnel"},"action":"init","editor":"wikitext","session_token":"abcdefghijkl"}`
		funnelBad  = `{"$schema":"/analytics/edit_funnel/1.0.0","meta":{"stream":"analytics.edit_funnel"},"action":"explode","editor":"wikitext","session_token":"abcdefghijkl"}`
	)
	// Raw path: beacons (one valid, one invalid) and a hasty batch.
	send(http.MethodGet, beaconURL("", nav), "", "", http.StatusNoContent)
	send(http.MethodGet, beaconURL("", generic), "", "", http.StatusNoContent)
	send(http.MethodPost, "/v1/events?hasty=true", "text/plain", "["+funnel+","+funnelBad+","+generic+"]", http.StatusAccepted)
	// Synchronous path: processed inside the intake.
	send(http.MethodPost, "/v1/events", "application/json", "["+nav+","+navInvalid+","+funnel+","+funnelBad+"]", http.StatusMultiStatus)

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cl := kafkaClient(t, brokers)
	adm := kadm.NewClient(cl)
	waitCount := func(topic string, n int64) {
		t.Helper()
		waitFor(t, 90*time.Second, fmt.Sprintf("%d records in %s", n, topic), func() bool {
			ends, err := adm.ListEndOffsets(ctx, topic)
			if err != nil {
				return false
			}
			var got int64
			ends.Each(func(o kadm.ListedOffset) { got += o.Offset })
			return got >= n
		})
	}
	// EventErrors: the Generic beacon, the hasty batch's two invalid events,
	// the synchronous batch's two.
	waitCount("eventlogging_EventError", 5)

	// Replay the beacon's EventError from the dashboard: it goes back
	// through the raw topic (still invalid, so a sixth EventError), and the
	// replay log records it.
	var beaconErr string
	for _, r := range readTopic(ctx, t, cl, adm, "eventlogging_EventError") {
		var ec struct {
			UUID  string `json:"uuid"`
			Event struct {
				RawEvent string          `json:"rawEvent"`
				Source   json.RawMessage `json:"source"`
				Schema   string          `json:"schema"`
			} `json:"event"`
		}
		if json.Unmarshal(r.Value, &ec) == nil && ec.Event.Schema == "Generic" && ec.Event.Source != nil && strings.HasPrefix(ec.Event.RawEvent, "?") {
			beaconErr = ec.UUID
		}
	}
	if beaconErr == "" {
		t.Fatal("no EventError of the raw path for the Generic beacon")
	}
	waitFor(t, 60*time.Second, "the dashboard to list the beacon's EventError", func() bool {
		_, body := request(t, http.MethodGet, base+"/dashboard/api/errors", "", nil)
		return strings.Contains(body, beaconErr)
	})
	if status, body := request(t, http.MethodPost, base+"/dashboard/api/replay", `{"uuids":["`+beaconErr+`"]}`, map[string]string{"Content-Type": "application/json"}); status != http.StatusOK || !strings.Contains(body, `"replayed":1`) {
		t.Fatalf("replay: %d %s", status, body)
	}
	waitCount("eventlogging_EventError", 6)
	waitCount("eventlogging_NavigationTiming", 2)
	waitCount("eventlogging_analytics.edit_funnel", 2)

	// The sinks have taken every record of the valid topics.
	for _, group := range []string{"eventlogging-sink-sql", "eventlogging-sink-files"} {
		waitFor(t, 90*time.Second, group+" to commit the end of the valid topics", func() bool {
			return committedToEnd(ctx, adm, group, "eventlogging_NavigationTiming", "eventlogging_analytics.edit_funnel")
		})
	}

	// Every topic but the raw one, as Kafka serves it (decompressed).
	topics, err := adm.ListTopicsWithInternal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rawTopics := []string{"eventlogging-client-side", "eventlogging-server-side"}
	var hits []string
	topicText := map[string]string{}
	for _, topic := range topics.Names() {
		if slices.Contains(rawTopics, topic) {
			continue
		}
		var all bytes.Buffer
		for _, r := range readTopic(ctx, t, cl, adm, topic) {
			all.Write(r.Key)
			all.WriteByte('\n')
			all.Write(r.Value)
			all.WriteByte('\n')
			for _, h := range r.Headers {
				all.WriteString(h.Key + "=" + string(h.Value) + "\n")
			}
		}
		topicText[topic] = all.String()
		if strings.Contains(all.String(), clientIP) {
			hits = append(hits, "topic "+topic)
		}
	}
	for _, want := range []string{"eventlogging_EventError", "eventlogging_NavigationTiming", "eventlogging_analytics.edit_funnel", "eventlogging-valid-mixed", "_eventlogging_replayed"} {
		if _, ok := topicText[want]; !ok {
			t.Errorf("topic %s not found among %v", want, topics.Names())
		}
	}
	// The dashboard's error pages.
	for _, page := range []string{"/dashboard/api/errors", "/dashboard/errors", "/dashboard/errors/" + beaconErr} {
		status, body := request(t, http.MethodGet, base+page, "", nil)
		if status != http.StatusOK {
			t.Errorf("GET %s: %d", page, status)
		}
		if strings.Contains(body, clientIP) {
			hits = append(hits, "dashboard "+page)
		}
	}
	_, metrics := request(t, http.MethodGet, base+"/metrics", "", nil)
	if strings.Contains(metrics, clientIP) {
		hits = append(hits, "/metrics")
	}

	// Stop: the file sink publishes what it holds.
	cl.Close()
	sa.stop(t)
	if strings.Contains(sa.logs(), clientIP) {
		hits = append(hits, "standalone log")
	}
	fileHits, files := grepTree(t, dataDir, clientIP, func(rel string) bool {
		return rel == "kafka" // the broker's storage, read through Kafka above
	})
	hits = append(hits, fileHits...)
	sqlFound, filesFound := false, false
	for _, f := range files {
		sqlFound = sqlFound || strings.HasPrefix(f, "events.db")
		filesFound = filesFound || (strings.HasPrefix(f, "files/eventlogging_NavigationTiming/") && strings.HasSuffix(f, "."+format))
	}
	if !sqlFound || !filesFound {
		t.Fatalf("the sinks wrote no SQLite database (%v) or no %s files for NavigationTiming (%v): %v", sqlFound, format, filesFound, files)
	}

	if policy == "keep" {
		// The control: the search finds the IP where keep stores it.
		for _, where := range []string{"topic eventlogging_NavigationTiming", "topic eventlogging_EventError", "topic eventlogging_analytics.edit_funnel", "file events.db"} {
			if !slices.Contains(hits, where) {
				t.Errorf("keep: the client IP was not found in %s (found in %v): the search does not look", where, hits)
			}
		}
		if !slices.ContainsFunc(hits, func(h string) bool { return strings.HasPrefix(h, "file files/eventlogging_NavigationTiming/") }) {
			t.Errorf("keep: the client IP was not found in the Parquet files (found in %v)", hits)
		}
		return
	}
	if len(hits) > 0 {
		t.Errorf("process.ip=%s: the raw client IP %s is stored in: %s", policy, clientIP, strings.Join(hits, "; "))
	}
	// What is there instead.
	nav2 := topicText["eventlogging_NavigationTiming"]
	errs := topicText["eventlogging_EventError"]
	funnels := topicText["eventlogging_analytics.edit_funnel"]
	hex64 := regexp.MustCompile(`"clientIp":"[0-9a-f]{64}"`)
	switch policy {
	case "hash":
		if !hex64.MatchString(nav2) || !regexp.MustCompile(`"client_ip":"[0-9a-f]{64}"`).MatchString(funnels) {
			t.Errorf("hash: capsules and Event Platform events lack the hashed IP:\n%s\n%s", nav2, funnels)
		}
		if !regexp.MustCompile(`\\th:[0-9a-f]{64}\\t`).MatchString(errs) {
			t.Errorf("hash: raw-path EventErrors lack the marked hash in their raw line:\n%s", errs)
		}
	case "drop":
		if strings.Contains(nav2, `"clientIp"`) || strings.Contains(funnels, `"client_ip"`) {
			t.Errorf("drop: an IP field is present:\n%s\n%s", nav2, funnels)
		}
	}
}

// readTopic reads every record of topic, from its start to the end offsets
// of now.
func readTopic(ctx context.Context, t *testing.T, cl *kgo.Client, adm *kadm.Client, topic string) []*kgo.Record {
	t.Helper()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	want := map[int32]int64{}
	starts := map[string]map[int32]kgo.Offset{topic: {}}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
			starts[topic][o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	if len(want) == 0 {
		return nil
	}
	rd, err := kgo.NewClient(append(cl.Opts(), kgo.ConsumePartitions(starts))...)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var out []*kgo.Record
	deadline := time.Now().Add(30 * time.Second)
	for len(want) > 0 {
		// A transactional topic (the registry's) ends with commit markers,
		// which are never delivered as records: a quiet poll after the
		// last record ends the read too.
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		f := rd.PollFetches(pctx)
		cancel()
		n := 0
		f.EachRecord(func(r *kgo.Record) {
			n++
			out = append(out, r)
			if end, ok := want[r.Partition]; ok && r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		})
		if n == 0 && len(out) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("reading %s: timed out, partitions left %v", topic, want)
		}
	}
	return out
}

// committedToEnd reports whether group has committed, for each topic, the
// end offset of every partition that holds records.
func committedToEnd(ctx context.Context, adm *kadm.Client, group string, topics ...string) bool {
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return false
	}
	commits, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return false
	}
	ok := true
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset == 0 {
			return
		}
		c, found := commits.Lookup(o.Topic, o.Partition)
		if !found || c.At < o.Offset {
			ok = false
		}
	})
	return ok
}

// grepTree searches every file under root (but the folders skip names,
// relative to root) for needle: gzip files decompressed, Parquet files
// both as bytes and as decoded column values. It returns "file <rel>" per
// file holding it, and every file looked at.
func grepTree(t *testing.T, root, needle string, skip func(rel string) bool) (hits, files []string) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && skip(rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		files = append(files, rel)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		found := bytes.Contains(data, []byte(needle))
		switch {
		case strings.HasSuffix(p, ".gz"):
			zr, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			plain, err := io.ReadAll(zr)
			if err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			found = found || bytes.Contains(plain, []byte(needle))
		case strings.HasSuffix(p, ".parquet"):
			in, err := parquetContains(data, needle)
			if err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			found = found || in
		}
		if found {
			hits = append(hits, "file "+rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits, files
}

// parquetContains reports whether a value of any column of the Parquet
// file contains needle (the values decoded, whatever the compression).
func parquetContains(data []byte, needle string) (bool, error) {
	pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return false, err
	}
	found := false
	testsupport.EachParquetValue(pf, -1, func(v parquet.Value) bool {
		found = !v.IsNull() && v.Kind() == parquet.ByteArray && strings.Contains(string(v.ByteArray()), needle)
		return !found
	})
	return found, nil
}

// The real SCRAM broker of TestKafkaSCRAM: KAFKA_SCRAM=1 KAFKA_PORT=39692
// scripts/kafka.sh start, with the user it creates.
const (
	envScramBrokers  = "EVENTLOGGING_KAFKA_SCRAM_BROKERS"
	envScramUser     = "EVENTLOGGING_KAFKA_SCRAM_USER"
	envScramPassword = "EVENTLOGGING_KAFKA_SCRAM_PASSWORD"
)

// scramBroker returns the SCRAM broker's addresses and credentials, or
// skips (locally) / fails (CI=true) when none is configured.
func scramBroker(t *testing.T) (brokers []string, user, password string) {
	t.Helper()
	v := strings.TrimSpace(os.Getenv(envScramBrokers))
	user, password = os.Getenv(envScramUser), os.Getenv(envScramPassword)
	if v == "" || user == "" || password == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s, %s and %s must be set under CI=true: scripts/test.sh starts a SCRAM broker (KAFKA_SCRAM=1 KAFKA_PORT=39692 scripts/kafka.sh start)", envScramBrokers, envScramUser, envScramPassword)
		}
		t.Skipf("integration test: %s (+ %s, %s) not set; run KAFKA_SCRAM=1 KAFKA_PORT=39692 scripts/kafka.sh start and export %s=127.0.0.1:39692 %s=eventlogging %s=eventlogging-secret",
			envScramBrokers, envScramUser, envScramPassword, envScramBrokers, envScramUser, envScramPassword)
	}
	return strings.Split(v, ","), user, password
}

// TestKafkaSCRAM: `eventlogging intake` and `eventlogging process` against
// a real Kafka broker whose only listener is SASL_PLAINTEXT with SCRAM:
// with the right credentials (SCRAM-SHA-256) a beacon becomes a capsule in
// its schema topic and an invalid one an EventError; with a wrong password
// each role stops at once with an error naming SASL authentication (no
// hang, no "not reachable"); the password is never logged.
func TestKafkaSCRAM(t *testing.T) {
	brokers, user, password := scramBroker(t)
	prefix := kafkatest.Topic(t, "scram")
	addr := freeAddr(t)
	base := "http://" + addr
	common := pipelineEnv(brokers, prefix, addr, t.TempDir(), "../../examples/schemas",
		"EVENTLOGGING_KAFKA_SASL_MECHANISM=SCRAM-SHA-256",
		"EVENTLOGGING_KAFKA_SASL_USERNAME="+user,
		"EVENTLOGGING_PROCESS_IP_KEY_TOPIC="+prefix+"_ip_key",
		"EVENTLOGGING_METRICS_LISTEN=off",
		"EVENTLOGGING_LOG_LEVEL=debug",
	)
	env := append(append([]string(nil), common...), "EVENTLOGGING_KAFKA_SASL_PASSWORD="+password)

	// A wrong password: each role fails fast, saying why.
	for _, role := range [][]string{{"intake"}, {"process", "--raw-topic", prefix + "-raw"}} {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		cmd := exec.CommandContext(ctx, binary(t), role...)
		cmd.Env = append(append(os.Environ(), common...), "EVENTLOGGING_KAFKA_SASL_PASSWORD=wrong-"+password)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		took := time.Since(start)
		timedOut := ctx.Err() != nil
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || timedOut {
			t.Fatalf("%s with a wrong password: %v after %s (want a quick exit with an error)\n%s", role[0], err, took, tail(string(out), 2000))
		}
		last := lastLine(string(out))
		if !strings.Contains(last, "SASL authentication failed") || strings.Contains(last, "not reachable") {
			t.Errorf("%s with a wrong password ends with %q, want an error naming SASL authentication", role[0], last)
		}
		if took > 30*time.Second {
			t.Errorf("%s took %s to give up on refused credentials", role[0], took)
		}
		if strings.Contains(string(out), password) {
			t.Errorf("%s printed the password", role[0])
		}
		t.Logf("%s with a wrong password: exit after %s: %s", role[0], took.Round(time.Millisecond), last)
	}

	// The right password: a beacon goes through.
	in := startService(t, "intake", env, "intake")
	proc := startService(t, "process", env, "process", "--raw-topic", prefix+"-raw")
	waitReady(t, base)
	if failed := sendBeacons(t, base, 2, 1, func(i int) string {
		if i == 1 {
			return `{"schema":"Generic","revision":13,"event":{"articleId":"not a number"}}`
		}
		return `{"schema":"Generic","revision":13,"event":{"articleId":1,"articleTitle":"over SCRAM"}}`
	}); failed > 0 {
		t.Fatalf("%d beacons not answered 204", failed)
	}
	opts := []kgo.Opt{kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha256Mechanism())}
	got := readOneSCRAM(t, brokers, opts, prefix+"_Generic")
	if !strings.Contains(got, `"articleTitle":"over SCRAM"`) || !strings.Contains(got, `"clientIp":"`) {
		t.Errorf("capsule %s", got)
	}
	if ee := readOneSCRAM(t, brokers, opts, prefix+"_EventError"); !strings.Contains(ee, `"pointer":"/event/articleId"`) {
		t.Errorf("EventError %s", ee)
	}
	// eventlogging tail reaches the secured cluster through --config (the
	// kafka section; the password from the environment, as deployed).
	cfgFile := filepath.Join(t.TempDir(), "eventlogging.yaml")
	if err := os.WriteFile(cfgFile, []byte("kafka:\n  sasl_mechanism: SCRAM-SHA-256\n  sasl_username: "+user+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tctx, tcancel := context.WithTimeout(t.Context(), 90*time.Second)
	tcmd := exec.CommandContext(tctx, binary(t), "tail", "--config", cfgFile, "--brokers", strings.Join(brokers, ","), "--from-beginning", "--count", "1", "--timeout", "60s", prefix+"_Generic")
	tcmd.Env = append(os.Environ(), "EVENTLOGGING_KAFKA_SASL_PASSWORD="+password)
	var tailErr bytes.Buffer
	tcmd.Stderr = &tailErr
	tailOut, err := tcmd.Output()
	tcancel()
	if err != nil || !strings.Contains(string(tailOut), `"articleTitle":"over SCRAM"`) {
		t.Errorf("tail --config over SCRAM: %v, printed %q\n%s", err, tailOut, tail(tailErr.String(), 2000))
	}
	if strings.Contains(tailErr.String(), password) {
		t.Error("tail logged the SASL password")
	}
	// An anonymous client gets nothing from this broker.
	anon, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(t.Context(), 5*time.Second)
	if err := anon.Ping(pctx); err == nil {
		t.Error("a client without SASL reached the SCRAM listener")
	}
	pcancel()
	anon.Close()

	in.stop(t)
	proc.stop(t)
	for _, s := range []*service{in, proc} {
		if strings.Contains(s.logs(), password) {
			t.Errorf("%s logged the SASL password", s.name)
		}
	}
}

// readOneSCRAM returns the first record value of topic, read with opts.
func readOneSCRAM(t *testing.T, brokers []string, opts []kgo.Opt, topic string) string {
	t.Helper()
	var value string
	pollFrom(t, brokers, opts, topic, 90*time.Second, func(f kgo.Fetches) bool {
		recs := f.Records()
		if len(recs) == 0 {
			return false
		}
		var v json.RawMessage
		if json.Unmarshal(recs[0].Value, &v) != nil {
			t.Fatalf("%s: not JSON: %q", topic, recs[0].Value)
		}
		value = string(recs[0].Value)
		return true
	}, func(f kgo.Fetches) { t.Fatalf("%s: no record within 90s (errors: %v)", topic, f.Errors()) })
	return value
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// request sends one HTTP request with the given headers and returns
// the status and body.
func request(t *testing.T, method, u, body string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	status, b, err := doHTTP(http.DefaultClient, req)
	if err != nil {
		t.Fatal(err)
	}
	return status, b
}

// TestSecurityTokens: a standalone that admits no network to its admin
// routes (security.admin_networks empty), with the registry's write token
// and the dashboard's token set through the environment under their former
// names (registry.token, dashboard.replay_token), refuses writes and the
// dashboard without them (403) — from loopback too —, accepts them with
// them (200), and never prints either token: not in its log, not in
// /metrics, not in check-config's output.
func TestSecurityTokens(t *testing.T) {
	const (
		regToken    = "reg-token-5b0c1e9f7d"
		replayToken = "replay-token-a8e2c47d31"
	)
	dataDir := filepath.Join(t.TempDir(), "data")
	sa, base := startStandalone(t, []string{
		"EVENTLOGGING_SECURITY_ADMIN_NETWORKS=",
		"EVENTLOGGING_REGISTRY_TOKEN=" + regToken,
		"EVENTLOGGING_DASHBOARD_REPLAY_TOKEN=" + replayToken,
		"EVENTLOGGING_LOG_LEVEL=debug",
	}, dataDir, "--schemas", "../../examples/schemas", "--streams", "../../examples/streams.yaml")

	// Registry writes.
	schemaBody, _ := json.Marshal(map[string]string{"schemaType": "JSON", "schema": `{"type":"object","properties":{"a":{"type":"string"}}}`})
	register := base + "/registry/subjects/SecurityX/versions"
	ctype := map[string]string{"Content-Type": "application/vnd.schemaregistry.v1+json"}
	with := func(h map[string]string, k, v string) map[string]string {
		out := map[string]string{k: v}
		for hk, hv := range h {
			out[hk] = hv
		}
		return out
	}
	for name, h := range map[string]map[string]string{
		"no token":        ctype,
		"wrong token":     with(ctype, "Authorization", "Bearer not-"+regToken),
		"the replay one":  with(ctype, "Authorization", "Bearer "+replayToken),
		"not as a bearer": with(ctype, "Authorization", "Basic "+regToken),
	} {
		if status, body := request(t, http.MethodPost, register, string(schemaBody), h); status != http.StatusForbidden || !strings.Contains(body, "40301") || !strings.Contains(body, "registry.write_token") {
			t.Errorf("register with %s: %d %s, want 403 (error_code 40301) naming registry.write_token", name, status, body)
		}
	}
	var id struct{ ID int }
	var status int
	var body string
	// A fresh standalone's registry may still be electing its writer: retry.
	waitFor(t, 30*time.Second, "the registry to accept an authorised write", func() bool {
		status, body = request(t, http.MethodPost, register, string(schemaBody), with(ctype, "Authorization", "Bearer "+regToken))
		return status == http.StatusOK
	})
	if err := json.Unmarshal([]byte(body), &id); err != nil || id.ID < 1 {
		t.Errorf("register with the token: %d %s", status, body)
	}
	// Reads stay open.
	if status, body := request(t, http.MethodGet, base+"/registry/subjects/SecurityX/versions/latest", "", nil); status != http.StatusOK || !strings.Contains(body, `"subject":"SecurityX"`) {
		t.Errorf("read without a token: %d %s", status, body)
	}

	// Dashboard replay: an EventError to replay first.
	postHasty(t, base, `[{"schema":"Generic","revision":13,"event":{"articleId":"not a number"}}]`)
	ee := runCLI(t, "tail", "--data-dir", dataDir, "--from-beginning", "--count", "1", "--timeout", "60s", "eventlogging_EventError")
	var ec struct {
		UUID string `json:"uuid"`
	}
	if err := json.Unmarshal([]byte(ee), &ec); err != nil || ec.UUID == "" {
		t.Fatalf("EventError %q: %v", ee, err)
	}
	// The dashboard lists errors from its own sample of the topic: wait
	// until it knows this one, so that the replay below has it.
	if status, body := request(t, http.MethodGet, base+"/dashboard/api/errors", "", nil); status != http.StatusForbidden || !strings.Contains(body, "dashboard.token") {
		t.Errorf("dashboard without the token: %d %s, want 403 naming dashboard.token", status, body)
	}
	waitFor(t, 60*time.Second, "the dashboard to list the EventError", func() bool {
		_, body := request(t, http.MethodGet, base+"/dashboard/api/errors", "", map[string]string{"Authorization": "Bearer " + replayToken})
		return strings.Contains(body, ec.UUID)
	})
	replay := base + "/dashboard/api/replay"
	replayBody := `{"uuids":["` + ec.UUID + `"]}`
	jsonType := map[string]string{"Content-Type": "application/json"}
	for name, h := range map[string]map[string]string{
		"no token":       jsonType,
		"wrong token":    with(jsonType, "Authorization", "Bearer not-"+replayToken),
		"the registry's": with(jsonType, "Authorization", "Bearer "+regToken),
	} {
		if status, body := request(t, http.MethodPost, replay, replayBody, h); status != http.StatusForbidden {
			t.Errorf("replay with %s: %d %s, want 403", name, status, body)
		}
	}
	status, body = request(t, http.MethodPost, replay, replayBody, with(jsonType, "Authorization", "Bearer "+replayToken))
	var res map[string]any
	if status != http.StatusOK || json.Unmarshal([]byte(body), &res) != nil {
		t.Fatalf("replay with the token: %d %s, want 200 JSON", status, body)
	}
	if res["replayed"] != float64(1) {
		t.Errorf("replay result %s, want one replayed", body)
	}

	// The tokens are never printed.
	_, metrics := request(t, http.MethodGet, base+"/metrics", "", nil)
	if !strings.Contains(metrics, "eventlogging_") {
		t.Fatalf("/metrics: %.200s", metrics)
	}
	cfgFile := filepath.Join(t.TempDir(), "el.yaml")
	if err := os.WriteFile(cfgFile, []byte("kafka:\n  sasl_mechanism: SCRAM-SHA-256\n  sasl_username: eventlogging\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	check := runCLIEnv(t, []string{
		"EVENTLOGGING_REGISTRY_TOKEN=" + regToken,
		"EVENTLOGGING_DASHBOARD_REPLAY_TOKEN=" + replayToken,
		"EVENTLOGGING_KAFKA_SASL_PASSWORD=kafka-password-e3f1",
	}, "check-config", "--config", cfgFile)
	if !strings.Contains(check, "token: '***'") || !strings.Contains(check, "sasl_password: '***'") {
		t.Errorf("check-config does not show the secrets as ***:\n%s", check)
	}
	sa.stop(t)
	for what, text := range map[string]string{"standalone log": sa.logs(), "/metrics": metrics, "check-config": check} {
		for _, secret := range []string{regToken, replayToken, "kafka-password-e3f1"} {
			if strings.Contains(text, secret) {
				t.Errorf("%s prints the secret %q", what, secret)
			}
		}
	}
}

// runCLIEnv is runCLI with extra environment variables.
func runCLIEnv(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	return output(t, cmd, fmt.Sprintf("eventlogging %v", args))
}
