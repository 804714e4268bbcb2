package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// hostileCase is one malicious request and the status it must get.
type hostileCase struct {
	name   string
	method string
	path   string // sent as is (escapes kept), relative to the standalone
	header http.Header
	body   []byte
	status int
	// contains, when set, must be in the answer.
	contains string
}

// Reading the request (intake.Serve): headers within 5 s
// (ReadHeaderTimeout), the whole request within 30 s (ReadTimeout).
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 30 * time.Second
)

// TestHostileInput sends malicious HTTP requests to a running `eventlogging
// standalone` (intake at /, registry at /registry/, dashboard at
// /dashboard/), each with the status it must get, while a slowloris client
// and a slow body hold connections open; afterwards the standalone is
// healthy, a valid event still goes through, the hostile beacons became
// EventErrors and no SQL table was created from a hostile name.
func TestHostileInput(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	_, base := startStandalone(t, nil, dataDir, "--schemas", "../../examples/schemas", "--streams", "../../examples/streams.yaml")
	addr := strings.TrimPrefix(base, "http://")

	// The slow clients run while the table is served: the table passing is
	// what shows that they hold up no one else.
	var slow sync.WaitGroup
	slow.Go(func() { slowloris(t, addr) })
	slow.Go(func() { slowBody(t, addr) })

	const sqlName = "x'; DROP TABLE y; --"
	deep := bytes.Repeat([]byte("["), 10_000)
	deep = append(deep, bytes.Repeat([]byte("]"), 10_000)...)
	batch := "[" + strings.TrimSuffix(strings.Repeat(`{"schema":"Generic","revision":13,"event":{}},`, 1001), ",") + "]"
	generic := func(fields string) []byte {
		return []byte(`{"schema":"Generic","revision":13,"wiki":"hostile","webHost":"h",` + fields + `}`)
	}
	cases := []hostileCase{
		// Headers past MaxHeaderBytes (64 KiB): net/http answers 431 before
		// any handler runs.
		{name: "100 KB header", method: "GET", path: "/healthz", header: http.Header{"X-Big": {strings.Repeat("a", 100_000)}}, status: 431},
		{name: "100 KB header on a beacon", method: "GET", path: "/beacon/event?%7B%7D;", header: http.Header{"Cookie": {strings.Repeat("c=1; ", 20_000)}}, status: 431},

		// Subjects are names in a Kafka-topic store, never paths: a
		// traversal is an unknown subject (404) to read and an invalid one
		// (422, 42208: no "." or ".." segments) to register.
		{name: "registry subject ../../etc/passwd, read", method: "GET", path: "/registry/subjects/..%2F..%2Fetc%2Fpasswd/versions", status: 404, contains: `"error_code":40401`},
		{name: "registry subject .., read", method: "GET", path: "/registry/subjects/%2e%2e/versions", status: 404, contains: `"error_code":40401`},
		{name: "registry subject ../../etc/passwd, register", method: "POST", path: "/registry/subjects/..%2F..%2Fetc%2Fpasswd/versions",
			body: []byte(`{"schemaType":"JSON","schema":"{\"type\":\"object\"}"}`), status: 422, contains: `"error_code":42208`},
		{name: "registry subject .., register", method: "POST", path: "/registry/subjects/%2e%2e/versions",
			body: []byte(`{"schemaType":"JSON","schema":"{\"type\":\"object\"}"}`), status: 422, contains: `"error_code":42208`},
		{name: "registry schema by id ../1", method: "GET", path: "/registry/schemas/ids/..%2F1", status: 404, contains: `"error_code":40403`},
		// A subject that looks like SQL is a valid subject (any UTF-8 without
		// control characters or dot segments): stored verbatim, quoted in
		// JSON answers; no SQL is ever built from it (the sinks name tables
		// after event schemas, whose names must match ^[a-zA-Z0-9_-]{1,63}$).
		{name: "registry SQL-looking subject, register", method: "POST", path: "/registry/subjects/x'%3B%20DROP%20TABLE%20y%3B%20--/versions",
			body: []byte(`{"schemaType":"JSON","schema":"{\"type\":\"object\"}"}`), status: 200, contains: `"id":`},
		{name: "registry SQL-looking subject, read back", method: "GET", path: "/registry/subjects/x'%3B%20DROP%20TABLE%20y%3B%20--/versions/latest",
			status: 200, contains: `"subject":"x'; DROP TABLE y; --"`},
		// Registry bodies: nesting past encoding/json's 10,000 is malformed
		// JSON (400); a schema text nested 10,000 deep does not parse as a
		// schema (422, 42201); duplicate keys: the last one wins, as in
		// encoding/json; over 8 MiB: 413 (41301).
		{name: "registry body nested 10,000 deep", method: "POST", path: "/registry/subjects/deep/versions", body: append(append([]byte(`{"schema":`), deep...), '}'), status: 400, contains: `"error_code":400`},
		{name: "registry schema nested 10,000 deep", method: "POST", path: "/registry/subjects/deep/versions",
			body: []byte(`{"schemaType":"JSON","schema":"` + strings.Repeat(`{\"items\":`, 10_000) + `{}` + strings.Repeat(`}`, 10_000) + `"}`), status: 422, contains: `"error_code":42201`},
		// Compiling a JSON schema costs the square of its depth and of its
		// subschema count: past 64 levels or 5,000 objects it is refused at
		// once (before: 2,000 levels took 10 s, 9,000 levels 7 minutes,
		// 100,000 properties 94 s).
		{name: "registry schema nested 2,000 deep", method: "POST", path: "/registry/subjects/deep/versions",
			body: []byte(`{"schemaType":"JSON","schema":"` + strings.Repeat(`{\"items\":`, 2000) + `{}` + strings.Repeat(`}`, 2000) + `"}`), status: 422, contains: "may nest 64 levels"},
		{name: "registry schema with 60,000 properties", method: "POST", path: "/registry/subjects/wide/versions",
			body: wideSchemaBody(60_000), status: 422, contains: "5000 objects"},
		{name: "registry duplicate keys: the last wins", method: "POST", path: "/registry/subjects/dup/versions",
			body: []byte(`{"schemaType":"JSON","schema":"not a schema","schema":"{\"type\":\"object\"}"}`), status: 200, contains: `"id":`},
		{name: "registry 10 MB body", method: "POST", path: "/registry/subjects/big/versions", body: bytes.Repeat([]byte(" "), 10<<20), status: 413, contains: `"error_code":41301`},
		{name: "registry huge numbers", method: "POST", path: "/registry/subjects/nums/versions",
			body: []byte(`{"schema":"\"int\"","id":1e400,"version":123456789012345678901234567890}`), status: 422},
		{name: "registry unknown method", method: "PATCH", path: "/registry/subjects", status: 405, contains: `"error_code":405`},

		// Beacons: the intake checks only the URL; the processor judges the
		// event, so hostile content is a 204 and then an EventError (checked
		// below by the wiki marker).
		{name: "beacon with an SQL-looking schema", method: "GET",
			path: "/beacon/event?" + beaconQuery(`{"schema":"x'; DROP TABLE y; --","revision":1,"event":{},"wiki":"hostileSQL"}`), status: 204},
		{name: "beacon nested 1,000 deep", method: "GET",
			path: "/beacon/event?%7B%22wiki%22%3A%22hostileDeep%22%2C%22x%22%3A" + strings.Repeat("[", 1000) + strings.Repeat("]", 900) + ";", status: 204},
		// 10,000 levels cannot fit a beacon URL: 414 before any parsing.
		{name: "beacon nested 10,000 deep", method: "GET", path: "/beacon/event?" + strings.Repeat("%5B", 10_000) + ";", status: 414},
		{name: "beacon with a NUL byte", method: "GET", path: "/beacon/event?%7B%22wiki%22%3A%22hostileNUL%00%22%7D;", status: 204},
		{name: "beacon with invalid UTF-8", method: "GET", path: "/beacon/event?%7B%22wiki%22%3A%22hostileUTF8%FF%22%7D;", status: 204},
		// Over intake.max_url_length (2,000, the browser client's limit).
		{name: "beacon URL of 2,100 characters", method: "GET", path: "/beacon/event?" + strings.Repeat("a", 2100) + ";", status: 414},
		{name: "beacon, unknown method", method: "BREW", path: "/beacon/event", status: 405},

		// POST /v1/events: malformed bodies are 400 before any event is
		// processed; an SQL-looking schema name is an invalid event (400,
		// the schema name is checked against ^[a-zA-Z0-9_-]{1,63}$).
		{name: "POST nested 10,000 deep", method: "POST", path: "/v1/events", body: deep, status: 400, contains: "maximum nesting depth"},
		{name: "POST SQL-looking schema", method: "POST", path: "/v1/events",
			body: []byte(`{"schema":"` + sqlName + `","revision":1,"event":{}}`), status: 400, contains: "invalid schema id"},
		{name: "POST invalid UTF-8", method: "POST", path: "/v1/events", body: generic(`"event":{"articleId":1,"articleTitle":"` + "\xff" + `"}`), status: 400, contains: "not valid UTF-8"},
		// An integer no sink column holds (1e400, a 30-digit integer) is
		// refused at validation, saying so: a 201 means the event will be
		// stored (on 1481bd2 both were accepted, then refused by the sinks
		// into eventlogging_SinkError). A revision must fit 64 bits: 400.
		{name: "POST 1e400", method: "POST", path: "/v1/events", body: generic(`"event":{"articleId":1e400,"articleTitle":"hostileHuge1"}`), status: 400, contains: "integer out of range"},
		{name: "POST 30-digit integer", method: "POST", path: "/v1/events",
			body: generic(`"event":{"articleId":123456789012345678901234567890,"articleTitle":"hostileHuge2"}`), status: 400, contains: "integer out of range"},
		{name: "POST 30-digit revision", method: "POST", path: "/v1/events",
			body: []byte(`{"schema":"Generic","revision":123456789012345678901234567890,"event":{"articleId":1,"articleTitle":"x"}}`), status: 400, contains: "/revision"},
		// Duplicate keys: the last one wins (as in encoding/json and
		// JavaScript's JSON.parse); the capsule written holds it once.
		{name: "POST duplicate keys, valid last", method: "POST", path: "/v1/events",
			body: []byte(`{"schema":"Nope","schema":"Generic","revision":13,"event":{"articleId":1,"articleTitle":"hostileDup"}}`), status: 201},
		{name: "POST duplicate keys, unknown last", method: "POST", path: "/v1/events",
			body: []byte(`{"schema":"Generic","schema":"Nope","revision":13,"event":{"articleId":1,"articleTitle":"x"}}`), status: 400, contains: "unknown schema Nope"},
		// Over intake.max_body_bytes (4 MiB) and intake.max_batch_events (1,000).
		{name: "POST 10 MB body", method: "POST", path: "/v1/events", body: bytes.Repeat([]byte(" "), 10<<20), status: 413},
		{name: "POST 1,001 events", method: "POST", path: "/v1/events", body: []byte(batch), status: 413, contains: "1001 events"},
		{name: "POST, unknown method", method: "PATCH", path: "/v1/events", status: 405},
		{name: "POST, wrong content type", method: "POST", path: "/v1/events", header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}},
			body: []byte("schema=Generic"), status: 415},

		// The dashboard serves embedded files by name only.
		{name: "dashboard static ../../go.mod, escaped", method: "GET", path: "/dashboard/static/..%2F..%2Fgo.mod", status: 404},
		// net/http's mux cleans the path and redirects to /go.mod, which is
		// the intake's 404 (the client follows the redirect).
		{name: "dashboard static ../../go.mod", method: "GET", path: "/dashboard/static/../../go.mod", status: 404},
		{name: "dashboard page, unknown method", method: "DELETE", path: "/dashboard/", status: 405},
		// The subject registered above, shown HTML-escaped.
		{name: "dashboard SQL-looking schema page", method: "GET", path: "/dashboard/schemas/x'%3B%20DROP%20TABLE%20y%3B%20--", status: 200,
			contains: "x&#39;; DROP TABLE y; --"},
		{name: "dashboard script in a schema name", method: "GET", path: "/dashboard/schemas/%3Cscript%3Ealert(1)%3C%2Fscript%3E", status: 404,
			contains: "&lt;script&gt;alert(1)&lt;/script&gt;"},
	}
	hc := &http.Client{Timeout: 60 * time.Second}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body := hostileRequest(t, hc, base, c)
			if status != c.status {
				t.Fatalf("%s %.80s: status %d, want %d: %.300s", c.method, c.path, status, c.status, body)
			}
			if c.contains != "" && !strings.Contains(body, c.contains) {
				t.Fatalf("%s %.80s: answer lacks %q: %.300s", c.method, c.path, c.contains, body)
			}
		})
	}
	slow.Wait()

	// Still healthy, and a valid event still goes through both paths.
	if status, body := hostileRequest(t, hc, base, hostileCase{method: "GET", path: "/readyz"}); status != 200 {
		t.Fatalf("readyz after the hostile requests: %d %s", status, body)
	}
	if status, body := hostileRequest(t, hc, base, hostileCase{method: "POST", path: "/v1/events", body: generic(`"event":{"articleId":7,"articleTitle":"hostileAfter"}`)}); status != 201 {
		t.Fatalf("valid POST after the hostile requests: %d %s", status, body)
	}
	if status, body := hostileRequest(t, hc, base, hostileCase{method: "GET",
		path: "/beacon/event?" + beaconQuery(`{"schema":"Generic","revision":13,"wiki":"hostile","webHost":"h","event":{"articleId":8,"articleTitle":"hostileAfterBeacon"}}`)}); status != 204 {
		t.Fatalf("valid beacon after the hostile requests: %d %s", status, body)
	}

	// The valid events, duplicate keys once; the huge numbers not at all.
	valid := runCLI(t, "tail", "--data-dir", dataDir, "--from-beginning", "--count", "3", "--timeout", "60s",
		"--grep", "hostile(Huge|Dup|After)", "eventlogging_Generic")
	for _, want := range []string{`"articleTitle":"hostileDup"`, `"articleTitle":"hostileAfter"`, `"articleTitle":"hostileAfterBeacon"`} {
		if !strings.Contains(valid, want) {
			t.Errorf("eventlogging_Generic lacks %s:\n%s", want, valid)
		}
	}
	if strings.Count(valid, `"schema":"Generic"`) != 3 || strings.Contains(valid, "Nope") || strings.Contains(valid, "hostileHuge") {
		t.Errorf("duplicate keys: want the last one, once:\n%s", valid)
	}
	// Each hostile beacon is an EventError with its reason.
	errs := runCLI(t, "tail", "--data-dir", dataDir, "--from-beginning", "--count", "4", "--timeout", "60s",
		"--grep", "hostile(SQL|Deep|NUL|UTF8)", "eventlogging_EventError")
	for marker, reason := range map[string]string{
		"hostileSQL":  "invalid schema id",
		"hostileDeep": "exceeded maximum nesting depth",
		"hostileNUL":  "invalid character",
		"hostileUTF8": "invalid UTF-8",
	} {
		line := lineWith(errs, marker)
		if line == "" || !strings.Contains(line, reason) {
			t.Errorf("EventError of %s: want %q in %q", marker, reason, line)
		}
	}
	checkNoHostileTables(t, filepath.Join(dataDir, "events.db"))
}

