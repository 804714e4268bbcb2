package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventlogging/eventlogging/internal/kafkatest"
)

// waitLog polls a service's log until it contains text.
func waitLog(t *testing.T, s *service, text string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if strings.Contains(s.logs(), text) {
			return
		}
		time.Sleep(100 * time.Millisecond) // polling interval
	}
	t.Fatalf("%s never logged %q", s.name, text)
}

func registerSchema(t *testing.T, base, subject, schemaText string) int {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"schema": schemaText, "schemaType": "JSON"})
	var lastStatus int
	var lastBody []byte
	// Writes may meet an election in progress (50004/50003): retry briefly.
	for range 100 {
		status, b := httpPost(t, base+"/subjects/"+subject+"/versions", string(body))
		if status == http.StatusOK {
			var r struct{ ID int }
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			return r.ID
		}
		lastStatus, lastBody = status, b
		time.Sleep(200 * time.Millisecond) // retry interval
	}
	t.Fatalf("register %s at %s: %d %s", subject, base, lastStatus, lastBody)
	return 0
}

// TestRegistryLeaderKill: two registry processes on the real broker agree on
// ids; the leader is SIGKILLed; the other takes over, loses no schema and
// never reuses an id; the killed one comes back with the same state.
func TestRegistryLeaderKill(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	topic := kafkatest.Topic(t, "schemas")
	addrs := []string{freeAddr(t), freeAddr(t)}
	env := []string{"EVENTLOGGING_KAFKA_BROKERS=" + strings.Join(brokers, ","), "EVENTLOGGING_REGISTRY_TOPIC=" + topic}
	start := func(i int) *service {
		return startService(t, fmt.Sprintf("registry-%d", i), env, "registry", "--listen", addrs[i], "--self-url", "http://"+addrs[i])
	}
	regs := []*service{start(0), start(1)}
	// Both must listen before the writes, half of which go to each: on a
	// loaded machine one process can start seconds after the other became
	// leader.
	for _, r := range regs {
		waitLog(t, r, "registry listening", 60*time.Second)
	}
	leader := -1
	deadline := time.Now().Add(60 * time.Second)
	for leader < 0 && time.Now().Before(deadline) {
		for i, r := range regs {
			if strings.Contains(r.logs(), "became schema log leader") {
				leader = i
			}
		}
		time.Sleep(100 * time.Millisecond) // polling interval
	}
	if leader < 0 {
		t.Fatal("no registry became leader")
	}
	ids := map[int]string{}
	for i := range 20 {
		base := "http://" + addrs[i%2] // half of the writes are forwarded
		subject := fmt.Sprintf("s%d", i)
		text := fmt.Sprintf(`{"type":"object","properties":{"f%d":{"type":"integer"}}}`, i)
		id := registerSchema(t, base, subject, text)
		if prev, dup := ids[id]; dup {
			t.Fatalf("id %d given to %s and %s", id, prev, subject)
		}
		ids[id] = text
	}
	maxBefore := 0
	for id := range ids {
		maxBefore = max(maxBefore, id)
	}

	regs[leader].kill()
	survivor := 1 - leader
	waitLog(t, regs[survivor], "became schema log leader", 60*time.Second)
	for i := 20; i < 30; i++ {
		text := fmt.Sprintf(`{"type":"object","properties":{"f%d":{"type":"integer"}}}`, i)
		id := registerSchema(t, "http://"+addrs[survivor], fmt.Sprintf("s%d", i), text)
		if id <= maxBefore {
			t.Fatalf("after failover id %d reuses the range up to %d", id, maxBefore)
		}
		ids[id] = text
	}
	regs[leader] = start(leader)
	for _, addr := range addrs {
		for id, text := range ids {
			var got string
			for range 100 { // the restarted instance answers 50002 until replayed
				status, body, err := get(t.Context(), fmt.Sprintf("http://%s/schemas/ids/%d/schema", addr, id))
				if err == nil {
					got = body
					if status == http.StatusOK {
						break
					}
				}
				time.Sleep(100 * time.Millisecond) // polling interval
			}
			if strings.TrimSpace(got) != text {
				t.Fatalf("%s: schema %d = %q, want %q", addr, id, got, text)
			}
		}
	}
	t.Logf("%d schemas, ids unique, the same on both instances after a leader SIGKILL and restart", len(ids))
}

// kill sends SIGKILL and reaps the process.
func (s *service) kill() {
	_ = s.cmd.Process.Kill()
	_, _ = s.cmd.Process.Wait()
}

func mustAdmin(t *testing.T, brokers []string) *kadm.Client {
	t.Helper()
	return kadm.NewClient(kafkaClient(t, brokers))
}

// kafkaClient is a client of brokers with opts, closed when the test ends.
func kafkaClient(t *testing.T, brokers []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}
