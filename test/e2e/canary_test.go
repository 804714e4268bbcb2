package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCanaries: with intake.canary_events configured, the standalone's
// intake sends a marked event per stream every second; both sinks record
// when they saw it (eventlogging_canary_last_seen_timestamp_seconds) and do
// not store it, while a real event of the same schema is stored.
func TestCanaries(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(`intake:
  canary_interval: 1s
  canary_events:
    - schema: NavigationTiming
      revision: 7
      event: {responseStart: 1, loadEventEnd: 2}
sink:
  batch_time: 1s
`), 0o644); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(dir, "data")
	addr := freeAddr(t)
	base := "http://" + addr
	startService(t, "standalone", nil, "standalone", "--config", cfg, "--data-dir", dataDir, "--listen", addr,
		"--kafka-listen", freeAddr(t), "--schemas", "../../examples/schemas")
	waitReady(t, base)
	postHasty(t, base, `[{"schema":"NavigationTiming","revision":7,"event":{"responseStart":80,"loadEventEnd":700},"webHost":"en.wikipedia.org","wiki":"enwiki"}]`)

	seen := regexp.MustCompile(`(?m)^eventlogging_canary_last_seen_timestamp_seconds\{sink="(sql|files)",stream="NavigationTiming"\} (\S+)$`)
	sent := regexp.MustCompile(`(?m)^eventlogging_canary_sent_total\{stream="NavigationTiming"\} (\S+)$`)
	start := float64(time.Now().Add(-time.Minute).Unix())
	var page string
	waitFor(t, 60*time.Second, "both sinks to report a NavigationTiming canary", func() bool {
		_, page, _ = get(t.Context(), base+"/metrics")
		sinks := map[string]bool{}
		for _, m := range seen.FindAllStringSubmatch(page, -1) {
			if v, err := strconv.ParseFloat(m[2], 64); err == nil && v > start {
				sinks[m[1]] = true
			}
		}
		m := sent.FindStringSubmatch(page)
		return len(m) == 2 && m[1] != "0" && sinks["sql"] && sinks["files"]
	})

	// The canaries are in the topic, but only the real event is in SQL.
	topic := runCLI(t, "tail", "--data-dir", dataDir, "--from-beginning", "--count", "1", "--timeout", "60s", "--grep", `"webHost":"canary"`, "eventlogging_NavigationTiming")
	if !strings.Contains(topic, `"webHost":"canary"`) {
		t.Fatalf("no canary in the NavigationTiming topic:\n%s", topic)
	}
	db := openSQLite(t, filepath.Join(dataDir, "events.db"))
	var rows, canaries int
	waitFor(t, 30*time.Second, "the real event in SQL", func() bool {
		err := db.QueryRowContext(t.Context(), `SELECT COUNT(*), COALESCE(SUM(webHost = 'canary'), 0) FROM "NavigationTiming_7"`).Scan(&rows, &canaries)
		return err == nil && rows >= 1
	})
	if rows != 1 || canaries != 0 {
		t.Fatalf("SQL holds %d NavigationTiming rows, %d of them canaries; want the one real event only", rows, canaries)
	}
}
