package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

const phpDriver = "../../clients/php/tests/driver.php"

// phpBinary finds php; under CI=true a missing php fails the test.
func phpBinary(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("php")
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("php not found: scripts/test.sh installs Debian's php-cli package")
	}
	t.Skip("PHP client test: php not installed (apt-get install php-cli, or run scripts/test.sh)")
	return ""
}

func runPHP(t *testing.T, php string, args ...string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), php, args...)
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("php %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, out, errb.String())
	}
	return string(out), errb.String()
}

// TestClientPHPUnit runs the PHP client's own tests (no intake, no
// Monolog): batching, encoding, results, failures that never throw, the
// Monolog handler with array and LogRecord-like records; and checks the
// handler is a valid Monolog\Handler\HandlerInterface of Monolog 2 and 3
// (declared by the script, Monolog is not installed).
func TestClientPHPUnit(t *testing.T) {
	php := phpBinary(t)
	for _, args := range [][]string{
		{"../../clients/php/tests/unit.php"},
		{"../../clients/php/tests/monolog_shape.php", "2"},
		{"../../clients/php/tests/monolog_shape.php", "3"},
	} {
		out, _ := runPHP(t, php, args...)
		if !strings.HasPrefix(out, "ok: ") {
			t.Fatalf("php %v: %s", args, out)
		}
		t.Log(strings.TrimSpace(out))
	}
}

// phpFlushResult is what driver.php prints.
type phpFlushResult struct {
	OK       bool     `json:"ok"`
	Status   int      `json:"status"`
	Error    *string  `json:"error"`
	Events   int      `json:"events"`
	Accepted int      `json:"accepted"`
	Invalid  int      `json:"invalid"`
	Elapsed  float64  `json:"elapsed"`
	Reported []string `json:"reported"`
}

// TestClientPHP runs the PHP client against a running pipeline: a
// request's events (legacy events and Monolog records) go in one POST at
// shutdown and arrive in their topics, the invalid one reported with its
// reason; with the intake unreachable, silent or trickling, flush returns
// false within the 1-second timeout (measured in PHP with hrtime).
func TestClientPHP(t *testing.T) {
	php := phpBinary(t)
	p := startClientPipeline(t)

	// A 10 s timeout here: the synchronous POST answers after Kafka's acks,
	// and on a fresh real cluster after creating the topics of the first
	// events, which can take more than the default 1 s (then the flush
	// fails, as designed). The default is what the cases below check.
	out, stderr := runPHP(t, php, phpDriver, "send", p.base, "10")
	if !strings.Contains(stderr, "queued 6 events") {
		t.Errorf("driver stderr %q, want 6 queued events (the DEBUG record is below the handler's level)", stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1 {
		t.Fatalf("want one flush (one POST) at shutdown, got %d results:\n%s", len(lines), out)
	}
	var res phpFlushResult
	if err := json.Unmarshal([]byte(lines[0]), &res); err != nil {
		t.Fatalf("%q: %v", lines[0], err)
	}
	if res.OK || res.Status != 207 || res.Events != 6 || res.Accepted != 5 || res.Invalid != 1 {
		t.Errorf("flush result %+v, want 207 with 5 accepted and 1 invalid", res)
	}
	t.Logf("shutdown flush: one POST of %d events answered %d in %.3f s", res.Events, res.Status, res.Elapsed)
	if len(res.Reported) != 1 || !strings.Contains(res.Reported[0], "NavigationTiming/7: invalid (validation)") || !strings.Contains(res.Reported[0], "responseStart") {
		t.Errorf("reported %q, want the invalid event with its reason", res.Reported)
	}

	for _, c := range p.read(t, p.topic("NavigationTiming"), 2) {
		if c["wiki"] != "testwiki" || c["webHost"] != "php.example.org" || !strings.HasPrefix(c["userAgent"].(string), "eventlogging-php-client/") {
			t.Errorf("NavigationTiming capsule %v", c)
		}
	}
	if q := recordField(p.read(t, p.topic("SearchQuery"), 1)[0], "event.query"); q != "php client" {
		t.Errorf("SearchQuery event query %v", q)
	}
	logs := p.read(t, p.topic("PhpLog"), 2)
	levels := map[string]string{}
	for _, c := range logs {
		levels[recordField(c, "event.level").(string)] = recordField(c, "event.message").(string)
		if c["revision"] != 900100.0 || recordField(c, "event.channel") != "billing" {
			t.Errorf("PhpLog capsule %v", c)
		}
	}
	if levels["WARNING"] != "payment gateway slow" || levels["ERROR"] != "card declined" || len(levels) != 2 {
		t.Errorf("Monolog records as events: %v", levels)
	}
	if ee := p.read(t, p.topic("EventError"), 1)[0]; recordField(ee, "event.code") != "validation" {
		t.Errorf("EventError %v", ee)
	}

	// The intake unreachable: flush gives up within the 1 s timeout and
	// reports the failure, without throwing.
	silent := holdingListener(t, nil)
	trickle := holdingListener(t, func(c net.Conn) {
		// Read the request, then answer one byte every 100 ms, forever: only
		// a deadline on the whole exchange ends this.
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadString('\n')
			if err != nil || line == "\r\n" {
				break
			}
		}
		for _, b := range []byte("HTTP/1.1 200 OK\r\nX-Slow: " + strings.Repeat("z", 1000)) {
			if _, err := c.Write([]byte{b}); err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond) // the trickle
		}
	})
	for _, tc := range []struct{ name, url, wantErr string }{
		{"closed port", "http://" + freeAddr(t), "connecting to"},
		{"accepts but never answers", "http://" + silent, "timeout"},
		{"answers a byte at a time", "http://" + trickle, "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _ := runPHP(t, php, phpDriver, "timeout", tc.url)
			var r phpFlushResult
			if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &r); err != nil {
				t.Fatalf("%q: %v", out, err)
			}
			if r.OK || r.Error == nil || !strings.Contains(*r.Error, tc.wantErr) || len(r.Reported) != 1 {
				t.Errorf("flush result %+v, want a failure (%q) reported once", r, tc.wantErr)
			}
			if r.Elapsed >= 1.5 {
				t.Errorf("flush took %.3f s, want < 1.5 s (timeout 1 s)", r.Elapsed)
			}
			t.Logf("flush returned false after %.3f s: %s", r.Elapsed, *r.Error)
		})
	}
}

// holdingListener accepts connections and keeps them open without
// answering (serve, when given, runs on each); it returns the address.
func holdingListener(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					t.Error(err)
				}
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			if serve != nil {
				wg.Go(func() { serve(c) })
			}
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}
