// Package schema resolves a schema id (name and revision) to a compiled JSON
// Schema validator, and validates events against it.
//
// Documents come from a [Source]: for now a folder of files ([DirSource],
// <dir>/<Name>/<revision>.json|.yaml|.yml), later the schema registry. A
// [Resolver] sits in front of the Source: it compiles each version once and
// keeps it, remembers unknown and invalid versions for a while (negative
// cache), bounds every fetch with a timeout and lets concurrent callers
// share one fetch.
//
// Before compiling, [Normalize] turns EventLogging's draft-3 schemas
// (per-property "required": true, type "any", …) into draft 2020-12 and
// applies the EventLogging defaults: a root with "properties" is an object,
// and an object root rejects properties it does not declare unless it says
// otherwise. Nested objects stay as written. Formats (date-time, uri, …)
// are asserted. References outside the document are never fetched: such a
// schema fails to compile.
//
// [Schema.Validate] takes a value decoded by encoding/json with UseNumber
// and returns a [*ValidationError] whose violations carry an RFC 6901 JSON
// pointer and a reason. Note the JSON Schema rule that a number with a zero
// fraction is an integer: "1.0" and "1e3" are valid integers. Valid values
// take a fast path that does not allocate for most schemas (fast.go); the
// library (github.com/santhosh-tekuri/jsonschema/v6) validates the rest and
// explains every invalid value.
//
// Compiling is bounded (limits.go): a document's size, its number of
// patterns and each pattern's length and compiled program, and the time
// of one compile are limited ([Limits]), and a [Compiler] runs a few
// compiles at once; a schema over a limit is invalid with a
// [*LimitError] naming the limit's config key. Valid also means storable
// (storable.go): an integer field holds an int64, a number field a finite
// float64, and no string of an event is longer than [MaxStringBytes].
//
// Errors callers branch on: [ErrNotFound] (no such version), [ErrInvalidSchema]
// (the document does not decode or compile, or exceeds a limit),
// [ErrInvalidID] (the name or revision cannot name a schema). Anything
// else from [Resolver.Resolve] is transient (such as [ErrBusy]): retry
// later.
package schema