// wideSchemaBody is a registration body holding a JSON schema with n
// properties.
func wideSchemaBody(n int) []byte {
	props := make([]string, n)
	for i := range props {
		props[i] = fmt.Sprintf(`\"p%d\":{}`, i)
	}
	return []byte(`{"schemaType":"JSON","schema":"{\"type\":\"object\",\"properties\":{` + strings.Join(props, ",") + `}}"}`)
}

// beaconQuery escapes a capsule as the browser client does.
func beaconQuery(capsuleJSON string) string {
	return strings.TrimPrefix(beaconURL("", capsuleJSON), "/beacon/event?")
}

// hostileRequest sends c and returns the final status and body.
func hostileRequest(t *testing.T, hc *http.Client, base string, c hostileCase) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), c.method, base+c.path, bytes.NewReader(c.body))
	if err != nil {
		t.Fatal(err)
	}
	if c.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %.80s: %v", c.method, c.path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func lineWith(lines, marker string) string {
	for l := range strings.Lines(lines) {
		if strings.Contains(l, marker) {
			return l
		}
	}
	return ""
}

// slowloris trickles request headers, one byte per second: the server must
// close the connection once ReadHeaderTimeout has passed (net/http answers
// 400 and closes).
func slowloris(t *testing.T, addr string) {
	opened, closed, answer := trickle(t, addr, "GET /healthz HTTP/1.1\r\nHost: x\r\n", "X-Slow: "+strings.Repeat("a", 100))
	t.Logf("slowloris: closed after %s, answer %q", closed.Sub(opened).Round(time.Millisecond), answer)
	if d := closed.Sub(opened); d < readHeaderTimeout-time.Second || d > readHeaderTimeout+4*time.Second {
		t.Errorf("slowloris: connection closed after %s, want about %s (ReadHeaderTimeout); answer %q", d, readHeaderTimeout, answer)
	}
	if answer != "" && !strings.HasPrefix(answer, "HTTP/1.1 400") && !strings.HasPrefix(answer, "HTTP/1.1 408") {
		t.Errorf("slowloris: answer %q", answer)
	}
}

