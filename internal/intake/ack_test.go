package intake

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/process"
	"github.com/eventlogging/eventlogging/internal/spool"
)

// gatedProducer holds every produce until release is closed: an answer
// sent before then did not wait for Kafka.
type gatedProducer struct {
	release  chan struct{}
	produced chan string // "sync" or "buffered", per call
}

func (g *gatedProducer) TryProduce(m kafka.Message, cb func(error)) {
	g.produced <- "buffered"
	go func() { <-g.release; cb(nil) }()
}

func (g *gatedProducer) produceSync(ctx context.Context, msgs []kafka.Message) error {
	g.produced <- "sync"
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gatedProducer) ProduceEach(ctx context.Context, msgs []kafka.Message, _ error) kafka.Outcome {
	return outcomeOf(len(msgs), g.produceSync(ctx, msgs))
}

func (g *gatedProducer) Ping(context.Context) error { return nil }

// TestAckAfterKafka: with AckAfterKafka a beacon and a hasty POST are
// answered only once the produce is acknowledged; without it, at once.
func TestAckAfterKafka(t *testing.T) {
	for _, afterKafka := range []bool{false, true} {
		for _, route := range []string{"beacon", "hasty"} {
			name := route + "/buffered"
			if afterKafka {
				name = route + "/kafka"
			}
			t.Run(name, func(t *testing.T) {
				g := &gatedProducer{release: make(chan struct{}), produced: make(chan string, 10)}
				q, err := spool.Open(t.TempDir(), spool.Config{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = q.Close() })
				w := NewWriter(g, q, WriterConfig{SyncTimeout: time.Minute})
				srv, err := NewServer(w, nopValidator{}, nil, Config{AckAfterKafka: afterKafka, RecvFrom: "t"})
				if err != nil {
					t.Fatal(err)
				}
				hs := httptest.NewServer(srv)
				t.Cleanup(hs.Close)

				answered := make(chan int, 1)
				go func() {
					req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, hs.URL+"/beacon/event?"+url.PathEscape(genericCapsule)+";", nil)
					if route == "hasty" {
						req, _ = http.NewRequestWithContext(t.Context(), http.MethodPost, hs.URL+"/v1/events?hasty=true", strings.NewReader(genericCapsule))
						req.Header.Set("Content-Type", "application/json")
					}
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						answered <- -1
						return
					}
					resp.Body.Close()
					answered <- resp.StatusCode
				}()
				want := map[bool]string{false: "buffered", true: "sync"}[afterKafka]
				if got := <-g.produced; got != want {
					t.Fatalf("produced %s, want %s", got, want)
				}
				if afterKafka {
					select {
					case code := <-answered:
						t.Fatalf("answered %d before Kafka acknowledged the record", code)
					case <-time.After(300 * time.Millisecond): // long enough for a wrongly early answer to arrive
					}
				}
				close(g.release)
				code := <-answered
				if (route == "beacon" && code != http.StatusNoContent) || (route == "hasty" && code != http.StatusAccepted) {
					t.Fatalf("status %d", code)
				}
				if q.Len() != 0 {
					t.Errorf("%d records spooled, want 0", q.Len())
				}
			})
		}
	}
}

// nopValidator is never asked: beacons and hasty POSTs are not validated
// at the intake.
type nopValidator struct{}

func (nopValidator) ProcessEvent(_ context.Context, _ []byte, _ process.Meta, out []process.Output) ([]process.Output, process.Result) {
	return out, process.Result{}
}

// failingProducer fails every buffered record once release is closed, as
// a broker that went away does after the delivery timeout.
type failingProducer struct {
	release chan struct{}
}

func (f *failingProducer) TryProduce(m kafka.Message, cb func(error)) {
	go func() { <-f.release; cb(errors.New("delivery timeout: broker unreachable")) }()
}

func (f *failingProducer) produceSync(context.Context, []kafka.Message) error {
	return errors.New("broker unreachable")
}

func (f *failingProducer) ProduceEach(ctx context.Context, msgs []kafka.Message, _ error) kafka.Outcome {
	return outcomeOf(len(msgs), f.produceSync(ctx, msgs))
}

func (f *failingProducer) Ping(context.Context) error { return errors.New("broker unreachable") }

// TestEnqueueKeepsSpoolRoomForTheBuffer: records answered from the producer
// buffer always find room in the spool when their delivery fails; once the
// buffer holds as much as the spool can take, Enqueue refuses (503) instead
// of answering for records it could lose.
func TestEnqueueKeepsSpoolRoomForTheBuffer(t *testing.T) {
	f := &failingProducer{release: make(chan struct{})}
	q, err := spool.Open(t.TempDir(), spool.Config{MaxBytes: 1 << 20, MinFreeBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	w := NewWriter(f, q, WriterConfig{})
	msg := kafka.Message{Topic: "raw", Value: bytes.Repeat([]byte("x"), 1000)}
	accepted := 0
	for range 5000 {
		err := w.Enqueue([]kafka.Message{msg})
		if errors.Is(err, ErrUnavailable) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		accepted++
	}
	perRecord := spool.FrameSize(msg)
	if want := int((1 << 20) / perRecord); accepted != want {
		t.Fatalf("accepted %d records of %d bytes into the buffer, want %d (what a 1 MiB spool holds)", accepted, perRecord, want)
	}
	// Kafka is found down (a synchronous produce fails): new records go to
	// the spool directly, but not into the room set aside for the buffer.
	if _, err := w.Deliver(t.Context(), []kafka.Message{msg}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Deliver with the spool's room all set aside: %v, want ErrUnavailable", err)
	}
	if err := w.Enqueue([]kafka.Message{msg}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Enqueue while Kafka is down and the spool's room is set aside: %v, want ErrUnavailable", err)
	}
	close(f.release) // every buffered record now fails and is spooled
	deadline := time.Now().Add(10 * time.Second)
	for q.Len() < accepted && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // polling the spool the callbacks fill
	}
	if st := w.Stats(); st.Lost != 0 || q.Len() != accepted {
		t.Fatalf("%d records lost, %d spooled, want 0 lost and %d spooled", st.Lost, q.Len(), accepted)
	}
}

// outcomeOf is the Outcome of n records that all failed with err (nil:
// all acknowledged), for fakes that fail whole calls.
func outcomeOf(n int, err error) kafka.Outcome {
	if err == nil {
		return nil
	}
	o := make(kafka.Outcome, n)
	for i := range o {
		o[i] = err
	}
	return o
}
