package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
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
		if status, b := securityRequest(t, method, base+path, body, h); status != want {
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
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
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
		_, body := securityRequest(t, http.MethodGet, base+"/dashboard/api/errors", "", nil)
		return strings.Contains(body, beaconErr)
	})
	if status, body := securityRequest(t, http.MethodPost, base+"/dashboard/api/replay", `{"uuids":["`+beaconErr+`"]}`, map[string]string{"Content-Type": "application/json"}); status != http.StatusOK || !strings.Contains(body, `"replayed":1`) {
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
		status, body := securityRequest(t, http.MethodGet, base+page, "", nil)
		if status != http.StatusOK {
			t.Errorf("GET %s: %d", page, status)
		}
		if strings.Contains(body, clientIP) {
			hits = append(hits, "dashboard "+page)
		}
	}
	_, metrics := securityRequest(t, http.MethodGet, base+"/metrics", "", nil)
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
	for _, rg := range pf.RowGroups() {
		for _, cc := range rg.ColumnChunks() {
			pages := cc.Pages()
			for {
				pg, err := pages.ReadPage()
				if err != nil {
					break
				}
				vals := make([]parquet.Value, pg.NumValues())
				n, _ := pg.Values().ReadValues(vals)
				for _, v := range vals[:n] {
					if !v.IsNull() && v.Kind() == parquet.ByteArray && strings.Contains(string(v.ByteArray()), needle) {
						_ = pages.Close()
						return true, nil
					}
				}
			}
			_ = pages.Close()
		}
	}
	return false, nil
}
