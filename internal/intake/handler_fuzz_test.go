package intake

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/eventlogging/eventlogging/internal/capsule"
)

// FuzzPost sends arbitrary bodies and content types to POST /v1/events
// (synchronous and hasty) through the whole handler, with a real
// processor and a kfake broker: never a panic, never a 5xx, a status from
// the documented set, and an answer whose shape fits the status. Seeds are
// added here and in testdata/fuzz/FuzzPost.
func FuzzPost(f *testing.F) {
	for _, s := range []string{
		genericCapsule,
		`[` + genericCapsule + `,{"schema":"Generic","revision":13,"event":{"articleId":"x"}}]`,
		`{"$schema":"/analytics/edit_funnel/1.0.0","meta":{"stream":"analytics.edit_funnel"},"action":"init","session_id":"s"}`,
		`{"schema":"x'; DROP TABLE y; --","revision":1,"event":{}}`,
		`{"schema":"A","schema":"B","revision":1,"event":{}}`,
		`{"schema":"Generic","revision":1e400,"event":{"articleId":123456789012345678901234567890}}`,
		`[[],{},null,1,"s",true]`, `[]`, `null`, `42`, ``, " \t\n", `{"a":"\u0000"}`, "{\"a\":\"\xff\"}",
		strings.Repeat("[", 600) + strings.Repeat("]", 600),
		`{"schema":"SearchQuery","revision":5,"event":{"query":"q","results":1,"source":"fulltext","dt":"` + strings.Repeat("x<", 40000) + `"}}`,
		`{"schema":"SearchQuery","revision":5,"event":{"query":"q","results":1,"source":"fulltext",` + strings.Repeat(`"k<&>":1,`, 300) + `"z":1}}`,
		`{"schema":"` + strings.Repeat("S", 70000) + `","revision":5,"event":{}}`,
	} {
		f.Add(false, "application/json", []byte(s))
		f.Add(true, "text/plain;charset=UTF-8", []byte(s))
	}
	f.Add(false, "application/xml", []byte(`<event/>`))
	f.Add(false, "", []byte(`{}`))
	f.Add(false, "application/json; charset", []byte(`{}`))
	ti := newTestIntake(f, Config{MaxBatchEvents: 50})
	f.Fuzz(func(t *testing.T, hasty bool, contentType string, body []byte) {
		path := "/v1/events"
		if hasty {
			path += "?hasty=true"
		}
		req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, path, strings.NewReader(string(body)))
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		rec := httptest.NewRecorder()
		ti.srv.ServeHTTP(rec, req)

		allowed := map[int]bool{201: !hasty, 207: !hasty, 202: hasty, 400: true, 413: true, 415: true}
		if !allowed[rec.Code] {
			t.Fatalf("POST %s (%q) %q: status %d: %s", path, contentType, body, rec.Code, rec.Body)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("answer content type %q", ct)
		}
		var answer struct {
			Status   int           `json:"status"`
			Error    string        `json:"error"`
			Queued   int           `json:"queued"`
			Accepted int           `json:"accepted"`
			Invalid  int           `json:"invalid"`
			Events   []EventResult `json:"events"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &answer); err != nil {
			t.Fatalf("answer %q is not JSON: %v", rec.Body, err)
		}
		events, splitStatus, _ := ti.srv.split(body, nil)
		switch {
		case rec.Code == 415:
			if answer.Status != 415 || answer.Error == "" {
				t.Fatalf("415 without the error body: %s", rec.Body)
			}
		case splitStatus != 0:
			if rec.Code != splitStatus || answer.Status != splitStatus || answer.Error == "" {
				t.Fatalf("split says %d, the handler %d: %s", splitStatus, rec.Code, rec.Body)
			}
		case hasty:
			if rec.Code != 202 || answer.Queued != len(events) {
				t.Fatalf("hasty: %d %s for %d events", rec.Code, rec.Body, len(events))
			}
		default:
			if limit := MaxAnswerErrorBytes + 400*len(events) + 64; rec.Body.Len() > limit {
				t.Fatalf("answer of %d bytes for %d events, over the %d-byte bound", rec.Body.Len(), len(events), limit)
			}
			if len(answer.Events) != len(events) || answer.Accepted+answer.Invalid != len(events) {
				t.Fatalf("%d events, answer %s", len(events), rec.Body)
			}
			want := 207
			switch {
			case answer.Invalid == 0:
				want = 201
			case answer.Accepted == 0:
				want = 400
			}
			if rec.Code != want {
				t.Fatalf("status %d for %d accepted, %d invalid", rec.Code, answer.Accepted, answer.Invalid)
			}
			for i, r := range answer.Events {
				ok := r.Index == i && (r.Status == "accepted") == (r.Code == "") &&
					(r.Status == "accepted" || (r.Status == "invalid" && r.Message != ""))
				if !ok {
					t.Fatalf("event %d: %+v", i, r)
				}
				if len(r.Errors) > capsule.MaxViolations || len(r.Message) > capsule.MaxMessageBytes {
					t.Fatalf("event %d: %d violations and a message of %d bytes, over the bounds", i, len(r.Errors), len(r.Message))
				}
				for _, v := range r.Errors {
					if len(v.Pointer) > capsule.MaxPointerBytes || len(v.Reason) > capsule.MaxReasonBytes {
						t.Fatalf("event %d: violation %.80q: %.80q, over the bounds", i, v.Pointer, v.Reason)
					}
				}
			}
		}
	})
}

// FuzzBeacon sends arbitrary query strings and User-Agents to GET
// /beacon/event through the whole handler: 204 (the raw line is queued,
// the processor judges it), 400 for an empty beacon or 414 for a long URL;
// never a panic or a 5xx. Queries hold what net/http lets through a
// request line: no control characters, spaces or '#'.
func FuzzBeacon(f *testing.F) {
	for _, q := range []string{
		"%7B%22schema%22%3A%22Generic%22%2C%22revision%22%3A13%2C%22event%22%3A%7B%7D%7D;",
		";", "", "%", "%zz", "%C3%28;", "\xff\xfe", "x%00y;", "%7B%22schema%22%3A%22x'%3B%20DROP%20TABLE%20y%3B%20--%22%7D;",
		strings.Repeat("a", 2100), "a=b&c=d", "?;", "%2e%2e%2f%2e%2e%2fetc%2fpasswd;",
	} {
		f.Add(q, "Mozilla/5.0")
	}
	f.Add("x;", "tab\there\x00nul")
	ti := newTestIntake(f, Config{})
	f.Fuzz(func(t *testing.T, query, ua string) {
		if strings.ContainsFunc(query, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '#' }) {
			return // no request line carries them
		}
		req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/beacon/event", nil)
		req.URL.RawQuery = query
		req.RequestURI = "/beacon/event?" + query
		req.Header.Set("User-Agent", ua)
		rec := httptest.NewRecorder()
		ti.srv.ServeHTTP(rec, req)
		want := 204
		switch {
		case len(req.RequestURI) > 2000:
			want = 414
		case query == "" || query == ";":
			want = 400
		}
		if rec.Code != want {
			t.Fatalf("GET %s: status %d, want %d: %s", req.RequestURI, rec.Code, want, rec.Body)
		}
	})
}
