package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventlogging/eventlogging/internal/kafkatest"
	"github.com/eventlogging/eventlogging/internal/objstore"
	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// fenceEvents is how many events TestFileSinksShareTarget sends through
// the three sinks of each store.
const fenceEvents = 100_000

// TestFileSinksShareTarget: three `eventlogging sink` processes in one
// consumer group publish Parquet to ONE target, on the real S3 store and
// on the real HDFS, while 100,000 events arrive in ten parts and, after
// each, one sink chosen at random is SIGKILLed or stopped (a rebalance
// either way: the session expires, or it leaves the group) and started
// again, or paused (SIGSTOP) past its session and woken up. Partitions
// move between live sinks holding open files of them; the store's fence (a conditional write of each partition's manifest)
// keeps the old writer from publishing after the new one claimed it.
// Afterwards every uuid is in the published files exactly once.
func TestFileSinksShareTarget(t *testing.T) {
	if raceEnabled {
		t.Skip("100,000 events through three race-built sinks: scripts/test.sh runs it in its pass without -race")
	}
	t.Run("s3", func(t *testing.T) {
		_, _, target := userS3Target(t)
		fenceRun(t, target)
	})
	t.Run("hdfs", func(t *testing.T) {
		srv := testsupport.HDFS(t)
		fenceRun(t, "hdfs://"+srv.NameNode+srv.Dir(t)+"?user="+testsupport.HDFSUser)
	})
}

func fenceRun(t *testing.T, target string) {
	brokers := kafkatest.Brokers(t)
	prefix := sinkPrefix(t, "fence")
	topic := prefix + "_Generic"
	const partitions = 6
	cl := kafkaClient(t, brokers, kgo.RequiredAcks(kgo.AllISRAcks()))
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(t.Context(), partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	events := sinkEvents[0]
	events.wiki, events.recvFrom = "testwiki", "fence-"+prefix
	const sinks = 3
	env := func(i int) []string {
		return sinkEnv(brokers, prefix, prefix,
			"EVENTLOGGING_SINK_BATCH_SIZE=700",
			"EVENTLOGGING_SINK_FILE_MAX_AGE=2s",
			"EVENTLOGGING_KAFKA_SESSION_TIMEOUT=6s",
			"EVENTLOGGING_SINK_FILES="+target,
			"EVENTLOGGING_SINK_FILES_STAGING="+filepath.Join(t.TempDir(), fmt.Sprintf("staging-%d", i)))
	}
	args := []string{"sink", "--schemas", "../../examples/schemas"}
	procs := make([]*service, sinks)
	var all []*service // every process started, for the logs
	start := func(i int) {
		procs[i] = startService(t, fmt.Sprintf("sink %d.%d", i, len(all)), env(i), args...)
		all = append(all, procs[i])
	}
	for i := range sinks {
		start(i)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("fault schedule seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	faults := map[string]int{}
	const parts = 10
	for k := range parts {
		events.produce(t, cl, topic, k*fenceEvents/parts, (k+1)*fenceEvents/parts)
		time.Sleep(time.Duration(500+rng.IntN(2500)) * time.Millisecond) // a random moment for the fault (load shape, not synchronisation)
		i := rng.IntN(sinks)
		switch rng.IntN(3) {
		case 0:
			procs[i].stop(t)
			faults["SIGTERM"]++
			start(i)
		case 1:
			procs[i].kill()
			faults["SIGKILL"]++
			start(i)
		default:
			// Paused past its session: the others take its partitions
			// over while it holds open files, and it wakes up a zombie.
			_ = procs[i].cmd.Process.Signal(syscall.SIGSTOP)
			time.Sleep(9 * time.Second) // > EVENTLOGGING_KAFKA_SESSION_TIMEOUT
			_ = procs[i].cmd.Process.Signal(syscall.SIGCONT)
			faults["SIGSTOP 9s"]++
		}
	}
	t.Logf("faults: %v", faults)

	// Wait until the manifests cover every offset, then stop the sinks.
	st, err := objstore.Open(t.Context(), target)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ends, err := adm.ListEndOffsets(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	covered := func() (int, string) {
		n, behind := 0, ""
		for p := range int32(partitions) {
			end, _ := ends.Lookup(topic, p)
			b, err := st.Get(t.Context(), fmt.Sprintf("_filesink/manifests/%s/%d.json", topic, p))
			var m struct {
				LastOffset int64 `json:"last_offset"`
			}
			if err == nil && json.Unmarshal(b, &m) == nil && m.LastOffset+1 >= end.Offset {
				n++
			} else {
				behind += fmt.Sprintf(" %d (%d of %d)", p, m.LastOffset+1, end.Offset)
			}
		}
		return n, behind
	}
	deadline := time.Now().Add(4 * time.Minute)
	for {
		n, behind := covered()
		if n == partitions {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 4 minutes the manifests of partitions%s do not cover the topic", behind)
		}
		time.Sleep(500 * time.Millisecond) // polling interval
	}
	for _, p := range procs {
		p.stop(t)
	}

	local := testsupport.DownloadTree(t, target, "_filesink/")
	seen := parquetUUIDs(t, filepath.Join(local, topic))
	missing, dups := events.notOnce(seen, fenceEvents)
	claims, fenced := 0, 0
	for _, p := range all {
		logs := p.logs()
		claims += strings.Count(logs, "partition claimed")
		fenced += strings.Count(logs, "another sink claimed this partition")
	}
	t.Logf("%d sink processes, %d partition claims, %d writes refused by the fence", len(all), claims, fenced)
	if missing > 0 || dups > 0 || len(seen) != fenceEvents {
		t.Fatalf("Parquet on %s: %d distinct uuids, %d missing, %d duplicated; want %d, each once", objstore.Redact(target), len(seen), missing, dups, fenceEvents)
	}
	t.Logf("%d events, each once, after %v", fenceEvents, faults)
}
