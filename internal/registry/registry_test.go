package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/httpauth"
)

func TestNewConfig(t *testing.T) {
	l := newMemTopic().view()
	for _, tt := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"ok", Config{Log: l, Check: stubCheck}, true},
		{"level lower case", Config{Log: l, Check: stubCheck, DefaultLevel: "full_transitive"}, true},
		{"no log", Config{Check: stubCheck}, false},
		{"no check", Config{Log: l}, false},
		{"bad level", Config{Log: l, Check: stubCheck, DefaultLevel: "SIDEWAYS"}, false},
	} {
		if _, err := New(tt.cfg); (err == nil) != tt.ok {
			t.Errorf("%s: New error %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}

func TestSubjectsVersionsAndIDs(t *testing.T) {
	in := newInstance(t, nil)
	s1, s2 := jsonSchema("a"), jsonSchema("a", "b")
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	in.run(t, []step{
		{name: "register", method: "POST", path: "/subjects/page/versions", body: schemaBody("JSON", s1), status: 200, wantJSON: `{"id":1}`},
		{name: "register again", method: "POST", path: "/subjects/page/versions", body: schemaBody("JSON", s1), status: 200, wantJSON: `{"id":1}`},
		{name: "same schema, other spacing", method: "POST", path: "/subjects/page/versions", body: schemaBody("json", strings.ReplaceAll(s1, ":", " : ")), status: 200, wantJSON: `{"id":1}`},
		{name: "same schema, other subject", method: "POST", path: "/subjects/other/versions", body: schemaBody("JSON", s1), status: 200, wantJSON: `{"id":1}`},
		{name: "second version", method: "POST", path: "/subjects/page/versions", body: schemaBody("JSON", s2), status: 200, wantJSON: `{"id":2}`},
		{name: "subject with a slash", method: "POST", path: "/subjects/analytics%2Fedit_funnel/versions", body: schemaBody("JSON", s2), status: 200, wantJSON: `{"id":2}`},
		{method: "GET", path: "/subjects", status: 200, wantJSON: `["analytics/edit_funnel","other","page"]`},
		{method: "GET", path: "/subjects?subjectPrefix=pa", status: 200, wantJSON: `["page"]`},
		{method: "GET", path: "/subjects/page/versions", status: 200, wantJSON: `[1,2]`},
		{method: "GET", path: "/subjects/page/versions/", status: 200, wantJSON: `[1,2]`},
		{method: "GET", path: "/subjects/analytics%2Fedit_funnel/versions/1", status: 200,
			wantJSON: `{"subject":"analytics/edit_funnel","version":1,"id":2,"schemaType":"JSON","schema":` + q(s2) + `}`},
		{method: "GET", path: "/subjects/page/versions/1", status: 200, wantJSON: `{"subject":"page","version":1,"id":1,"schemaType":"JSON","schema":` + q(s1) + `}`},
		{method: "GET", path: "/subjects/page/versions/latest", status: 200, wantJSON: `{"subject":"page","version":2,"id":2,"schemaType":"JSON","schema":` + q(s2) + `}`},
		{method: "GET", path: "/subjects/page/versions/-1", status: 200, contains: `"version":2`},
		{method: "GET", path: "/subjects/page/versions/2/schema", status: 200, wantText: s2},
		{method: "GET", path: "/schemas/ids/2", status: 200, wantJSON: `{"schemaType":"JSON","schema":` + q(s2) + `}`},
		{method: "GET", path: "/schemas/ids/2?fetchMaxId=true", status: 200, wantJSON: `{"schemaType":"JSON","schema":` + q(s2) + `,"maxId":2}`},
		{method: "GET", path: "/schemas/ids/1/schema", status: 200, wantText: s1},
		{method: "GET", path: "/schemas/ids/1/versions", status: 200, wantJSON: `[{"subject":"other","version":1},{"subject":"page","version":1}]`},
		{method: "GET", path: "/schemas/ids/1/subjects", status: 200, wantJSON: `["other","page"]`},
		{method: "GET", path: "/schemas/ids/1?subject=page", status: 200, contains: `"schema"`},
		{method: "GET", path: "/schemas/ids/1?subject=analytics%2Fedit_funnel", status: 404, code: 40403},
		{method: "GET", path: "/schemas/types", status: 200, wantJSON: `["JSON","AVRO"]`},
		{method: "GET", path: "/schemas?subjectPrefix=page", status: 200,
			wantJSON: `[{"subject":"page","version":1,"id":1,"schemaType":"JSON","schema":` + q(s1) + `},{"subject":"page","version":2,"id":2,"schemaType":"JSON","schema":` + q(s2) + `}]`},
		{method: "GET", path: "/schemas?latestOnly=true&subjectPrefix=o", status: 200, contains: `"subject":"other","version":1`},
		{name: "lookup", method: "POST", path: "/subjects/page", body: schemaBody("JSON", s1), status: 200,
			wantJSON: `{"subject":"page","version":1,"id":1,"schemaType":"JSON","schema":` + q(s1) + `}`},
		{name: "lookup unknown schema", method: "POST", path: "/subjects/page", body: schemaBody("JSON", jsonSchema("z")), status: 404, code: 40403},
		{name: "lookup unknown subject", method: "POST", path: "/subjects/nope", body: schemaBody("JSON", s1), status: 404, code: 40401},
		{name: "lookup invalid schema", method: "POST", path: "/subjects/page", body: schemaBody("JSON", "nope"), status: 422, code: 42201},
		{name: "version 0", method: "GET", path: "/subjects/page/versions/0", status: 422, code: 42202},
		{name: "version -2", method: "GET", path: "/subjects/page/versions/-2", status: 422, code: 42202},
		{name: "version abc", method: "GET", path: "/subjects/page/versions/abc", status: 422, code: 42202},
		{name: "version 2^31", method: "GET", path: "/subjects/page/versions/2147483648", status: 422, code: 42202},
		{name: "version missing", method: "GET", path: "/subjects/page/versions/99", status: 404, code: 40402},
		{name: "subject missing", method: "GET", path: "/subjects/nope/versions", status: 404, code: 40401},
		{name: "subject missing, version", method: "GET", path: "/subjects/nope/versions/1", status: 404, code: 40401},
		{name: "subject missing, latest", method: "GET", path: "/subjects/nope/versions/latest", status: 404, code: 40401},
		{name: "bad subject name read", method: "GET", path: "/subjects/a%0Ab/versions", status: 404, code: 40401},
		{name: "unknown id", method: "GET", path: "/schemas/ids/999", status: 404, code: 40403},
		{name: "unknown id, raw", method: "GET", path: "/schemas/ids/999/schema", status: 404, code: 40403},
		{name: "unknown id, versions", method: "GET", path: "/schemas/ids/999/versions", status: 404, code: 40403},
		{name: "id not a number", method: "GET", path: "/schemas/ids/abc", status: 404, code: 40403},
		{name: "id 0", method: "GET", path: "/schemas/ids/0", status: 404, code: 40403},
		{name: "unknown path", method: "GET", path: "/nothing", status: 404, code: 404},
		{name: "unknown deep path", method: "GET", path: "/subjects/page/versions/1/nothing", status: 404, code: 404},
		{name: "wrong method", method: "PUT", path: "/subjects", status: 405, code: 405},
		{name: "root", method: "GET", path: "/", status: 200, wantJSON: `{}`},
		{name: "contexts", method: "GET", path: "/contexts", status: 200, wantJSON: `["."]`},
	})
}

func TestRegisterErrors(t *testing.T) {
	in := newInstance(t, nil, func(c *Config) { c.MaxBodyBytes = 0 }) // the 8 MiB default
	huge := schemaBody("JSON", `{"description":"`+strings.Repeat("x", 10<<20)+`"}`)
	in.run(t, []step{
		{name: "schema not JSON", method: "POST", path: "/subjects/s/versions", body: schemaBody("JSON", "not json"), status: 422, code: 42201},
		{name: "schema in YAML", method: "POST", path: "/subjects/s/versions", body: schemaBody("JSON", "type: object\n"), status: 422, code: 42201},
		{name: "JSON schema not an object", method: "POST", path: "/subjects/s/versions", body: schemaBody("JSON", "[1]"), status: 422, code: 42201},
		{name: "invalid JSON schema", method: "POST", path: "/subjects/s/versions", body: schemaBody("JSON", `{"type": 12}`), status: 422, code: 42201, contains: "type"},
		{name: "external $ref", method: "POST", path: "/subjects/s/versions", body: schemaBody("JSON", `{"$ref": "https://example.org/x.json"}`), status: 422, code: 42201},
		{name: "invalid Avro", method: "POST", path: "/subjects/s/versions", body: schemaBody("AVRO", `{"type":"record","name":"r","fields":[{"name":"f","type":"str"}]}`), status: 422, code: 42201},
		{name: "Avro is the default type", method: "POST", path: "/subjects/s/versions", body: `{"schema": "{\"type\":\"record\",\"name\":\"r\"}"}`, status: 422, code: 42201},
		{name: "JSON schema sent as Avro", method: "POST", path: "/subjects/s/versions", body: `{"schema": "{\"type\":\"object\"}"}`, status: 422, code: 42201},
		{name: "unsupported type", method: "POST", path: "/subjects/s/versions", body: schemaBody("PROTOBUF", `syntax = "proto3";`), status: 422, code: 42201},
		{name: "missing reference", method: "POST", path: "/subjects/s/versions", body: `{"schema":"\"string\"","references":[{"name":"x","subject":"nope","version":1}]}`, status: 422, code: 42201},
		{name: "body not JSON", method: "POST", path: "/subjects/s/versions", body: `{"schema":`, status: 400, code: 400},
		{name: "no schema", method: "POST", path: "/subjects/s/versions", body: `{}`, status: 422, code: 42201},
		{name: "schema not a string", method: "POST", path: "/subjects/s/versions", body: `{"schema": 5}`, status: 422, code: 422},
		{name: "control character in subject", method: "POST", path: "/subjects/a%0Ab/versions", body: schemaBody("JSON", jsonSchema("a")), status: 422, code: 42208},
		{name: "dot-dot segment in subject", method: "POST", path: "/subjects/a%2F..%2Fb/versions", body: schemaBody("JSON", jsonSchema("a")), status: 422, code: 42208},
		{name: "subject too long", method: "POST", path: "/subjects/" + strings.Repeat("s", 256) + "/versions", body: schemaBody("JSON", jsonSchema("a")), status: 422, code: 42208},
		{name: "10 MB schema", method: "POST", path: "/subjects/s/versions", body: huge, status: 413, code: 41301},
		{name: "content type", method: "POST", path: "/subjects/s/versions", body: schemaBody("JSON", jsonSchema("a")), header: http.Header{"Content-Type": {"text/plain"}}, status: 415, code: 415},
		{name: "explicit id outside IMPORT", method: "POST", path: "/subjects/s/versions", body: `{"schemaType":"JSON","schema":"{}","id":7}`, status: 422, code: 42205},
		{name: "explicit version outside IMPORT", method: "POST", path: "/subjects/s/versions", body: `{"schemaType":"JSON","schema":"{}","version":3}`, status: 422, code: 42205},
		{name: "nothing was registered", method: "GET", path: "/subjects", status: 200, wantJSON: `[]`},
		{name: "draft 3 kept as written", method: "POST", path: "/subjects/d3/versions", body: schemaBody("JSON", `{"properties": {"a": {"type": "string", "required": true}}}`), status: 200, wantJSON: `{"id":1}`},
		{method: "GET", path: "/subjects/d3/versions/1/schema", status: 200, wantText: `{"properties": {"a": {"type": "string", "required": true}}}`},
		{name: "Avro", method: "POST", path: "/subjects/avro/versions", body: `{"schema": "{\"type\": \"record\", \"name\": \"r\", \"fields\": [{\"name\": \"f\", \"type\": \"string\"}]}"}`, status: 200, wantJSON: `{"id":2}`},
		{name: "Avro, keys reordered", method: "POST", path: "/subjects/avro/versions", body: `{"schema": "{\"name\": \"r\", \"type\": \"record\", \"fields\": [{\"type\": \"string\", \"name\": \"f\"}]}"}`, status: 200, wantJSON: `{"id":2}`},
		{name: "Avro type omitted in answers", method: "GET", path: "/schemas/ids/2", status: 200, wantJSON: `{"schema":"{\"type\": \"record\", \"name\": \"r\", \"fields\": [{\"name\": \"f\", \"type\": \"string\"}]}"}`},
		{name: "Avro with a default differs", method: "POST", path: "/subjects/avro2/versions", body: `{"schema": "{\"type\": \"record\", \"name\": \"r\", \"fields\": [{\"name\": \"f\", \"type\": \"string\", \"default\": \"x\"}]}"}`, status: 200, wantJSON: `{"id":3}`},
		{name: "Avro reference", method: "POST", path: "/subjects/ref/versions", body: `{"schema": "{\"type\":\"record\",\"name\":\"outer\",\"fields\":[{\"name\":\"inner\",\"type\":\"r\"}]}", "references": [{"name":"r","subject":"avro","version":1}]}`, status: 200, wantJSON: `{"id":4}`},
		{method: "GET", path: "/subjects/avro/versions/1/referencedby", status: 200, wantJSON: `[4]`},
		{name: "referenced version cannot be deleted", method: "DELETE", path: "/subjects/avro/versions/1", status: 422, code: 42206},
	})
}

func TestDeleteRules(t *testing.T) {
	in := newInstance(t, nil)
	in.register(t, "del", schemaBody("JSON", jsonSchema("a")))
	in.register(t, "del", schemaBody("JSON", jsonSchema("a", "b")))
	in.run(t, []step{
		{name: "hard delete of a live subject", method: "DELETE", path: "/subjects/del?permanent=true", status: 404, code: 40405},
		{name: "hard delete of a live version", method: "DELETE", path: "/subjects/del/versions/2?permanent=true", status: 404, code: 40407},
		{name: "soft delete version 2", method: "DELETE", path: "/subjects/del/versions/2", status: 200, wantJSON: `2`},
		{name: "soft delete version 2 again", method: "DELETE", path: "/subjects/del/versions/2", status: 404, code: 40406},
		{method: "GET", path: "/subjects/del/versions", status: 200, wantJSON: `[1]`},
		{method: "GET", path: "/subjects/del/versions?deleted=true", status: 200, wantJSON: `[1,2]`},
		{method: "GET", path: "/subjects/del/versions?deletedOnly=true", status: 200, wantJSON: `[2]`},
		{method: "GET", path: "/subjects/del/versions/2", status: 404, code: 40402},
		{method: "GET", path: "/subjects/del/versions/2?deleted=true", status: 200, contains: `"deleted":true`},
		{method: "GET", path: "/subjects/del/versions/latest", status: 200, contains: `"version":1`},
		{name: "soft-deleted schema still served by id", method: "GET", path: "/schemas/ids/2", status: 200, contains: `"schema"`},
		{method: "GET", path: "/schemas/ids/2/versions", status: 200, wantJSON: `[]`},
		{method: "GET", path: "/schemas/ids/2/versions?deleted=true", status: 200, wantJSON: `[{"subject":"del","version":2}]`},
		{name: "hard delete version 2", method: "DELETE", path: "/subjects/del/versions/2?permanent=true", status: 200, wantJSON: `2`},
		{method: "GET", path: "/schemas/ids/2", status: 404, code: 40403},
		{method: "GET", path: "/subjects/del/versions/2?deleted=true", status: 404, code: 40402},
		{name: "soft delete subject", method: "DELETE", path: "/subjects/del", status: 200, wantJSON: `[1]`},
		{name: "soft delete subject again", method: "DELETE", path: "/subjects/del", status: 404, code: 40404},
		{method: "GET", path: "/subjects", status: 200, wantJSON: `[]`},
		{method: "GET", path: "/subjects?deleted=true", status: 200, wantJSON: `["del"]`},
		{method: "GET", path: "/subjects?deletedOnly=true", status: 200, wantJSON: `["del"]`},
		{method: "GET", path: "/subjects/del/versions", status: 404, code: 40401},
		{method: "GET", path: "/subjects/del/versions/1", status: 404, code: 40401},
		{method: "GET", path: "/subjects/del/versions/1?deleted=true", status: 200, contains: `"deleted":true`},
		{name: "lookup ignores soft-deleted", method: "POST", path: "/subjects/del", body: schemaBody("JSON", jsonSchema("a")), status: 404, code: 40401},
		{name: "lookup with deleted", method: "POST", path: "/subjects/del?deleted=true", body: schemaBody("JSON", jsonSchema("a")), status: 200, contains: `"id":1`},
		{name: "hard delete subject", method: "DELETE", path: "/subjects/del?permanent=true", status: 200, wantJSON: `[1]`},
		{name: "gone", method: "DELETE", path: "/subjects/del", status: 404, code: 40401},
		{method: "GET", path: "/subjects?deleted=true", status: 200, wantJSON: `[]`},
		{method: "GET", path: "/schemas/ids/1", status: 404, code: 40403},
		{name: "ids are not reused", method: "POST", path: "/subjects/new/versions", body: schemaBody("JSON", jsonSchema("c")), status: 200, wantJSON: `{"id":3}`},
		{name: "a hard-deleted schema gets a new id", method: "POST", path: "/subjects/new2/versions", body: schemaBody("JSON", jsonSchema("a")), status: 200, wantJSON: `{"id":4}`},
		{method: "DELETE", path: "/subjects/nope", status: 404, code: 40401},
		{method: "DELETE", path: "/subjects/nope/versions/1", status: 404, code: 40401},
		{method: "DELETE", path: "/subjects/new/versions/abc", status: 422, code: 42202},
		{method: "DELETE", path: "/subjects/new/versions/0", status: 422, code: 42202},
		{method: "DELETE", path: "/subjects/new/versions/9", status: 404, code: 40402},
		{method: "DELETE", path: "/subjects/new/versions/latest", status: 200, wantJSON: `1`},
		{name: "re-registering a soft-deleted schema makes a new version", method: "POST", path: "/subjects/new/versions", body: schemaBody("JSON", jsonSchema("c")), status: 200, wantJSON: `{"id":3}`},
		{method: "GET", path: "/subjects/new/versions", status: 200, wantJSON: `[2]`},
	})
}

func TestConfigAndMode(t *testing.T) {
	in := newInstance(t, nil)
	in.register(t, "m", schemaBody("JSON", jsonSchema("a")))
	in.run(t, []step{
		{method: "GET", path: "/config", status: 200, wantJSON: `{"compatibilityLevel":"BACKWARD"}`},
		{method: "PUT", path: "/config", body: `{"compatibility":"full"}`, status: 200, wantJSON: `{"compatibility":"FULL"}`},
		{method: "GET", path: "/config", status: 200, wantJSON: `{"compatibilityLevel":"FULL"}`},
		{method: "PUT", path: "/config", body: `{"compatibility":"SIDEWAYS"}`, status: 422, code: 42203},
		{method: "PUT", path: "/config", body: `{}`, status: 422, code: 42203},
		{method: "PUT", path: "/config", body: `nope`, status: 400, code: 400},
		{method: "GET", path: "/config/m", status: 404, code: 40408},
		{method: "GET", path: "/config/m?defaultToGlobal=true", status: 200, wantJSON: `{"compatibilityLevel":"FULL"}`},
		{method: "PUT", path: "/config/m", body: `{"compatibility":"NONE"}`, status: 200, wantJSON: `{"compatibility":"NONE"}`},
		{method: "PUT", path: "/config/unborn", body: `{"compatibilityLevel":"FORWARD"}`, status: 200, wantJSON: `{"compatibility":"FORWARD"}`},
		{method: "PUT", path: "/config/a%0Ab", body: `{"compatibility":"NONE"}`, status: 422, code: 42208},
		{method: "GET", path: "/config/m", status: 200, wantJSON: `{"compatibilityLevel":"NONE"}`},
		{method: "DELETE", path: "/config/m", status: 200, wantJSON: `{"compatibilityLevel":"NONE"}`},
		{method: "DELETE", path: "/config/m", status: 404, code: 40408},
		{method: "DELETE", path: "/config", status: 200, wantJSON: `{"compatibilityLevel":"FULL"}`},
		{method: "GET", path: "/config", status: 200, wantJSON: `{"compatibilityLevel":"BACKWARD"}`},

		{method: "GET", path: "/mode", status: 200, wantJSON: `{"mode":"READWRITE"}`},
		{method: "PUT", path: "/mode", body: `{"mode":"SOMETIMES"}`, status: 422, code: 42204},
		{method: "GET", path: "/mode/m", status: 404, code: 40409},
		{method: "GET", path: "/mode/m?defaultToGlobal=true", status: 200, wantJSON: `{"mode":"READWRITE"}`},
		{method: "DELETE", path: "/mode", status: 405, code: 405},
		{method: "PUT", path: "/mode", body: `{"mode":"READONLY"}`, status: 200, wantJSON: `{"mode":"READONLY"}`},
		{name: "register in READONLY", method: "POST", path: "/subjects/m/versions", body: schemaBody("JSON", jsonSchema("a", "b")), status: 422, code: 42205},
		{name: "delete in READONLY", method: "DELETE", path: "/subjects/m", status: 422, code: 42205},
		{name: "delete version in READONLY", method: "DELETE", path: "/subjects/m/versions/1", status: 422, code: 42205},
		{name: "reads in READONLY", method: "GET", path: "/subjects/m/versions/1", status: 200, contains: `"id":1`},
		{name: "lookup in READONLY", method: "POST", path: "/subjects/m", body: schemaBody("JSON", jsonSchema("a")), status: 200, contains: `"id":1`},
		{method: "PUT", path: "/mode/m", body: `{"mode":"READWRITE"}`, status: 200, wantJSON: `{"mode":"READWRITE"}`},
		{name: "subject mode overrides global", method: "POST", path: "/subjects/m/versions", body: schemaBody("JSON", jsonSchema("a", "b")), status: 200, wantJSON: `{"id":2}`},
		{method: "DELETE", path: "/mode/m", status: 200, wantJSON: `{"mode":"READWRITE"}`},
		{method: "DELETE", path: "/mode/m", status: 404, code: 40409},
		{method: "PUT", path: "/mode", body: `{"mode":"READWRITE"}`, status: 200},

		{name: "IMPORT needs an empty registry", method: "PUT", path: "/mode", body: `{"mode":"IMPORT"}`, status: 422, code: 42205},
		{name: "IMPORT forced", method: "PUT", path: "/mode?force=true", body: `{"mode":"IMPORT"}`, status: 200, wantJSON: `{"mode":"IMPORT"}`},
		{name: "no id in IMPORT", method: "POST", path: "/subjects/imp/versions", body: schemaBody("JSON", jsonSchema("x")), status: 422, code: 42205},
		{name: "import with id and version", method: "POST", path: "/subjects/imp/versions", body: `{"schemaType":"JSON","schema":"{\"type\":\"object\"}","id":100,"version":5}`, status: 200, wantJSON: `{"id":100}`},
		{name: "import again", method: "POST", path: "/subjects/imp/versions", body: `{"schemaType":"JSON","schema":"{\"type\":\"object\"}","id":100,"version":5}`, status: 200, wantJSON: `{"id":100}`},
		{name: "id used by another schema", method: "POST", path: "/subjects/imp2/versions", body: `{"schemaType":"JSON","schema":"{\"type\":\"string\"}","id":100}`, status: 422, code: 42205},
		{name: "version used by another schema", method: "POST", path: "/subjects/imp/versions", body: `{"schemaType":"JSON","schema":"{\"type\":\"string\"}","id":101,"version":5}`, status: 422, code: 42205},
		{name: "id out of range", method: "POST", path: "/subjects/imp/versions", body: `{"schemaType":"JSON","schema":"{\"type\":\"string\"}","id":2147483648}`, status: 422, code: 42205},
		{name: "same schema, another id", method: "POST", path: "/subjects/imp3/versions", body: `{"schemaType":"JSON","schema":"{\"type\":\"object\"}","id":7}`, status: 200, wantJSON: `{"id":7}`},
		{method: "GET", path: "/subjects/imp/versions", status: 200, wantJSON: `[5]`},
		{method: "GET", path: "/subjects/imp/versions/5", status: 200, contains: `"id":100`},
		{method: "PUT", path: "/mode", body: `{"mode":"READWRITE"}`, status: 200},
		{name: "ids continue after the highest imported", method: "POST", path: "/subjects/after/versions", body: schemaBody("JSON", jsonSchema("new")), status: 200, wantJSON: `{"id":101}`},
		{name: "identical text reuses the lowest id", method: "POST", path: "/subjects/after2/versions", body: schemaBody("JSON", `{"type":"object"}`), status: 200, wantJSON: `{"id":7}`},
	})
}

func TestCompatibility(t *testing.T) {
	in := newInstance(t, nil)
	in.register(t, "c", schemaBody("JSON", jsonSchema("a", "b")))
	in.run(t, []step{
		{name: "incompatible registration", method: "POST", path: "/subjects/c/versions", body: schemaBody("JSON", jsonSchema("a")), status: 409, code: 409, contains: "FIELD_REMOVED"},
		{method: "POST", path: "/compatibility/subjects/c/versions/latest", body: schemaBody("JSON", jsonSchema("a")), status: 200, wantJSON: `{"is_compatible":false}`},
		{method: "POST", path: "/compatibility/subjects/c/versions/1?verbose=true", body: schemaBody("JSON", jsonSchema("a")), status: 200, contains: `FIELD_REMOVED`},
		{method: "POST", path: "/compatibility/subjects/c/versions/latest", body: schemaBody("JSON", jsonSchema("a", "b", "c")), status: 200, wantJSON: `{"is_compatible":true}`},
		{method: "POST", path: "/compatibility/subjects/c/versions/latest?verbose=true", body: schemaBody("JSON", jsonSchema("a", "b", "c")), status: 200, wantJSON: `{"is_compatible":true,"messages":[]}`},
		{name: "other type", method: "POST", path: "/compatibility/subjects/c/versions/latest?verbose=true", body: `{"schema":"\"string\""}`, status: 200, contains: `"is_compatible":false`},
		{name: "no subject: compatible", method: "POST", path: "/compatibility/subjects/nope/versions/latest", body: schemaBody("JSON", jsonSchema("a")), status: 200, wantJSON: `{"is_compatible":true}`},
		{name: "no subject, all versions", method: "POST", path: "/compatibility/subjects/nope/versions", body: schemaBody("JSON", jsonSchema("a")), status: 200, wantJSON: `{"is_compatible":true}`},
		{method: "POST", path: "/compatibility/subjects/nope/versions/1", body: schemaBody("JSON", jsonSchema("a")), status: 404, code: 40401},
		{method: "POST", path: "/compatibility/subjects/c/versions/7", body: schemaBody("JSON", jsonSchema("a")), status: 404, code: 40402},
		{method: "POST", path: "/compatibility/subjects/c/versions/0", body: schemaBody("JSON", jsonSchema("a")), status: 422, code: 42202},
		{method: "POST", path: "/compatibility/subjects/c/versions/latest", body: schemaBody("JSON", `{"type": 1}`), status: 422, code: 42201},
		{name: "compatible registration", method: "POST", path: "/subjects/c/versions", body: schemaBody("JSON", jsonSchema("a", "b", "c")), status: 200, wantJSON: `{"id":2}`},
		{method: "PUT", path: "/config/c", body: `{"compatibility":"NONE"}`, status: 200},
		{name: "NONE accepts anything", method: "POST", path: "/subjects/c/versions", body: schemaBody("JSON", jsonSchema("c", "d")), status: 200, wantJSON: `{"id":3}`},
		{method: "PUT", path: "/config/c", body: `{"compatibility":"BACKWARD"}`, status: 200},
		{name: "BACKWARD checks the latest", method: "POST", path: "/compatibility/subjects/c/versions", body: schemaBody("JSON", jsonSchema("c", "d", "e")), status: 200, wantJSON: `{"is_compatible":true}`},
		{method: "PUT", path: "/config/c", body: `{"compatibility":"BACKWARD_TRANSITIVE"}`, status: 200},
		{name: "transitive checks all", method: "POST", path: "/compatibility/subjects/c/versions", body: schemaBody("JSON", jsonSchema("c", "d", "e")), status: 200, wantJSON: `{"is_compatible":false}`},
		{name: "latest only, whatever the level", method: "POST", path: "/compatibility/subjects/c/versions/latest", body: schemaBody("JSON", jsonSchema("c", "d", "e")), status: 200, wantJSON: `{"is_compatible":true}`},
		{name: "transitive registration", method: "POST", path: "/subjects/c/versions", body: schemaBody("JSON", jsonSchema("c", "d", "e")), status: 409, code: 409},
	})
}

// tokenOnly admits the writes that carry token, from any address.
func tokenOnly(token string) func(*http.Request) error {
	return httpauth.New(httpauth.Config{Token: token, What: "registry writes", TokenKey: "registry.write_token"}).Check
}

// TestWriteAuthorize: every mutating request asks Config.Authorize, which
// refuses with 403 and error_code 40301; reads, lookups and compatibility
// checks do not.
func TestWriteAuthorize(t *testing.T) {
	in := newInstance(t, nil, func(c *Config) { c.Authorize = tokenOnly("s3cret") })
	body := schemaBody("JSON", jsonSchema("a"))
	auth := func(v string) http.Header { return http.Header{"Authorization": {v}} }
	in.run(t, []step{
		{name: "no token", method: "POST", path: "/subjects/t/versions", body: body, status: 403, code: 40301, contains: "registry.write_token"},
		{name: "wrong token", method: "POST", path: "/subjects/t/versions", body: body, header: auth("Bearer nope"), status: 403, code: 40301},
		{name: "basic auth", method: "POST", path: "/subjects/t/versions", body: body, header: auth("Basic czNjcmV0"), status: 403, code: 40301},
		{name: "token", method: "POST", path: "/subjects/t/versions", body: body, header: auth("Bearer s3cret"), status: 200, wantJSON: `{"id":1}`},
		{name: "delete without token", method: "DELETE", path: "/subjects/t", status: 403, code: 40301},
		{name: "version delete without token", method: "DELETE", path: "/subjects/t/versions/1", status: 403, code: 40301},
		{name: "config without token", method: "PUT", path: "/config", body: `{"compatibility":"NONE"}`, status: 403, code: 40301},
		{name: "config delete without token", method: "DELETE", path: "/config/t", status: 403, code: 40301},
		{name: "mode without token", method: "PUT", path: "/mode", body: `{"mode":"READONLY"}`, status: 403, code: 40301},
		{name: "reads need none", method: "GET", path: "/subjects/t/versions/1", status: 200},
		{name: "lookups need none", method: "POST", path: "/subjects/t", body: body, status: 200},
		{name: "compatibility checks need none", method: "POST", path: "/compatibility/subjects/t/versions/latest", body: body, status: 200},
		{name: "an unknown route is 404 before any check", method: "DELETE", path: "/nowhere/x/y", status: 404},
	})
}

func TestForwardToLeader(t *testing.T) {
	topic := newMemTopic()
	leader := newInstance(t, topic, func(c *Config) { c.Authorize = tokenOnly("tok"); c.WriteToken = "tok" })
	follower := newInstance(t, topic, func(c *Config) { c.Authorize = tokenOnly("tok"); c.WriteToken = "tok" })
	auth := http.Header{"Authorization": {"Bearer tok"}}
	follower.run(t, []step{
		{name: "register through the follower", method: "POST", path: "/subjects/f%2Fg/versions", body: schemaBody("JSON", jsonSchema("a")), header: auth, status: 200, wantJSON: `{"id":1}`},
		{name: "read on the follower", method: "GET", path: "/subjects/f%2Fg/versions/1", status: 200, contains: `"subject":"f/g"`},
		{name: "config through the follower", method: "PUT", path: "/config/f%2Fg?x=1", body: `{"compatibility":"FULL"}`, header: auth, status: 200, wantJSON: `{"compatibility":"FULL"}`},
		{name: "errors come back as they are", method: "DELETE", path: "/subjects/f%2Fg/versions/1?permanent=true", header: auth, status: 404, code: 40407},
		{name: "authorized before forwarding", method: "DELETE", path: "/subjects/f%2Fg", status: 403, code: 40301},
	})
	leader.run(t, []step{
		{method: "GET", path: "/subjects", status: 200, wantJSON: `["f/g"]`},
		{method: "GET", path: "/config/f%2Fg", status: 200, wantJSON: `{"compatibilityLevel":"FULL"}`},
	})

	// Leadership moves to the follower: the old leader forwards now.
	topic.setLeader(follower.log)
	leader.run(t, []step{
		{name: "register through the old leader", method: "POST", path: "/subjects/h/versions", body: schemaBody("JSON", jsonSchema("b")), header: auth, status: 200, wantJSON: `{"id":2}`},
	})

	// The leader is unreachable, or unknown.
	follower.srv.Close()
	leader.run(t, []step{
		{name: "leader unreachable", method: "POST", path: "/subjects/h/versions", body: schemaBody("JSON", jsonSchema("c")), header: auth, status: 500, code: 50003},
		{name: "reads still work", method: "GET", path: "/subjects/h/versions/1", status: 200},
	})
	topic.setLeader(nil)
	leader.run(t, []step{
		{name: "leader unknown", method: "POST", path: "/subjects/h/versions", body: schemaBody("JSON", jsonSchema("c")), header: auth, status: 500, code: 50004},
	})
}

// TestForwardAdmittedByNetwork: a follower that admits a client by its
// network (no token) forwards the write with the write token, which the
// leader — admitting no network — accepts; without a write token the
// leader refuses it.
func TestForwardAdmittedByNetwork(t *testing.T) {
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	byNetwork := httpauth.New(httpauth.Config{Networks: loopback, Token: "tok"}).Check
	topic := newMemTopic()
	leader := newInstance(t, topic, func(c *Config) { c.Authorize = tokenOnly("tok") })
	withToken := newInstance(t, topic, func(c *Config) { c.Authorize = byNetwork; c.WriteToken = "tok" })
	without := newInstance(t, topic, func(c *Config) { c.Authorize = byNetwork })
	topic.setLeader(leader.log)
	withToken.run(t, []step{
		{name: "forwarded with the token", method: "POST", path: "/subjects/n/versions", body: schemaBody("JSON", jsonSchema("a")), status: 200, wantJSON: `{"id":1}`},
	})
	without.run(t, []step{
		{name: "forwarded without a token", method: "POST", path: "/subjects/m/versions", body: schemaBody("JSON", jsonSchema("a")), status: 403, code: 40301},
	})
}

func TestEventPlatformURI(t *testing.T) {
	in := newInstance(t, nil)
	v1 := `{"title":"analytics/button_click","type":"object","properties":{"$schema":{"type":"string"}}}`
	body := func(text, version string) string {
		b, _ := json.Marshal(map[string]any{"schema": text, "schemaType": "JSON", "metadata": map[string]any{"properties": map[string]string{"version": version}}})
		return string(b)
	}
	in.run(t, []step{
		{method: "POST", path: "/subjects/analytics%2Fbutton_click/versions", body: body(v1, "1.0.0"), status: 200, wantJSON: `{"id":1}`},
		{name: "same text, other version: new id", method: "POST", path: "/subjects/analytics%2Fbutton_click/versions", body: body(v1, "1.1.0"), status: 200, wantJSON: `{"id":2}`},
		{method: "GET", path: "/analytics/button_click/1.0.0", status: 200, wantText: v1},
		{method: "GET", path: "/analytics/button_click/1.1.0.json", status: 200, wantText: v1},
		{method: "GET", path: "/subjects/analytics%2Fbutton_click/versions/2", status: 200, contains: `"metadata":{"properties":{"version":"1.1.0"}}`},
		{method: "GET", path: "/analytics/button_click/2.0.0", status: 404, code: 40403},
		{method: "GET", path: "/analytics/nothing/1.0.0", status: 404, code: 40403},
		{method: "POST", path: "/analytics/button_click/1.0.0", status: 404, code: 404},
		{method: "DELETE", path: "/subjects/analytics%2Fbutton_click/versions/1", status: 200},
		{name: "soft-deleted versions are still served", method: "GET", path: "/analytics/button_click/1.0.0", status: 200, wantText: v1},
	})
}

func TestContentTypes(t *testing.T) {
	in := newInstance(t, nil)
	for _, tt := range []struct{ accept, want string }{
		{"", "application/vnd.schemaregistry.v1+json"},
		{"application/json", "application/json"},
		{"application/vnd.schemaregistry+json; q=0.9, */*", "application/vnd.schemaregistry+json"},
		{"text/html", "application/vnd.schemaregistry.v1+json"},
	} {
		var h http.Header
		if tt.accept != "" {
			h = http.Header{"Accept": {tt.accept}}
		}
		_, _, got := in.do(t, "GET", "/subjects", "", h)
		if ct := got.Get("Content-Type"); ct != tt.want {
			t.Errorf("Accept %q: Content-Type %q, want %q", tt.accept, ct, tt.want)
		}
	}
	for _, ct := range []string{"application/json", "application/vnd.schemaregistry+json", "application/vnd.schemaregistry.v1+json", "application/octet-stream"} {
		status, b, _ := in.do(t, "POST", "/subjects/ct/versions", schemaBody("JSON", jsonSchema("a")), http.Header{"Content-Type": {ct}})
		if status != 200 {
			t.Errorf("Content-Type %s: %d %s", ct, status, b)
		}
	}
}

func TestNotReady(t *testing.T) {
	l := newMemTopic().view() // never Run: never ready
	r, err := New(Config{Log: l, Check: stubCheck, Timeout: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder(t, r, "GET", "/subjects", "")
	var ae apiError
	if rec.Code != 500 || json.Unmarshal(rec.Body.Bytes(), &ae) != nil || ae.Code != codeTimeout {
		t.Errorf("not ready: %d %s, want 500 with error_code 50002", rec.Code, rec.Body)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := r.ImportDir(ctx, t.TempDir()); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ImportDir before the replay: %v, want the ctx's error", err)
	}
}

// TestReplay checks that the state is a function of the records: a new
// instance replaying the log, or the log after compaction, answers alike
// and never reuses an id.
func TestReplay(t *testing.T) {
	topic := newMemTopic()
	in := newInstance(t, topic, func(c *Config) { c.DefaultLevel = "NONE" })
	for i := range 5 {
		in.register(t, fmt.Sprintf("s%d", i%2), schemaBody("JSON", jsonSchema(fmt.Sprint("p", i), "common")))
	}
	in.run(t, []step{
		{method: "PUT", path: "/config/s0", body: `{"compatibility":"NONE"}`, status: 200},
		{method: "PUT", path: "/mode/s1", body: `{"mode":"READONLY"}`, status: 200},
		{method: "DELETE", path: "/subjects/s0/versions/3", status: 200},
		{method: "DELETE", path: "/subjects/s0/versions/3?permanent=true", status: 200},
		{method: "DELETE", path: "/subjects/s0/versions/2", status: 200},
	})
	snapshot := func(in *instance) string {
		var b strings.Builder
		for _, p := range []string{"/schemas?deleted=true", "/subjects?deleted=true", "/config/s0", "/mode/s1", "/schemas/ids/5", "/schemas/ids/3"} {
			_, body, _ := in.do(t, "GET", p, "", nil)
			b.Write(body)
		}
		return b.String()
	}
	want := snapshot(in)

	replayed := newInstance(t, topic)
	if got := snapshot(replayed); got != want {
		t.Errorf("replayed state differs:\n%s\nwant\n%s", got, want)
	}

	// Compaction keeps the last record of each key, tombstones dropped.
	records := topic.snapshot()
	last := map[string]int{}
	for i, r := range records {
		last[string(r.Key)] = i
	}
	compacted := newMemTopic()
	for i, r := range records {
		if last[string(r.Key)] == i && r.Value != nil {
			compacted.records = append(compacted.records, r)
		}
	}
	if _, ok := last[keyMaxID]; !ok {
		t.Fatal("no maxid record before the permanent delete")
	}
	after := newInstance(t, compacted)
	if got := snapshot(after); got != want {
		t.Errorf("compacted state differs:\n%s\nwant\n%s", got, want)
	}
	// Id 5 was the highest; hard-deleting it must not free it.
	after.run(t, []step{
		{method: "DELETE", path: "/subjects/s0/versions/3?permanent=true", status: 404, code: 40402},
		{method: "DELETE", path: "/subjects/s0/versions/2?permanent=true", status: 200},
		{method: "POST", path: "/subjects/s9/versions", body: schemaBody("JSON", jsonSchema("fresh")), status: 200, wantJSON: `{"id":6}`},
	})
}

func TestApplyIgnoresBadRecords(t *testing.T) {
	st := newState()
	for _, rec := range []struct{ key, value string }{
		{"schema/x", `{}`},
		{"schema/x/abc", `{}`},
		{"schema/x/1", `not json`},
		{"schema/x/1", `{"subject":"x","version":1,"id":0}`},
		{"schema/x/1", `{"subject":"y","version":1,"id":1}`},
		{"config/x", `{"compatibilityLevel":"SIDEWAYS"}`},
		{"mode/x", `{"mode":"SOMETIMES"}`},
		{"maxid", `nope`},
	} {
		if err := st.apply(kafkaRecord(rec.key, rec.value)); err == nil {
			t.Errorf("apply %s=%s: no error", rec.key, rec.value)
		}
	}
	if err := st.apply(kafkaRecord("future/thing", `{}`)); err != nil {
		t.Errorf("unknown record kind: %v", err)
	}
	if len(st.subjects) != 0 || len(st.ids) != 0 || len(st.config) != 0 || len(st.mode) != 0 {
		t.Errorf("bad records changed the state: %+v", st)
	}
}
