package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// digits groups error messages that differ only in numbers.
var digits = regexp.MustCompile(`[0-9]+`)

// TestClientPHPKafkaLeaderKill (issue 33): the PHP Kafka producer against
// the real three-node cluster (scripts/kafka-cluster.sh, as
// TestClusterFailover), a topic of 3 partitions at replication factor 3
// and min.insync.replicas 2. 1,000 sends, each a fresh `php` process (4
// at a time, paced at 20/s), one unique value each, every other one keyed;
// 10 s in, the leader of partition 0 is SIGKILLed, and restarted 8 s
// later. Every send that returned true must be in the topic exactly once,
// at the partition and offset PHP reported, read with franz-go and with
// kcat; no record may hold a value that was never sent; every false send
// must have been reported (onError), and at most 5 % may fail (the
// producer's second try, within its 5 s timeout, is meant to outlast one
// leader change); a keyed record must be on the partition franz-go's
// StickyKeyPartitioner(nil) (Java's murmur2) gives its key.
func TestClientPHPKafkaLeaderKill(t *testing.T) {
	faultPass(t)
	php := phpBinary(t)
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("kcat not installed (scripts/test.sh installs it)")
		}
		t.Skip("kcat not installed (apt-get install kcat, or run scripts/test.sh)")
	}
	c := startCluster(t)
	adm := mustAdmin(t, c.brokers)
	topic := sinkPrefix(t, "php-leaderkill")
	const partitions = 3
	resp, err := adm.CreateTopic(t.Context(), partitions, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	waitFullISR(t, adm, topic)

	const (
		sends   = 1000
		workers = 4
		rate    = 20 // sends started per second at most
	)
	nonce := strconv.FormatInt(time.Now().UnixNano(), 36)
	type sent struct {
		value string
		key   *string
		at    time.Duration // when the PHP process started
		res   phpKafkaResult
		err   error // the process itself failed (not a false send)
	}
	results := make([]sent, sends)
	for i := range results {
		results[i].value = fmt.Sprintf("php-%s-%d", nonce, i)
		if i%2 == 1 {
			k := fmt.Sprintf("user-%d", i%101)
			results[i].key = &k
		}
	}
	opts := map[string]any{"brokers": c.brokers, "timeout": 5.0, "metadataCache": "process"}
	logLoad(t, "before the sends")
	start := time.Now()
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				s := &results[i]
				s.at = time.Since(start)
				s.res, s.err = runPHPSend(t.Context(), php, opts, []any{topic, s.value, s.key})
			}
		})
	}
	wg.Go(func() {
		defer close(jobs)
		tick := time.NewTicker(time.Second / rate) // the load's pace, not synchronisation
		defer tick.Stop()
		for i := range sends {
			select {
			case <-t.Context().Done():
				return
			case <-tick.C:
			}
			select {
			case <-t.Context().Done():
				return
			case jobs <- i:
			}
		}
	})

	waitUntil := func(at time.Duration) {
		if d := at - time.Since(start); d > 0 {
			time.Sleep(d) // the fault schedule (load shape, not synchronisation)
		}
	}
	leaderOf0 := func() int32 {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			t.Fatalf("metadata of %s: %v", topic, err)
		}
		p, ok := md.Topics[topic].Partitions[0]
		if !ok {
			t.Fatalf("metadata of %s: no partition 0", topic)
		}
		return p.Leader
	}
	waitUntil(10 * time.Second)
	leader := leaderOf0()
	killedAt := time.Since(start)
	c.run(t, "kill", strconv.Itoa(int(leader)))
	t.Logf("%5.1fs SIGKILL node %d, leader of %s/0 (gone at %.1fs)", killedAt.Seconds(), leader, topic, time.Since(start).Seconds())
	waitUntil(killedAt + 8*time.Second)
	c.run(t, "restart", strconv.Itoa(int(leader)))
	t.Logf("%5.1fs node %d restarted and answering; leader of %s/0 is now node %d", time.Since(start).Seconds(), leader, topic, leaderOf0())
	wg.Wait()
	wall := time.Since(start)
	logLoad(t, "after the sends")
	t.Logf("node %d back in the ISR %.1fs after the sends ended", leader, waitFullISR(t, adm, topic).Seconds())

	// What PHP said: true (partition, offset), or false and reported.
	var ok, failed, secondTry int
	var firstFail, lastFail time.Duration
	failedOn := map[int32]int{}
	failedAttempts := map[int]int{}
	var failedElapsed []float64
	whys := map[string]int{}
	var elapsed []float64
	byValue := map[string]*sent{}
	for i := range results {
		s := &results[i]
		byValue[s.value] = s
		switch {
		case s.err != nil:
			t.Errorf("send %d: %v", i, s.err)
		case s.res.OK:
			ok++
			elapsed = append(elapsed, s.res.Result.Elapsed)
			if s.res.Result.Attempts > 1 {
				secondTry++
			}
			if len(s.res.Result.Records) != 1 || s.res.Result.Records[0].Offset == nil {
				t.Errorf("send %d returned true without its partition and offset: %s", i, s.res)
			}
		default:
			failed++
			if failed == 1 {
				firstFail = s.at
			}
			lastFail = max(lastFail, s.at)
			failedElapsed = append(failedElapsed, s.res.Result.Elapsed)
			failedAttempts[s.res.Result.Attempts]++
			if len(s.res.Result.Records) == 1 {
				failedOn[s.res.Result.Records[0].Partition]++
			}
			if s.res.Result.Error == nil || len(s.res.Reported) != 1 {
				t.Errorf("send %d returned false without being reported once: %s", i, s.res)
			} else {
				whys[digits.ReplaceAllString(*s.res.Result.Error, "N")]++ // grouped by the message's words
			}
		}
	}
	slices.Sort(elapsed)
	pct := func(q float64) float64 {
		if len(elapsed) == 0 {
			return 0
		}
		return elapsed[int(q*float64(len(elapsed)-1))] * 1000
	}
	t.Logf("%d sends in %.1fs (%d PHP processes at a time): %d true (%d on the second try), %d false; true sends took p50 %.1f ms, p99 %.1f ms, max %.0f ms (in PHP)",
		sends, wall.Seconds(), workers, ok, secondTry, failed, pct(0.5), pct(0.99), pct(1))
	if failed > 0 {
		t.Logf("false sends started between %.1fs and %.1fs (kill at %.1fs), returned after %.2f to %.2f s, by partition %v, by attempts %v; reported errors: %v",
			firstFail.Seconds(), lastFail.Seconds(), killedAt.Seconds(), slices.Min(failedElapsed), slices.Max(failedElapsed), failedOn, failedAttempts, whys)
	}
	if failed*20 > sends {
		t.Errorf("%d of %d sends returned false, more than 5 %%", failed, sends)
	}

	// What the topic holds, read by franz-go and by kcat.
	type stored struct {
		partition int32
		offset    int64
		key       *string
		value     string
	}
	check := func(reader string, recs []stored) {
		t.Helper()
		seen := map[string]int{}
		keyed := 0
		part := kgo.StickyKeyPartitioner(nil).ForTopic(topic)
		for _, r := range recs {
			seen[r.value]++
			s, known := byValue[r.value]
			if !known {
				t.Errorf("%s: %s/%d at %d holds %q, never sent", reader, topic, r.partition, r.offset, r.value)
				continue
			}
			switch {
			case s.key == nil && r.key != nil:
				t.Errorf("%s: %s has key %q, sent without", reader, r.value, *r.key)
			case s.key != nil && (r.key == nil || *r.key != *s.key):
				t.Errorf("%s: %s has key %v, sent %q", reader, r.value, r.key, *s.key)
			case s.key != nil:
				keyed++
				if want := int32(part.Partition(&kgo.Record{Key: []byte(*s.key)}, partitions)); r.partition != want {
					t.Errorf("%s: %s (key %q) on partition %d, murmur2 gives %d", reader, r.value, *s.key, r.partition, want)
				}
			}
			if s.res.OK && len(s.res.Result.Records) == 1 {
				if w := s.res.Result.Records[0]; w.Partition != r.partition || w.Offset == nil || *w.Offset != r.offset {
					t.Errorf("%s: %s at %d/%d, PHP reported %d/%v", reader, r.value, r.partition, r.offset, w.Partition, w.Offset)
				}
			}
		}
		var lost, dups, falseDups, falseStored int
		for _, s := range results {
			n := seen[s.value]
			switch {
			case s.res.OK && n == 0:
				lost++
				t.Errorf("%s: %s returned true and is not in the topic", reader, s.value)
			case s.res.OK && n > 1:
				dups++
				t.Errorf("%s: %s returned true and is in the topic %d times", reader, s.value, n)
			case !s.res.OK && n > 0:
				falseStored++
				if n > 1 {
					falseDups++
					t.Logf("%s: %s returned false and is in the topic %d times", reader, s.value, n)
				}
			}
		}
		t.Logf("%s: %d records; of the %d true sends %d lost, %d duplicated; %d of the %d false sends are in the topic (%d more than once); %d keyed records checked against murmur2's partition",
			reader, len(recs), ok, lost, dups, falseStored, failed, falseDups, keyed)
	}

	total := countRecords(t, c.brokers, topic)
	var fromGo []stored
	for _, r := range readAll(t, c.brokers, topic, int(total)) {
		s := stored{partition: r.Partition, offset: r.Offset, value: string(r.Value)}
		if r.Key != nil {
			k := string(r.Key)
			s.key = &k
		}
		fromGo = append(fromGo, s)
	}
	check("franz-go", fromGo)

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, kcat, "-C", "-b", strings.Join(c.brokers, ","), "-t", topic,
		"-o", "beginning", "-e", "-q", "-f", "%p %o %k %s\n").Output()
	if err != nil {
		t.Fatalf("kcat: %v", err)
	}
	var fromKcat []stored
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		// "partition offset key value"; no key prints nothing, so two spaces.
		f := strings.Split(sc.Text(), " ")
		if len(f) != 4 {
			t.Fatalf("kcat printed %q", sc.Text())
		}
		p, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("kcat printed %q", sc.Text())
		}
		s := stored{partition: int32(p), offset: o, value: f[3]}
		if f[2] != "" {
			s.key = &f[2]
		}
		fromKcat = append(fromKcat, s)
	}
	check("kcat", fromKcat)
}
