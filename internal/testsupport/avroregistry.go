package testsupport

import (
	"net/http/httptest"
	"testing"
)

// AvroRegistry starts an in-process schema registry (FakeRegistry) holding
// the Avro schemas of subjects (subject → schema) and returns its URL.
func AvroRegistry(t testing.TB, subjects map[string]string) string {
	t.Helper()
	url, cl := FakeRegistry(t)
	for subject, schema := range subjects {
		RegisterAvro(t, cl, subject, schema)
	}
	return url
}

// UnreachableURL returns the URL of an HTTP server that has shut down, as
// a schema registry that is down: requests to it fail to connect.
func UnreachableURL() string {
	srv := httptest.NewServer(nil)
	srv.Close()
	return srv.URL
}
