package intake

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/eventlogging/eventlogging/internal/kafka"
)

// TestBufClasses: getBuf gives room for what is asked, putBuf keeps a
// buffer only in a class it fills, and drops those outside the classes.
func TestBufClasses(t *testing.T) {
	for _, n := range []int{0, 1, 1023, 1024, 1025, 4081, 65537, 1 << 17, 1<<17 + 1, 1 << 20} {
		pb := getBuf(n)
		if len(pb.b) != 0 || cap(pb.b) < n {
			t.Fatalf("getBuf(%d): len %d cap %d", n, len(pb.b), cap(pb.b))
		}
		if n > 1<<minBufShift && n <= 1<<(minBufShift+bufClasses-1) && cap(pb.b) >= 2*n {
			t.Fatalf("getBuf(%d): cap %d, more than twice what was asked", n, cap(pb.b))
		}
		putBuf(pb)
	}
	// A buffer that grew past its class is kept in the class it fills
	// (8 KiB for 12 KiB), not the one it would round up to (16 KiB): a
	// getBuf of 16 KiB must not get it.
	for range 4 {
		pb := getBuf(3000)             // 4 KiB class
		pb.b = make([]byte, 0, 12<<10) // as if it grew while in use
		putBuf(pb)
		if got := getBuf(16 << 10); cap(got.b) < 16<<10 {
			t.Fatalf("getBuf(16 KiB) gave cap %d (the 12 KiB buffer filed in the wrong class)", cap(got.b))
		}
	}
}

// capturingProducer acknowledges at once and keeps a copy of every value
// it was given, as a broker would have written it.
type capturingProducer struct {
	mu     sync.Mutex
	values map[string][]byte // by meta.id
}

func (c *capturingProducer) TryProduce(_ kafka.Message, cb func(error)) { cb(nil) }
func (c *capturingProducer) Ping(context.Context) error                 { return nil }
func (c *capturingProducer) produceSync(_ context.Context, msgs []kafka.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range msgs {
		var ev struct {
			Meta struct{ ID string } `json:"meta"`
		}
		if err := json.Unmarshal(m.Value, &ev); err != nil {
			return fmt.Errorf("record value is not JSON: %w: %q", err, m.Value)
		}
		c.values[ev.Meta.ID] = bytes.Clone(m.Value)
	}
	return nil
}

func (c *capturingProducer) ProduceEach(ctx context.Context, msgs []kafka.Message, _ error) kafka.Outcome {
	return outcomeOf(len(msgs), c.produceSync(ctx, msgs))
}

// TestPooledBuffersConcurrentPosts: POST bodies, records' values and
// answers share pooled buffers between requests; concurrent POSTs of
// distinct events each deliver their own events, intact, and answer with
// their own uuids.
func TestPooledBuffersConcurrentPosts(t *testing.T) {
	ev := matrixEvent(t)
	const oldID = "5f0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b"
	if !bytes.Contains(ev, []byte(oldID)) {
		t.Fatalf("the test event has no meta.id %s", oldID)
	}
	prod := &capturingProducer{values: map[string][]byte{}}
	srv := newPlatformServer(t, prod)
	const workers, posts = 4, 150
	// Events of different sizes, so that the buffers of one request do not
	// fit another's exactly.
	event := func(w, p, i int) ([]byte, string) {
		id := fmt.Sprintf("5f0c1a2b-3c4d-4e5f-8a9b-%04x%04x%04x", w, p, i)
		e := bytes.Replace(ev, []byte(oldID), []byte(id), 1)
		e = bytes.Replace(e, []byte(`"Peer Bench"`), []byte(`"`+strings.Repeat("x", (w*posts+p)%250)+`"`), 1)
		return e, id
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	want := map[string][]byte{}
	var wantMu sync.Mutex
	for w := range workers {
		wg.Go(func() {
			for p := range posts {
				n := 1 + (w+p)%10
				parts, ids := make([][]byte, n), make([]string, n)
				for i := range n {
					parts[i], ids[i] = event(w, p, i)
				}
				wantMu.Lock()
				for i := range n {
					want[ids[i]] = parts[i]
				}
				wantMu.Unlock()
				body := append(append([]byte("["), bytes.Join(parts, []byte(","))...), ']')
				rw := httptest.NewRecorder()
				r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/v1/events", bytes.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				srv.ServeHTTP(rw, r)
				if rw.Code != http.StatusCreated {
					errs <- fmt.Errorf("status %d: %s", rw.Code, rw.Body)
					return
				}
				var resp PostResponse
				if err := json.Unmarshal(rw.Body.Bytes(), &resp); err != nil {
					errs <- fmt.Errorf("answer is not JSON: %w: %q", err, rw.Body)
					return
				}
				for i, er := range resp.Events {
					if er.UUID != ids[i] {
						errs <- fmt.Errorf("answer's event %d: uuid %s, want %s", i, er.UUID, ids[i])
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(prod.values) != len(want) {
		t.Fatalf("%d records delivered, want %d", len(prod.values), len(want))
	}
	for id, sent := range want {
		got := prod.values[id]
		var a, b map[string]any
		if err := json.Unmarshal(sent, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(got, &b); err != nil {
			t.Fatalf("record of %s: %v", id, err)
		}
		// The server adds dt when missing and http; the client's members
		// are delivered as sent.
		for k, v := range a {
			if k == "meta" {
				continue
			}
			if fmt.Sprint(b[k]) != fmt.Sprint(v) {
				t.Fatalf("record of %s: %s = %v, sent %v", id, k, b[k], v)
			}
		}
	}
}
