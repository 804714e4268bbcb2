package schema

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// compileFile compiles one testdata schema.
func compileFile(t testing.TB, rel string) *Schema {
	t.Helper()
	raw, err := NewDirSource(schemaDir).Fetch(t.Context(), mustParseID(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := ParseDocument(raw)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Compile(mustParseID(t, rel), doc)
	if err != nil {
		t.Fatalf("Compile(%s): %v", rel, err)
	}
	return s
}

func mustParseID(t testing.TB, p string) ID {
	t.Helper()
	id, ok := ParseIDFromPath(p)
	if !ok {
		t.Fatalf("ParseIDFromPath(%q) failed", p)
	}
	return id
}

// decodeEvent decodes like the processor does: encoding/json with UseNumber.
func decodeEvent(t testing.TB, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

// want is one expected violation: the exact pointer and a part of the reason.
type want struct {
	pointer, reason string
}

const pageView = `{
	"dt": "2024-05-01T12:34:56Z",
	"url": "https://en.wikipedia.org/wiki/Go",
	"action": "view",
	"namespace": 0,
	"articleId": 12345,
	"loadTime": 123.4,
	"isMobile": false,
	"meta": {"domain": "en.wikipedia.org", "stream": "pageview"},
	"context": {"skin": "vector"}
}`

// Valid events of the other testdata schemas.
const (
	edit             = `{"version": 1, "action": "init", "editor": "wikitext", "pageId": 5, "platform": "phone", "user": {"id": 0}, "extra": [1, {"a": null}]}`
	buttonClick      = `{"button": "save-1", "count": 3, "position": {"x": 1, "y": 2}, "tags": ["a"]}`
	navigationTiming = `{"wiki": "enwiki", "pageId": 1, "responseStart": 12, "loadEventEnd": null, "mediaWikiVersion": 1.27, "host": "en.wikipedia.org", "ip": "127.0.0.1", "connection": "4g", "sample": "12", "stamps": [1.5, "a"], "userId": 7, "isAnon": false}`
)

// withPageView returns the pageView event with the given top-level
// properties replaced (null in patch deletes).
func withPageView(t testing.TB, patch string) string {
	t.Helper()
	ev := decodeEvent(t, pageView).(map[string]any)
	for k, v := range decodeEvent(t, patch).(map[string]any) {
		if v == nil {
			delete(ev, k)
		} else {
			ev[k] = v
		}
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		event  string
		want   []want // nil: valid
	}{
		// Draft 2020-12.
		{name: "valid", schema: "PageView/3.json", event: pageView},
		{name: "minimal", schema: "PageView/3.json", event: `{"dt": "2024-05-01T00:00:00+02:00", "action": "history", "articleId": 1, "meta": {"domain": "x"}}`},
		{name: "integer 1.0 is an integer", schema: "PageView/3.json", event: withPageView(t, `{"articleId": 1.0}`)},
		{name: "integer 1e3 is an integer", schema: "PageView/3.json", event: withPageView(t, `{"articleId": 1e3}`)},
		{name: "number accepts 1e3 and integers", schema: "PageView/3.json", event: withPageView(t, `{"loadTime": 1e3, "namespace": 4}`)},
		{name: "integer rejects 1.5", schema: "PageView/3.json", event: withPageView(t, `{"articleId": 1.5}`),
			want: []want{{"/articleId", "got number, want integer"}}},
		{name: "integer rejects 1.5e0", schema: "PageView/3.json", event: withPageView(t, `{"articleId": 1.5e0}`),
			want: []want{{"/articleId", "got number, want integer"}}},
		{name: "wrong type", schema: "PageView/3.json", event: withPageView(t, `{"articleId": "12345"}`),
			want: []want{{"/articleId", "got string, want integer"}}},
		{name: "number rejects string", schema: "PageView/3.json", event: withPageView(t, `{"loadTime": "fast"}`),
			want: []want{{"/loadTime", "got string, want number"}}},
		{name: "missing required, all reported", schema: "PageView/3.json", event: `{"url": "https://x.org/"}`,
			want: []want{
				{"/action", "required property missing"},
				{"/articleId", "required property missing"},
				{"/dt", "required property missing"},
				{"/meta", "required property missing"},
			}},
		{name: "enum", schema: "PageView/3.json", event: withPageView(t, `{"action": "edit"}`),
			want: []want{{"/action", "value must be one of 'view', 'preview', 'history'"}}},
		{name: "nested enum", schema: "PageView/3.json", event: withPageView(t, `{"meta": {"domain": "x", "stream": "other"}}`),
			want: []want{{"/meta/stream", "value must be one of"}}},
		{name: "extra root property", schema: "PageView/3.json", event: withPageView(t, `{"extra": 1}`),
			want: []want{{"/extra", "additional property not allowed"}}},
		{name: "extra nested property allowed in open object", schema: "PageView/3.json", event: withPageView(t, `{"context": {"skin": "minerva", "anything": [1, 2]}}`)},
		{name: "extra nested property rejected in closed object", schema: "PageView/3.json", event: withPageView(t, `{"meta": {"domain": "x", "extra": true}}`),
			want: []want{{"/meta/extra", "additional property not allowed"}}},
		{name: "nested required", schema: "PageView/3.json", event: withPageView(t, `{"meta": {"stream": "pageview"}}`),
			want: []want{{"/meta/domain", "required property missing"}}},
		{name: "format date-time asserted", schema: "PageView/3.json", event: withPageView(t, `{"dt": "2024-05-01 12:34"}`),
			want: []want{{"/dt", "is not valid date-time"}}},
		{name: "format date-time needs an offset", schema: "PageView/3.json", event: withPageView(t, `{"dt": "2024-05-01T12:34:56"}`),
			want: []want{{"/dt", "is not valid date-time"}}},
		{name: "format uri asserted", schema: "PageView/3.json", event: withPageView(t, `{"url": "/wiki/Go"}`),
			want: []want{{"/url", "is not valid uri"}}},
		{name: "$ref to $defs", schema: "PageView/3.json", event: withPageView(t, `{"namespace": -3}`),
			want: []want{{"/namespace", "minimum: got -3, want -2"}}},
		{name: "pointer escaping", schema: "PageView/3.json", event: withPageView(t, `{"context": {"a/b~c": 1}, "x/y": 1}`),
			want: []want{
				{"/context/a~1b~0c", "got number, want string"},
				{"/x~1y", "additional property not allowed"},
			}},
		{name: "every violation reported", schema: "PageView/3.json", event: `{"dt": "yesterday", "action": "edit", "articleId": "7", "meta": {"extra": 1}, "isMobile": "no", "z": null}`,
			want: []want{
				{"/action", "value must be one of"},
				{"/articleId", "got string, want integer"},
				{"/dt", "is not valid date-time"},
				{"/isMobile", "got string, want boolean"},
				{"/meta/domain", "required property missing"},
				{"/meta/extra", "additional property not allowed"},
				{"/z", "additional property not allowed"},
			}},
		{name: "root must be an object", schema: "PageView/3.json", event: `[1]`,
			want: []want{{"", "got array, want object"}}},

		// Draft 3, as EventLogging schemas are written.
		{name: "draft3 valid", schema: "Edit/1.json", event: edit},
		{name: "draft3 required false is optional, nested object open", schema: "Edit/1.json", event: `{"version": 1, "action": "abort", "editor": "visualeditor", "pageId": 5, "platform": "other", "timing": 1.5, "user": {"id": 3, "editCount": 10, "class": "", "other": "x"}}`},
		{name: "draft3 missing required, nested too", schema: "Edit/1.json", event: `{"version": 1, "action": "init", "editor": "wikitext", "platform": "phone", "user": {"editCount": 1}}`,
			want: []want{
				{"/pageId", "required property missing"},
				{"/user/id", "required property missing"},
			}},
		{name: "draft3 extra root property", schema: "Edit/1.json", event: `{"version": 1, "action": "init", "editor": "wikitext", "pageId": 5, "platform": "phone", "user": {"id": 1}, "wiki": "enwiki"}`,
			want: []want{{"/wiki", "additional property not allowed"}}},
		{name: "draft3 enum and type", schema: "Edit/1.json", event: `{"version": 2, "action": "init", "editor": "wikitext", "pageId": "5", "platform": "phone", "user": {"id": 1, "class": "user"}}`,
			want: []want{
				{"/pageId", "got string, want integer"},
				{"/user/class", "value must be one of"},
				{"/version", "value must be 1"},
			}},
		{name: "draft3 yaml valid", schema: "NavigationTiming/2.yaml", event: navigationTiming},
		{name: "draft3 yaml rewritten keywords", schema: "NavigationTiming/2.yaml", event: `{"pageId": 0, "responseStart": 1.5, "host": "bad_host!", "ip": "::1", "connection": true, "sample": "x", "stamps": [1, "a", 3], "userId": 101, "other": 1}`,
			want: []want{
				{"/connection", "value matches a disallowed schema"},
				{"/host", "is not valid hostname"},
				{"/ip", "is not valid ipv4"},
				{"/isAnon", "required property missing (\"userId\" is present)"},
				{"/other", "additional property not allowed"},
				{"/pageId", "exclusiveMinimum: got 0, want 0"},
				{"/responseStart", "got number, want integer"},
				{"/sample", "'x' does not match pattern '^[0-9]+$'"},
				{"/sample", "got string, want integer"},
				{"/stamps/2", "item not allowed"},
				{"/userId", "maximum: got 101, want 100"},
				{"/wiki", "required property missing"},
			}},

		// Draft 7.
		{name: "draft7 valid", schema: "ButtonClick/7.json", event: buttonClick},
		{name: "draft7 violations", schema: "ButtonClick/7.json", event: `{"button": "Save", "position": {"x": -1}, "tags": ["a", "b", "c", 4], "more": 1}`,
			want: []want{
				{"/button", "does not match pattern"},
				{"/more", "additional property not allowed"},
				{"/position/x", "minimum: got -1, want 0"},
				{"/position/y", "required property missing"},
				{"/tags", "maxItems: got 4, want 3"},
				{"/tags/3", "got number, want string"},
			}},
	}
	schemas := map[string]*Schema{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ok := schemas[tt.schema]
			if !ok {
				s = compileFile(t, tt.schema)
				schemas[tt.schema] = s
			}
			err := s.Validate(decodeEvent(t, tt.event))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate(%s) = %v, want valid", tt.event, err)
				}
				return
			}
			var verr *ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("Validate(%s) = %v (%T), want *ValidationError", tt.event, err, err)
			}
			if len(verr.Violations) != len(tt.want) {
				t.Fatalf("Validate(%s) gave %d violations, want %d:\n%v", tt.event, len(verr.Violations), len(tt.want), err)
			}
			for i, w := range tt.want {
				got := verr.Violations[i]
				if got.Pointer != w.pointer || !strings.Contains(got.Reason, w.reason) {
					t.Errorf("violation %d = %+v, want pointer %q and reason containing %q", i, got, w.pointer, w.reason)
				}
				if strings.Contains(got.Reason, "at '") || got.Reason != strings.TrimSpace(got.Reason) {
					t.Errorf("violation %d reason %q repeats the location or has stray space", i, got.Reason)
				}
			}
		})
	}
}

