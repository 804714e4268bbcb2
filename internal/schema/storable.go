package schema

import (
	"encoding/json"
	"math"
	"math/big"
	"strconv"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/message"
)

// Valid means storable. JSON Schema puts no bound on numbers, but the
// sinks store an "integer" field as a 64-bit integer (SQL BIGINT, Parquet
// INT64) and a "number" field as a 64-bit float (DOUBLE), and refuse what
// does not fit, after the event was accepted. So validation also refuses,
// at any schema node whose type says so:
//
//   - an integer field (type "integer" without "number") holding a number
//     outside [-2^63, 2^63-1] ("integer out of range");
//   - a number field (type "number") holding a number whose magnitude
//     overflows a float64, such as 1e999999 ("number out of range").
//     Precision is not a concern: a float64 field stores the nearest
//     float64, as a DOUBLE column does (1.5e308 and 1e-400, which becomes
//     0, are valid).
//
// and, whatever the schema, a string (value or property name) longer than
// MaxStringBytes, the capacity of the narrowest column a sink stores
// strings in.
//
// The number checks are a keyword the library runs (rangeExt, attached by
// a vocabulary hook to every subschema with a numeric type) and flags on
// the fast tree (fast.go, fastjson.go) set from that keyword, so the three
// validators agree. The string check is the fast tree's (which reads every
// string, declared or not), ValidJSON's (which leaves text over
// MaxStringBytes+2 bytes to Validate) and, after the library, Validate's.

// MaxStringBytes is the longest string an event may hold, in bytes of
// UTF-8: the 65,535 bytes of a MariaDB/MySQL TEXT column, where the SQL
// sink stores strings and JSON text (sqlsink's mysqlMaxText; SQLite,
// PostgreSQL and Parquet hold more).
const MaxStringBytes = 65535

// Reasons of the storability violations.
const (
	reasonIntRange    = "integer out of range: must be between -9223372036854775808 and 9223372036854775807"
	reasonNumberRange = "number out of range of a 64-bit float"
)

// storableVocabulary is the URL of the vocabulary that attaches rangeExt.
const storableVocabulary = "urn:eventlogging:vocab:storable"

// restoredVocabularies are the standard vocabularies the library leaves
// out of the metaschema it composes when custom vocabularies are asserted
// (Compiler.AssertVocabs, which a custom vocabulary needs under drafts
// 2019-09 and 2020-12): their default lists lack meta-data, content,
// format-annotation (2020-12) and format (2019-09), so without them
// "title": 5 or "format": 5 would pass. Registered by name, the library
// puts their standard metaschemas back (storable_test.go checks it).
var restoredVocabularies = []string{"meta-data", "content", "format-annotation", "format"}

// useStorableVocabulary registers the vocabulary hook: it runs for every
// subschema, where it checks b's deadline and attaches rangeExt.
func useStorableVocabulary(c *jsonschema.Compiler, b *budget) {
	c.AssertVocabs()
	c.RegisterVocabulary(&jsonschema.Vocabulary{
		URL: storableVocabulary,
		Compile: func(_ *jsonschema.CompilerContext, obj map[string]any) (jsonschema.SchemaExt, error) {
			if err := b.expired(); err != nil {
				return nil, err
			}
			if ext := rangeExtOf(obj); ext != nil {
				return ext, nil
			}
			return nil, nil
		},
	})
	none := func(*jsonschema.CompilerContext, map[string]any) (jsonschema.SchemaExt, error) { return nil, nil }
	for _, name := range restoredVocabularies {
		c.RegisterVocabulary(&jsonschema.Vocabulary{URL: name, Compile: none})
	}
}

// rangeExt is the range check of a subschema with a numeric type.
type rangeExt struct {
	int64   bool // "integer" without "number": numbers must fit an int64
	float64 bool // "number": numbers must not overflow a float64
}

// rangeExtOf returns the range check obj's "type" asks for, or nil.
func rangeExtOf(obj map[string]any) *rangeExt {
	var integer, number bool
	switch t := obj["type"].(type) {
	case string:
		integer, number = t == "integer", t == "number"
	case []any:
		for _, e := range t {
			integer = integer || e == "integer"
			number = number || e == "number"
		}
	}
	switch {
	case number:
		return &rangeExt{float64: true}
	case integer:
		return &rangeExt{int64: true}
	}
	return nil
}

// Validate is the library's side of the check.
func (e *rangeExt) Validate(ctx *jsonschema.ValidatorContext, v any) {
	if e.int64 && !fitsInt64(v) {
		ctx.AddError(&rangeKind{reason: reasonIntRange})
	} else if e.float64 && !fitsFloat64(v) {
		ctx.AddError(&rangeKind{reason: reasonNumberRange})
	}
}

