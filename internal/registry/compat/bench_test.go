package compat

import (
	"fmt"
	"strings"
	"testing"
)

// benchJSON is an EventLogging-style event schema: draft 3, a dozen
// properties, a nested object and an enum. %s is where a version adds
// properties.
const benchJSON = `{
  "$schema": "http://json-schema.org/draft-03/schema#",
  "title": "NavigationTiming",
  "description": "Page load timings",
  "properties": {
    "pageId": {"type": "integer", "required": true, "minimum": 0},
    "namespaceId": {"type": "integer", "required": true},
    "revId": {"type": "integer"},
    "action": {"type": "string", "required": true, "enum": ["view", "edit", "submit", "history"]},
    "isAnon": {"type": "boolean", "required": true},
    "mobileMode": {"type": "string", "enum": ["stable", "beta"]},
    "originCountry": {"type": "string", "maxLength": 2},
    "dnsLookup": {"type": "integer", "minimum": 0},
    "connecting": {"type": "integer", "minimum": 0},
    "responseStart": {"type": "number", "minimum": 0},
    "loadEventEnd": {"type": "number", "minimum": 0},
    "userAgent": {"type": "object", "properties": {
      "browser_family": {"type": "string"},
      "os_family": {"type": "string"},
      "is_bot": {"type": "boolean"}
    }}%s
  }
}`

const benchAvro = `{
  "type": "record", "name": "NavigationTiming", "namespace": "org.wikimedia.events",
  "fields": [
    {"name": "pageId", "type": "long"},
    {"name": "namespaceId", "type": "int"},
    {"name": "revId", "type": ["null", "long"], "default": null},
    {"name": "action", "type": {"type": "enum", "name": "Action", "symbols": ["view", "edit", "submit", "history"]}},
    {"name": "isAnon", "type": "boolean"},
    {"name": "mobileMode", "type": ["null", "string"], "default": null},
    {"name": "originCountry", "type": "string", "default": ""},
    {"name": "dnsLookup", "type": "int"},
    {"name": "connecting", "type": "int"},
    {"name": "responseStart", "type": "double"},
    {"name": "loadEventEnd", "type": "double"},
    {"name": "userAgent", "type": {"type": "record", "name": "UserAgent", "fields": [
      {"name": "browser_family", "type": "string"},
      {"name": "os_family", "type": "string"},
      {"name": "is_bot", "type": "boolean"}
    ]}}%s
  ]
}`

func version(tmpl, extra string) string { return strings.Replace(tmpl, "%s", extra, 1) }

func benchCheck(b *testing.B, typ string, level Level, candidate string, existing []string, wantViolations int) {
	b.Helper()
	vs, err := Check(typ, level, candidate, existing)
	if err != nil || len(vs) != wantViolations {
		b.Fatalf("Check = %v, %v; want %d violations", vs, err, wantViolations)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Check(typ, level, candidate, existing); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckJSON: a new version adds an optional property (compatible
// at BACKWARD), changes three things (3 violations at BACKWARD), and
// follows ten versions at BACKWARD_TRANSITIVE.
func BenchmarkCheckJSON(b *testing.B) {
	old := version(benchJSON, "")
	added := version(benchJSON, `, "referrer": {"type": "string"}`)
	broken := strings.NewReplacer(`"revId": {"type": "integer"}`, `"revId": {"type": "string"}`,
		`"maxLength": 2`, `"maxLength": 1`, `, "history"]`, `]`).Replace(old)
	b.Run("compatible", func(b *testing.B) { benchCheck(b, TypeJSON, Backward, added, []string{old}, 0) })
	b.Run("3-violations", func(b *testing.B) { benchCheck(b, TypeJSON, Backward, broken, []string{old}, 3) })
	b.Run("backward-transitive-10", func(b *testing.B) {
		var history []string
		for i := range 10 {
			history = append(history, strings.Replace(old, "Page load timings", fmt.Sprintf("Page load timings, v%d", i+1), 1))
		}
		benchCheck(b, TypeJSON, BackwardTransitive, added, history, 0)
	})
}

// BenchmarkCheckAvro: the same situations for Avro, the last one at
// FULL_TRANSITIVE.
func BenchmarkCheckAvro(b *testing.B) {
	old := version(benchAvro, "")
	added := version(benchAvro, `, {"name": "referrer", "type": "string", "default": ""}`)
	broken := strings.NewReplacer(`{"name": "dnsLookup", "type": "int"}`, `{"name": "dnsLookup", "type": "string"}`,
		`{"name": "responseStart", "type": "double"}`, `{"name": "responseStart", "type": "float"}`,
		`, "history"]`, `]`).Replace(old)
	b.Run("compatible", func(b *testing.B) { benchCheck(b, TypeAvro, Backward, added, []string{old}, 0) })
	b.Run("3-violations", func(b *testing.B) { benchCheck(b, TypeAvro, Backward, broken, []string{old}, 3) })
	b.Run("full-transitive-10", func(b *testing.B) {
		var history []string
		for i := range 10 {
			history = append(history, version(benchAvro, `, {"name": "x`+string(rune('a'+i))+`", "type": "int", "default": 0}`))
		}
		benchCheck(b, TypeAvro, FullTransitive, added, history, 0)
	})
}