// slowBody sends the headers of a POST /v1/events at once, then its body
// one byte per second: the server must close the connection once
// ReadTimeout has passed (the handler's 400 or 408 usually cannot be
// written any more: WriteTimeout ends at the same time).
func slowBody(t *testing.T, addr string) {
	head := "POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
	opened, closed, answer := trickle(t, addr, head, strings.Repeat(" ", 1000))
	t.Logf("slow body: closed after %s, answer %q", closed.Sub(opened).Round(time.Millisecond), answer)
	if d := closed.Sub(opened); d < readTimeout-time.Second || d > readTimeout+10*time.Second {
		t.Errorf("slow body: connection closed after %s, want about %s (ReadTimeout); answer %q", d, readTimeout, answer)
	}
	if answer != "" && !strings.HasPrefix(answer, "HTTP/1.1 400") && !strings.HasPrefix(answer, "HTTP/1.1 408") {
		t.Errorf("slow body: answer %q", answer)
	}
}

// trickle writes head, then rest one byte per second, until the server
// answers or closes the connection (or a minute passes); it returns when
// the connection opened, when the server answered or closed it, and the
// first line of the answer.
func trickle(t *testing.T, addr, head, rest string) (opened, closed time.Time, answer string) {
	conn, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", addr)
	if err != nil {
		t.Error(err)
		return opened, closed, answer
	}
	opened = time.Now()
	_ = conn.SetDeadline(opened.Add(time.Minute))
	type result struct {
		at   time.Time
		line string
	}
	done := make(chan result, 1)
	go func() {
		line, _ := bufio.NewReader(conn).ReadString('\n')
		done <- result{time.Now(), strings.TrimSpace(line)}
	}()
	defer conn.Close()
	if _, err := io.WriteString(conn, head); err != nil {
		t.Errorf("write %q: %v", head, err)
	}
	tick := time.NewTicker(time.Second) // the attack's pace, not synchronisation
	defer tick.Stop()
	for i := 0; i < len(rest); i++ {
		select {
		case r := <-done:
			return opened, r.at, r.line
		case <-tick.C:
		}
		if _, err := conn.Write([]byte{rest[i]}); err != nil {
			break // closed by the server: the reader sees it too
		}
	}
	r := <-done
	if r.at.Sub(opened) >= time.Minute {
		t.Errorf("%s: the server kept the connection open for a minute", strings.Fields(head)[0])
	}
	return opened, r.at, r.line
}

// checkNoHostileTables lists the SQLite sink's tables: each is named
// <Schema>_<revision> after a valid schema; none comes from a hostile name.
func checkNoHostileTables(t *testing.T, path string) {
	t.Helper()
	db := openSQLite(t, path)
	deadline := time.Now().Add(60 * time.Second)
	var tables []string
	for {
		tables = tables[:0]
		rows, err := db.QueryContext(t.Context(), `SELECT name FROM sqlite_master WHERE type = 'table'`)
		if err == nil {
			for rows.Next() {
				var name string
				if rows.Scan(&name) == nil {
					tables = append(tables, name)
				}
			}
			err = rows.Err()
			rows.Close()
		}
		if err == nil && slices.Contains(tables, "Generic_13") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the SQL sink never created Generic_13 (tables %q, %v)", tables, err)
		}
		time.Sleep(200 * time.Millisecond) // polling interval
	}
	for _, name := range tables {
		if name == "y" || strings.ContainsAny(name, "'; ") || strings.Contains(strings.ToUpper(name), "DROP") {
			t.Errorf("table %q created from a hostile name", name)
		}
	}
	t.Logf("SQLite tables: %s", fmt.Sprint(tables))
}
