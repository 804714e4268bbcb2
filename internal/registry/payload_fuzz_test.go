package registry

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/registry/compat"
)

// compatCheck is the real compatibility check, as the registry role wires it.
var compatCheck = compat.RegistryCheck

// payloadOps are the endpoints that read a request body, with what a
// success answers.
var payloadOps = []struct {
	method, path string // path: %s is the escaped subject
	ok           int
}{
	{http.MethodPost, "/subjects/%s/versions", http.StatusOK},
	{http.MethodPost, "/subjects/%s/versions?normalize=true", http.StatusOK},
	{http.MethodPost, "/subjects/%s", http.StatusOK},
	{http.MethodPost, "/compatibility/subjects/%s/versions/latest?verbose=true", http.StatusOK},
	{http.MethodPost, "/compatibility/subjects/%s/versions", http.StatusOK},
	{http.MethodPut, "/config/%s", http.StatusOK},
	{http.MethodPut, "/config", http.StatusOK},
	{http.MethodPut, "/mode/%s", http.StatusOK},
}

// FuzzPayloads sends arbitrary bodies and subjects to every endpoint that
// reads a body (register, lookup, compatibility, config, subject mode)
// through the registry's handler, with the real compatibility check:
// never a panic and never a 5xx (those are for a failing store, which the
// in-memory log is not), every error in Confluent's shape with a status
// derived from its error_code, every success JSON. Seeds are added here
// and in testdata/fuzz/FuzzPayloads.
func FuzzPayloads(f *testing.F) {
	avroRecord := `{"type":"record","name":"R","fields":[{"name":"a","type":"string"}]}`
	seeds := []struct {
		op      uint8
		subject string
		body    string
	}{
		{0, "json", schemaBody("JSON", jsonSchema("a", "b"))},
		{0, "avro", schemaBody("AVRO", avroRecord)},
		{0, "avro", `{"schema":"{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"a\",\"type\":\"string\"},{\"name\":\"b\",\"type\":\"int\",\"default\":0}]}"}`},
		{0, "draft3", `{"schemaType":"JSON","schema":"{\"$schema\":\"http://json-schema.org/draft-03/schema#\",\"properties\":{\"x\":{\"type\":\"integer\",\"required\":true}}}"}`},
		{0, "x'; DROP TABLE y; --", schemaBody("JSON", jsonSchema("a"))},
		{0, "../../etc/passwd", schemaBody("JSON", jsonSchema("a"))},
		{0, "refs", `{"schema":"{\"type\":\"record\",\"name\":\"S\",\"fields\":[{\"name\":\"r\",\"type\":\"R\"}]}","references":[{"name":"R","subject":"avro","version":1}]}`},
		{0, "refs", `{"schema":"\"string\"","references":[{"name":"R","subject":"refs","version":-1}]}`},
		{0, "imp", `{"schema":"\"long\"","id":2147483647,"version":-1}`},
		{0, "meta", `{"schemaType":"JSON","schema":"{}","metadata":{"properties":{"version":"1.0.0"}},"ruleSet":{"domainRules":[]}}`},
		{0, "nums", `{"schema":"\"int\"","id":1e400,"version":123456789012345678901234567890}`},
		{0, "dup", `{"schema":"\"int\"","schema":"\"string\""}`},
		{0, "deep", `{"schemaType":"JSON","schema":"` + strings.Repeat(`{\"items\":`, 200) + `{}` + strings.Repeat(`}`, 200) + `"}`},
		{0, "bad", `{"schema":"` + strings.Repeat(`[`, 3000) + `"}`},
		{0, "bad", `{"schema":null}`},
		{0, "bad", `{"schema":42}`},
		{0, "bad", `[`},
		{0, "bad", "{\"schema\":\"\xff\"}"},
		{2, "avro", schemaBody("AVRO", avroRecord)},
		{3, "avro", `{"schema":"{\"type\":\"record\",\"name\":\"R\",\"fields\":[]}"}`},
		{3, "json", schemaBody("JSON", jsonSchema("a"))},
		{4, "none", schemaBody("JSON", "{}")},
		{5, "json", `{"compatibility":"FULL_TRANSITIVE"}`},
		{5, "json", `{"compatibility":"bogus"}`},
		{6, "", `{"compatibility":"none"}`},
		{6, "", `{"compatibilityLevel":null}`},
		{7, "imp", `{"mode":"IMPORT"}`},
		{7, "ro", `{"mode":"READONLY"}`},
		{7, "ro", `{"mode":42}`},
	}
	for _, s := range seeds {
		f.Add(s.op, s.subject, s.body)
	}
	in := newInstance(f, nil, func(c *Config) { c.Check = compatCheck; c.MaxBodyBytes = 64 << 10 })
	f.Fuzz(func(t *testing.T, op uint8, subject, body string) {
		o := payloadOps[int(op)%len(payloadOps)]
		path := strings.Replace(o.path, "%s", url.PathEscape(subject), 1)
		rec := newRecorder(t, in.r, o.method, path, body)
		// The instance is shared by every input: once earlier inputs
		// imported an id near the top of the id space, new registrations
		// are refused with 50001 "ids are exhausted" — a state, not a bug.
		if rec.Code == http.StatusInternalServerError && strings.Contains(rec.Body.String(), `"error_code":50001`) && strings.Contains(rec.Body.String(), "exhausted") {
			return
		}
		if rec.Code >= 500 || rec.Code < 200 {
			t.Fatalf("%s %s %q: status %d: %s", o.method, path, body, rec.Code, rec.Body)
		}
		if rec.Code == o.ok {
			if !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("%s %s: %d with a body that is not JSON: %q", o.method, path, rec.Code, rec.Body)
			}
			return
		}
		var ae apiError
		if err := json.Unmarshal(rec.Body.Bytes(), &ae); err != nil || ae.Message == "" || ae.status() != rec.Code {
			t.Fatalf("%s %s %q: %d with body %s", o.method, path, body, rec.Code, rec.Body)
		}
	})
}

