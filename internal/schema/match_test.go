package schema

import "testing"

func TestSchemaMatches(t *testing.T) {
	cases := []struct {
		value, name string
		want        bool
	}{
		{`{"schema":"Foo"}`, "Foo", true},
		{`{"schema":"Foo"}`, "foo", false},
		{`{"schema":"FooBar"}`, "Foo", false},
		{`{"event":{"schema":"Foo"}}`, "Foo", false},
		{`{"schema":1}`, "1", false},
		{`{"$schema":"/analytics/button_click/1.0.0"}`, "button_click", true},
		{`{"$schema":"/analytics/button_click/1.0.0"}`, "analytics", true},
		{`{"$schema":"/analytics/button_click/1.0.0"}`, "analytics/button_click", true},
		{`{"$schema":"/analytics/button_click/1.0.0"}`, "/analytics/button_click", true},
		{`{"$schema":"/analytics/button_click/1.0.0"}`, "button", false},
		{`{"$schema":"/analytics/button_click/1.0.0"}`, "click", false},
		{`{"$schema":"https://schema.wikimedia.org/repositories/secondary/jsonschema/analytics/button_click/1.0.0.json"}`, "button_click", true},
		{`{"$schema":"../../etc/passwd"}`, "etc", false},
		{`{"schema":"Bar","$schema":"/Foo/1.0.0"}`, "Foo", true},
		{`not json`, "Foo", false},
		{`["schema","Foo"]`, "Foo", false},
	}
	for _, c := range cases {
		if got := EventMatches([]byte(c.value), c.name); got != c.want {
			t.Errorf("EventMatches(%s, %q) = %v, want %v", c.value, c.name, got, c.want)
		}
	}
}
