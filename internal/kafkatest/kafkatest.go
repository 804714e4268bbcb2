// Package kafkatest gives integration tests the address of the real Apache
// Kafka broker started by scripts/test.sh (or scripts/kafka.sh start).
//
// Tests call Brokers(t). When no broker is configured the test is skipped
// with a clear message, except under CI=true where a missing broker is a
// failure: in CI every integration test must run.
package kafkatest

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// EnvBrokers names the environment variable holding the comma-separated
// bootstrap addresses of the test broker.
const EnvBrokers = "EVENTLOGGING_KAFKA_BROKERS"

// Brokers returns the bootstrap addresses of the real test broker, or skips
// (locally) / fails (CI=true) the test when none is configured.
func Brokers(tb testing.TB) []string {
	tb.Helper()
	v := strings.TrimSpace(os.Getenv(EnvBrokers))
	if v == "" {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("%s is not set: under CI=true integration tests must run against a real broker (scripts/test.sh starts one)", EnvBrokers)
		}
		tb.Skipf("integration test: %s not set; run scripts/test.sh, or scripts/kafka.sh start and export %s=127.0.0.1:39092", EnvBrokers, EnvBrokers)
	}
	return strings.Split(v, ",")
}

var seq atomic.Int64

// Topic returns a topic name unique to this test run, so tests sharing one
// broker never see each other's records.
func Topic(tb testing.TB, base string) string {
	tb.Helper()
	return fmt.Sprintf("%s-%d-%d", base, time.Now().UnixNano(), seq.Add(1))
}
