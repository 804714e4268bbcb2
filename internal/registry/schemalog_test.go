package registry

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/kafka/schemalog"
	"github.com/eventlogging/eventlogging/internal/kafkatest"
	"github.com/eventlogging/eventlogging/internal/schema"
)

// TestOnSchemaLogKafka runs two registries on kafka.SchemaLog against the
// real test broker.
func TestOnSchemaLogKafka(t *testing.T) {
	onSchemaLog(t, kafkatest.Brokers(t), kafkatest.Topic(t, "schemas"))
}

// TestOnSchemaLogKFake runs the same on kfake, in process.
func TestOnSchemaLogKFake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	onSchemaLog(t, c.ListenAddrs(), kafkatest.Topic(t, "schemas"))
}

// onSchemaLog checks the registry on its real storage: the first instance
// is elected and imports, the second replays what it wrote, forwards
// writes to it, and serves the processor's client.
func onSchemaLog(t *testing.T, seeds []string, topic string) {
	start := func() (*Registry, string) {
		mux := http.NewServeMux()
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		base := srv.URL + "/registry"
		l, err := schemalog.New(schemalog.Config{Kafka: kafka.Config{Brokers: seeds}, Topic: topic, SelfURL: base, ReplicationFactor: 1})
		if err != nil {
			t.Fatal(err)
		}
		r, err := New(Config{Log: l, Check: stubCheck, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		mux.Handle("/registry/", http.StripPrefix("/registry", r.Handler()))
		ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
		var wg sync.WaitGroup
		wg.Go(func() {
			if err := r.Run(ctx); err != nil {
				t.Errorf("Run: %v", err)
			}
		})
		t.Cleanup(func() { cancel(); wg.Wait() })
		return r, base
	}
	leader, _ := start()
	stats, err := leader.ImportDir(t.Context(), examples) // waits for the election
	if err != nil || stats.Registered == 0 {
		t.Fatalf("ImportDir = %+v, %v", stats, err)
	}
	follower, followerURL := start()
	if err := follower.cfg.Log.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	cl, err := NewClient(followerURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := cl.Fetch(t.Context(), schema.ID{Name: "Analytics", Revision: 13317883}); err != nil || len(b) == 0 {
		t.Errorf("Fetch through the follower: %q, %v", b, err)
	}
	if _, err := cl.FetchURI(t.Context(), "/analytics/edit_funnel/1.0.0"); err != nil {
		t.Errorf("FetchURI through the follower: %v", err)
	}
	// A write through the follower is forwarded; the follower answers once
	// it has applied it, so it reads its write back at once.
	rec := newRecorder(t, follower, "POST", "/subjects/fwd/versions", schemaBody("JSON", jsonSchema("a")))
	if rec.Code != http.StatusOK {
		t.Fatalf("register through the follower: %d %s", rec.Code, rec.Body)
	}
	var reg struct{ ID int64 }
	if err := json.Unmarshal(rec.Body.Bytes(), &reg); err != nil || reg.ID == 0 {
		t.Fatalf("register answer %s: %v", rec.Body, err)
	}
	if _, err := cl.Fetch(t.Context(), schema.ID{Name: "fwd", Revision: reg.ID}); err != nil {
		t.Errorf("Fetch of the forwarded registration: %v", err)
	}
}
