package registry

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventlogging/eventlogging/internal/kafka"
)

func TestSubjectOfKey(t *testing.T) {
	for key, want := range map[string]string{
		"schema/Foo/3":                   "Foo",
		"schema/analytics/edit_funnel/2": "analytics/edit_funnel",
		"config/Foo":                     "",
		"maxid":                          "",
		"schema/":                        "",
		"schema//1":                      "",
	} {
		got, ok := SubjectOfKey([]byte(key))
		if got != want || ok != (want != "") {
			t.Errorf("SubjectOfKey(%q) = %q, %t; want %q", key, got, ok, want)
		}
	}
}

// TestWatch: Watch waits for the log to exist, then reports the subject of
// every schema record written after it started, and nothing else.
func TestWatch(t *testing.T) {
	// One partition, as the registry's log has (EnsureTopic): records of
	// different subjects are then in the order they were written. (kfake
	// auto-creates 10 partitions by default, where two subjects have no
	// order between them.)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const topic = "_schemas_watch"
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	started := make(chan struct{}, 4)
	subjects := make(chan string, 16)
	done := make(chan error, 1)
	go func() {
		done <- Watch(ctx, WatchConfig{Kafka: kafka.Config{Brokers: c.ListenAddrs()}, Topic: topic, Retry: 50 * time.Millisecond,
			OnStart: func() { started <- struct{}{} }}, func(s string) { subjects <- s })
	}()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(key string) {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(`{}`)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// The log does not exist yet: Watch retries until it does.
	produce("schema/Before/1") // creates the topic; written before Watch follows it
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("Watch did not start following once the log existed")
	}
	for _, k := range []string{"config/Foo", "schema/Foo/1", "maxid", "schema/analytics/edit_funnel/3"} {
		produce(k)
	}
	for _, want := range []string{"Foo", "analytics/edit_funnel"} {
		select {
		case got := <-subjects:
			if got == "Before" {
				// Written before Watch fixed its start: allowed once, when
				// the topic appeared between two attempts.
				got = <-subjects
			}
			if got != want {
				t.Fatalf("subject %q, want %q", got, want)
			}
		case <-ctx.Done():
			t.Fatalf("no subject %q reported", want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Watch = %v, want nil when ctx ends", err)
	}
}
