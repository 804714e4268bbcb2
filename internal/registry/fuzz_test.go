package registry

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/eventlogging/eventlogging/internal/kafka/schemalog"
)

// FuzzApply feeds arbitrary records to the state machine: it must never
// panic, and its indexes must stay consistent.
func FuzzApply(f *testing.F) {
	f.Add("schema/a/1", `{"subject":"a","version":1,"id":1,"schemaType":"JSON","schema":"{}"}`, "schema/a/1", "")
	f.Add("schema/a/b/2", `{"subject":"a/b","version":2,"id":7,"schema":"\"string\"","deleted":true}`, "maxid", `{"maxId":9}`)
	f.Add("config/", `{"compatibilityLevel":"full"}`, "mode/x", `{"mode":"IMPORT"}`)
	f.Add("schema/a/1", `{"subject":"a","version":1,"id":1,"schemaType":"JSON","schema":"{}","references":[{"name":"r","subject":"a","version":1}],"metadata":{"properties":{"version":"1.0.0"}}}`, "schema/b/1", `{"subject":"b","version":1,"id":1,"schemaType":"JSON","schema":"[]"}`)
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		st := newState()
		for _, kv := range [][2]string{{k1, v1}, {k2, v2}, {k1, ""}} {
			rec := schemalog.Record{Key: []byte(kv[0])}
			if kv[1] != "" {
				rec.Value = []byte(kv[1])
			}
			_ = st.apply(rec)
		}
		uses := map[int]int{}
		for name, subj := range st.subjects {
			if len(subj.order) != len(subj.versions) || len(subj.order) == 0 {
				t.Fatalf("subject %q: order %v, %d versions", name, subj.order, len(subj.versions))
			}
			for _, n := range subj.order {
				v := subj.versions[n]
				if st.ids[v.id] == nil {
					t.Fatalf("subject %q version %d: id %d has no entry", name, n, v.id)
				}
				uses[v.id]++
			}
		}
		for id, e := range st.ids {
			if e.uses != uses[id] {
				t.Fatalf("id %d: %d uses counted, %d found", id, e.uses, uses[id])
			}
			if id > st.maxID {
				t.Fatalf("id %d above maxID %d", id, st.maxID)
			}
		}
	})
}

// FuzzRoutes sends arbitrary requests to the handler: every answer has a
// status and, for errors, the error body.
func FuzzRoutes(f *testing.F) {
	for _, p := range []string{"/subjects/a/versions/latest", "/schemas/ids/1/versions", "/a%2Fb/c/1.0.0", "/config/%2e%2e", "/compatibility/subjects/x/versions", "//", "/mode/a/b"} {
		f.Add("GET", p, "")
		f.Add("POST", p, `{"schema":"{}","schemaType":"JSON"}`)
	}
	in := newInstance(f, nil)
	in.register(f, "a", schemaBody("JSON", jsonSchema("a")))
	f.Fuzz(func(t *testing.T, method, path, body string) {
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \t\r\n?#") || len(path) > 2000 {
			return
		}
		if _, err := url.ParseRequestURI(path); err != nil {
			return // no server would pass it on
		}
		switch method {
		case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodHead:
		default:
			return
		}
		rec := newRecorder(t, in.r, method, path, body)
		if rec.Code < 200 || rec.Code > 599 {
			t.Fatalf("%s %s: status %d", method, path, rec.Code)
		}
		if rec.Code >= 400 && method != http.MethodHead && !strings.Contains(rec.Body.String(), `"error_code"`) {
			t.Fatalf("%s %s: %d without an error body: %s", method, path, rec.Code, rec.Body)
		}
	})
}