// TestSchemaSizeLimits: JSON schemas nested deeper than maxSchemaDepth or
// with more than maxSchemaObjects objects are refused (422, 42201) at once;
// compiling them took seconds to minutes (a 9,000-deep schema held a core
// for 7 minutes, 100,000 properties for 90 s). Schemas at the limits
// register.
func TestSchemaSizeLimits(t *testing.T) {
	nested := func(n int) string { return strings.Repeat(`{"items":`, n-1) + `{}` + strings.Repeat(`}`, n-1) }
	wide := func(n int) string {
		props := make([]string, n-1)
		for i := range props {
			props[i] = fmt.Sprintf(`"p%d":{}`, i)
		}
		return `{"properties":{` + strings.Join(props, ",") + `}}`
	}
	in := newInstance(t, nil, func(c *Config) { c.Check = compatCheck })
	for _, c := range []struct {
		name, schema string
		status       int
	}{
		{"64 levels", nested(maxSchemaDepth), 200},
		{"65 levels", nested(maxSchemaDepth + 1), 422},
		{"9,000 levels", nested(9000), 422},
		{"arrays 65 deep in an enum", `{"enum":[` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `]}`, 422},
		{"brackets in strings do not count", `{"description":"` + strings.Repeat("[{", 100) + `"}`, 200},
		{"5,000 objects", wide(maxSchemaObjects - 1), 200},
		{"5,001 objects", wide(maxSchemaObjects), 422},
		{"100,000 objects", wide(100_000), 422},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			rec := newRecorder(t, in.r, http.MethodPost, "/subjects/"+strings.ReplaceAll(c.name, " ", "_")+"/versions", schemaBody("JSON", c.schema))
			if rec.Code != c.status {
				t.Fatalf("status %d, want %d: %.300s", rec.Code, c.status, rec.Body)
			}
			if c.status == 422 && !strings.Contains(rec.Body.String(), `"error_code":42201`) {
				t.Errorf("answer %.300s", rec.Body)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
}