func TestValidationErrorString(t *testing.T) {
	e := &ValidationError{Violations: []Violation{
		{Pointer: "", Reason: "got array, want object"},
		{Pointer: "/articleId", Reason: "got string, want integer"},
		{Pointer: "/action", Reason: "required property missing"},
	}}
	want := "(root): got array, want object; /articleId: got string, want integer; /action: required property missing"
	if got := e.Error(); got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	b, err := json.Marshal(e.Violations[1])
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != `{"pointer":"/articleId","reason":"got string, want integer"}` {
		t.Errorf("JSON = %s", got)
	}
}

func TestSchemaAccessors(t *testing.T) {
	s := compileFile(t, "PageView/3.json")
	if got, want := s.ID(), (ID{Name: "PageView", Revision: 3}); got != want {
		t.Errorf("ID() = %v, want %v", got, want)
	}
	if got := s.Title(); got != "PageView" {
		t.Errorf("Title() = %q", got)
	}
	doc := s.Document()
	if doc["additionalProperties"] != false || doc["$schema"] != Draft2020 {
		t.Errorf("Document() is not the normalised document: %v", doc)
	}
	doc["additionalProperties"] = true
	delete(doc, "properties")
	if s.Document()["additionalProperties"] != false || s.Validate(decodeEvent(t, withPageView(t, `{"x": 1}`))) == nil {
		t.Error("modifying the Document() result changed the schema")
	}
}

