package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// maxAnswer bounds the body of an answer that is read (a POST's results).
const maxAnswer = 64 << 20

// client sends one request at a time for one worker and returns the
// status and, when keep is set, the body appended to answer[:0].
type client interface {
	do(ctx context.Context, method, target string, body []byte, keep bool, answer []byte) (status int, _ []byte, err error)
	close()
}

// newClient returns a worker's client: a plain HTTP/1.1 connection of its
// own for http:// URLs (rawClient), net/http's client otherwise.
func newClient(base *url.URL, hc *http.Client, timeout time.Duration) client {
	if base.Scheme == "http" {
		addr := base.Host
		if base.Port() == "" {
			addr = net.JoinHostPort(base.Hostname(), "80")
		}
		c := &rawClient{addr: addr, host: base.Host, timeout: timeout, idleRedial: idleRedial}
		if base.User != nil { // as net/http sends a URL's user:password
			pw, _ := base.User.Password()
			c.auth = "Basic " + base64.StdEncoding.EncodeToString([]byte(base.User.Username()+":"+pw))
		}
		return c
	}
	return &stdClient{hc: hc, base: base.Scheme + "://" + base.Host}
}

// stdClient is net/http's client (https, or anything but plain http).
type stdClient struct {
	hc   *http.Client
	base string
}

func (c *stdClient) do(ctx context.Context, method, target string, body []byte, keep bool, answer []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+target, rd)
	if err != nil {
		return 0, answer, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, answer, err
	}
	defer resp.Body.Close()
	answer, err = readAnswer(resp.Body, keep, answer)
	return resp.StatusCode, answer, err
}

func (c *stdClient) close() {}

// idleRedial is how long a rawClient's connection may stay unused before
// the client dials a new one rather than risk a connection the server
// has closed (the intake closes idle ones after 120 s).
const idleRedial = time.Second

// rawClient speaks HTTP/1.1 on one keep-alive TCP connection, in the
// calling goroutine: it writes the request with one system call and reads
// the answer with net/http's parser. net/http's Transport hands every
// request to two goroutines of the connection and back, which cost the
// load generator more CPU than the requests themselves: half of `bench`'s
// 29 µs a beacon. Answers may be chunked, informational (1xx, skipped) or
// close the connection. A request is sent again (once, on a new
// connection) only when writing it to a reused connection failed: once
// written, the server may have taken its events, and sending them again
// would make new events (the intake numbers each one), so a request whose
// answer never comes is an error, as in net/http for a POST. A connection
// unused for idleRedial is not reused.
type rawClient struct {
	addr, host string
	auth       string // Authorization header value, if the URL has a user
	timeout    time.Duration
	idleRedial time.Duration

	conn     net.Conn
	br       *bufio.Reader
	ctx      context.Context // whose cancellation stop undoes
	stop     func() bool     // unregisters the context's AfterFunc
	lastUsed time.Time
	buf      []byte
	header   [2][]byte // net.Buffers of the request: header, body
}

// errWrite marks an error writing a request.
type errWrite struct{ err error }

func (e errWrite) Error() string { return "sending the request: " + e.err.Error() }
func (e errWrite) Unwrap() error { return e.err }

func (c *rawClient) do(ctx context.Context, method, target string, body []byte, keep bool, answer []byte) (int, []byte, error) {
	if c.conn != nil && time.Since(c.lastUsed) > c.idleRedial {
		c.close()
	}
	for attempt := 0; ; attempt++ {
		reused := c.conn != nil
		status, answer, err := c.try(ctx, method, target, body, keep, answer)
		if err == nil {
			c.lastUsed = time.Now()
			return status, answer, nil
		}
		c.close()
		var we errWrite
		if !reused || attempt > 0 || !errors.As(err, &we) || ctx.Err() != nil {
			return 0, answer, err
		}
	}
}

func (c *rawClient) try(ctx context.Context, method, target string, body []byte, keep bool, answer []byte) (int, []byte, error) {
	if c.conn == nil {
		d := net.Dialer{Timeout: c.timeout}
		conn, err := d.DialContext(ctx, "tcp", c.addr)
		if err != nil {
			return 0, answer, err
		}
		c.conn = conn
		if c.br == nil {
			c.br = bufio.NewReaderSize(conn, 16<<10)
		} else {
			c.br.Reset(conn)
		}
	}
	if c.ctx != ctx {
		// Cancelling ctx ends a request in flight at once.
		if c.stop != nil {
			c.stop()
		}
		conn := c.conn
		c.ctx, c.stop = ctx, context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	}
	deadline := time.Now().Add(c.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := c.conn.SetDeadline(deadline); err != nil {
		return 0, answer, err
	}
	if err := ctx.Err(); err != nil { // the AfterFunc may have run before SetDeadline
		return 0, answer, err
	}
	b := append(c.buf[:0], method...)
	b = append(b, ' ')
	b = append(b, target...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, c.host...)
	b = append(b, "\r\nUser-Agent: eventlogging-bench\r\n"...)
	if c.auth != "" {
		b = append(b, "Authorization: "...)
		b = append(b, c.auth...)
		b = append(b, "\r\n"...)
	}
	if body != nil {
		b = append(b, "Content-Type: application/json\r\nContent-Length: "...)
		b = strconv.AppendInt(b, int64(len(body)), 10)
		b = append(b, "\r\n"...)
	}
	b = append(b, "\r\n"...)
	c.buf = b
	var err error
	if len(body) > 0 {
		c.header[0], c.header[1] = b, body
		bufs := net.Buffers(c.header[:])
		_, err = bufs.WriteTo(c.conn)
	} else {
		_, err = c.conn.Write(b)
	}
	if err != nil {
		return 0, answer, errWrite{err}
	}
	var resp *http.Response
	for {
		resp, err = http.ReadResponse(c.br, nil)
		if err != nil {
			return 0, answer, err
		}
		if resp.StatusCode < 100 || resp.StatusCode > 199 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		// 1xx (103 Early Hints, say): the answer follows.
	}
	answer, err = readAnswer(resp.Body, keep, answer)
	_ = resp.Body.Close()
	if err != nil {
		return 0, answer, fmt.Errorf("reading the answer: %w", err)
	}
	if resp.Close {
		c.close()
	}
	return resp.StatusCode, answer, nil
}

func (c *rawClient) close() {
	if c.conn == nil {
		return
	}
	if c.stop != nil {
		c.stop()
	}
	c.ctx, c.stop = nil, nil
	_ = c.conn.Close()
	c.conn = nil
}

// readAnswer reads body to its end: into answer[:0] when keep is set (at
// most maxAnswer bytes), else discarding it (answer[:0] is returned).
func readAnswer(body io.Reader, keep bool, answer []byte) ([]byte, error) {
	if !keep {
		_, err := io.Copy(io.Discard, body)
		return answer[:0], err
	}
	buf := bytes.NewBuffer(answer[:0])
	_, err := buf.ReadFrom(io.LimitReader(body, maxAnswer))
	return buf.Bytes(), err
}
