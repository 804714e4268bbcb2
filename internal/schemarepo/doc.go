// Package schemarepo works on a schema repository on disk — legacy schemas
// as <Name>/<revision>.json|yaml and Event Platform schemas as
// jsonschema/<title>/<semver>.yaml — for the `eventlogging schema` commands:
// listing versions in order, linting, and line diffs.
package schemarepo