// rangeKind is the library error of rangeExt.
type rangeKind struct{ reason string }

func (k *rangeKind) KeywordPath() []string                   { return []string{"type"} }
func (k *rangeKind) LocalizedString(*message.Printer) string { return k.reason }

// rangeOf returns the range check the library runs for s, nil when none:
// under drafts before 2019-09 a subschema with "$ref" runs nothing else.
func rangeOf(s *jsonschema.Schema) *rangeExt {
	if s.Ref != nil && s.DraftVersion < 2019 {
		return nil
	}
	for _, x := range s.Extensions {
		if r, ok := x.(*rangeExt); ok {
			return r
		}
	}
	return nil
}

// int64 bounds as float64: values strictly inside are in range, values
// outside the second pair out of it, and between them the check is exact.
const (
	int64Low, int64High = -9.2e18, 9.2e18
	int64Min, int64Max  = -9.3e18, 9.3e18
)

var (
	bigInt64Min = new(big.Rat).SetInt64(math.MinInt64)
	bigInt64Max = new(big.Rat).SetInt64(math.MaxInt64)
)

// fitsInt64 reports whether the number v is within the int64 range
// (true for anything that is not a number).
func fitsInt64(v any) bool {
	switch v := v.(type) {
	case json.Number:
		return int64Text(string(v))
	case float64:
		return v >= -(1<<63) && v < 1<<63
	case float32:
		return v >= -(1<<63) && v < 1<<63
	case uint:
		return uint64(v) <= math.MaxInt64
	case uint64:
		return v <= math.MaxInt64
	}
	return true
}

// int64Text reports whether the JSON number text is within the int64
// range, exactly. Text of up to 18 characters without an exponent takes
// no parse.
func int64Text(s string) bool {
	exp := hasExponent(s)
	if len(s) <= 18 && !exp {
		return true
	}
	if !exp && plainInt(s) {
		_, err := strconv.ParseInt(s, 10, 64)
		return err == nil
	}
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil && !math.IsInf(f, 0):
		return true // not a number: the type check speaks
	case f > int64Low && f < int64High:
		return true
	case f < int64Min || f > int64Max: // and ±Inf
		return false
	}
	r, ok := new(big.Rat).SetString(s)
	return !ok || r.Cmp(bigInt64Min) >= 0 && r.Cmp(bigInt64Max) <= 0
}

// fitsFloat64 reports whether the number v is finite as a float64 (true
// for anything that is not a number).
func fitsFloat64(v any) bool {
	if n, ok := v.(json.Number); ok {
		return float64Text(string(n))
	}
	return true // Go numbers are finite or not JSON (typeOf)
}

// float64Text reports whether the JSON number text is finite as a
// float64. Text without an exponent and under 309 characters is (below
// 1e308).
func float64Text(s string) bool {
	if len(s) < 309 && !hasExponent(s) {
		return true
	}
	f, err := strconv.ParseFloat(s, 64)
	return err == nil || !math.IsInf(f, 0)
}

// hasExponent reports whether the number text has an exponent.
func hasExponent(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i]|0x20 == 'e' {
			return true
		}
	}
	return false
}

// hasLongString reports whether v holds a string, value or property
// name, longer than MaxStringBytes. It does not allocate.
func hasLongString(v any) bool {
	switch v := v.(type) {
	case string:
		return len(v) > MaxStringBytes
	case map[string]any:
		for k, x := range v {
			if len(k) > MaxStringBytes || hasLongString(x) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if hasLongString(x) {
				return true
			}
		}
	}
	return false
}

// longStrings appends a violation for every string of v (at ptr) longer
// than MaxStringBytes.
func longStrings(v any, ptr string, out *[]Violation) {
	tooLong := func(what string, n int) string {
		return what + " too long to store: " + strconv.Itoa(n) + " bytes, the limit is " + strconv.Itoa(MaxStringBytes)
	}
	switch v := v.(type) {
	case string:
		if len(v) > MaxStringBytes {
			*out = append(*out, Violation{Pointer: ptr, Reason: tooLong("string", len(v))})
		}
	case map[string]any:
		for k, x := range v {
			if len(k) > MaxStringBytes {
				*out = append(*out, Violation{Pointer: child(ptr, k), Reason: tooLong("property name", len(k))})
			}
			if hasLongString(x) {
				longStrings(x, child(ptr, k), out)
			}
		}
	case []any:
		for i, x := range v {
			if hasLongString(x) {
				longStrings(x, child(ptr, strconv.Itoa(i)), out)
			}
		}
	}
}