func TestCompileInvalid(t *testing.T) {
	tests := []struct {
		file    string
		message string
	}{
		{"Broken/1.json", "/properties/x/type"},
		{"Remote/1.json", "external $ref is not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			id := mustParseID(t, tt.file)
			_, err := Compile(id, readDoc(t, tt.file))
			if !errors.Is(err, ErrInvalidSchema) {
				t.Fatalf("Compile = %v, want ErrInvalidSchema", err)
			}
			if !strings.Contains(err.Error(), tt.message) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q: want one line containing %q", err, tt.message)
			}
		})
	}
	t.Run("metaschema violations are a ValidationError", func(t *testing.T) {
		_, err := Compile(ID{Name: "X", Revision: 1}, mustJSON(t, `{"properties": {"a": {"minimum": "3"}}}`))
		var verr *ValidationError
		if !errors.As(err, &verr) || verr.Violations[0].Pointer != "/properties/a/minimum" {
			t.Errorf("Compile = %v, want a ValidationError at /properties/a/minimum", err)
		}
	})
	t.Run("remote $schema is not fetched", func(t *testing.T) {
		_, err := Compile(ID{Name: "X", Revision: 1}, mustJSON(t, `{"$schema": "https://schemas.example.org/meta.json", "type": "object"}`))
		if !errors.Is(err, ErrInvalidSchema) || !strings.Contains(err.Error(), "external $ref is not allowed") {
			t.Errorf("Compile = %v, want the loader's refusal", err)
		}
	})
	t.Run("malformed yaml", func(t *testing.T) {
		raw, err := NewDirSource(schemaDir).Fetch(t.Context(), ID{Name: "Malformed", Revision: 1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseDocument(raw); !errors.Is(err, ErrInvalidSchema) {
			t.Errorf("ParseDocument = %v, want ErrInvalidSchema", err)
		}
	})
}

// benchEvent is a realistic EventLogging event: eight fields, one nested
// object, an enum, formats and integers as json.Number.
const benchEvent = `{
	"dt": "2024-05-01T12:34:56Z",
	"url": "https://en.wikipedia.org/wiki/Go_(programming_language)",
	"action": "view",
	"namespace": 0,
	"articleId": 4811,
	"loadTime": 812.5,
	"isMobile": true,
	"meta": {"domain": "en.m.wikipedia.org", "stream": "pageview"}
}`

func BenchmarkValidate(b *testing.B) {
	benchValidate(b, "PageView/3.json", benchEvent)
}

// benchValidate validates a valid event against the schema of file.
func benchValidate(b *testing.B, file, event string) {
	benchValidateSchema(b, compileFile(b, file), event)
}

// benchValidateSchema validates a valid event against s.
func benchValidateSchema(b *testing.B, s *Schema, event string) {
	ev := decodeEvent(b, event)
	if err := s.Validate(ev); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Validate(ev); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidateDraft3 validates a six-field event against a draft-3
// EventLogging schema (no formats).
func BenchmarkValidateDraft3(b *testing.B) {
	benchValidate(b, "Edit/1.json", benchEventDraft3)
}

// benchEventDraft3 is the event of BenchmarkValidateDraft3.
const benchEventDraft3 = `{"version": 1, "action": "saveSuccess", "editor": "visualeditor", "pageId": 5123, "platform": "desktop", "user": {"id": 42, "editCount": 1200}}`

func BenchmarkValidateInvalid(b *testing.B) {
	s := compileFile(b, "PageView/3.json")
	ev := decodeEvent(b, `{"dt": "yesterday", "action": "edit", "articleId": "7", "meta": {"extra": 1}, "isMobile": "no", "z": null}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Validate(ev); err == nil {
			b.Fatal("valid")
		}
	}
}

// BenchmarkValidateLibrary is BenchmarkValidate and BenchmarkValidateDraft3
// without the fast path: every value through the jsonschema library, as
// before the fast path existed (the before/after in docs/performance.md).
func BenchmarkValidateLibrary(b *testing.B) {
	for _, c := range []struct{ name, file, event string }{
		{"PageView", "PageView/3.json", benchEvent},
		{"Draft3", "Edit/1.json", benchEventDraft3},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := *compileFile(b, c.file)
			s.fast = nil
			benchValidateSchema(b, &s, c.event)
		})
	}
}
