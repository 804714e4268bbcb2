package schema

import (
	"testing"
)

// libraryDateTime is the jsonschema library's date-time check, taken from
// a compiled schema.
func libraryDateTime(tb testing.TB) func(any) error {
	tb.Helper()
	s, err := Compile(ID{Name: "DT", Revision: 1}, map[string]any{"type": "string", "format": "date-time"})
	if err != nil {
		tb.Fatal(err)
	}
	if s.compiled.Format == nil || s.compiled.Format.Name != "date-time" || s.fast == nil || !s.fast.dateTime {
		tb.Fatal("the compiled schema does not assert date-time on the fast path")
	}
	return s.compiled.Format.Validate
}

var dateTimeCases = []string{
	"2026-11-30T12:00:00Z", "2026-11-30T12:00:00.000Z", "2026-11-30t12:00:00.123456789z",
	"2024-02-29T00:00:00Z", "2023-02-29T00:00:00Z", "2000-02-29T00:00:00Z", "1900-02-29T00:00:00Z",
	"2026-04-31T00:00:00Z", "2026-12-31T23:59:60Z", "2026-12-31T23:58:60Z", "2026-12-31T24:00:00Z",
	"2026-12-31T23:60:00Z", "2026-13-01T00:00:00Z", "2026-00-01T00:00:00Z", "2026-01-00T00:00:00Z",
	"0000-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "2026-11-30T12:00:00.Z", "2026-11-30T12:00:00",
	"2026-11-30T12:00:00+01:00", "2026-11-30T12:00:00ZZ", "2026-11-30 12:00:00Z", "2026-1-30T12:00:00Z",
	"2026-11-30T12:00:0aZ", "+026-11-30T12:00:00Z", "2026-11-30T12:00:00.5", "2026-11-30T12:00:00.5+00:00",
	"2026-11-30T-1:00:00Z", "2026-11-30T12:00:00Zx", "yesterday", "",
}

// TestDateTimeAgrees: where dateTime is sure, it answers as the library.
func TestDateTimeAgrees(t *testing.T) {
	lib := libraryDateTime(t)
	sureCount := 0
	for _, c := range dateTimeCases {
		valid, sure := dateTime([]byte(c))
		if !sure {
			continue
		}
		sureCount++
		if want := lib(c) == nil; valid != want {
			t.Errorf("%q: dateTime says valid=%v, the library %v", c, valid, want)
		}
	}
	if sureCount < 15 {
		t.Errorf("dateTime was sure of only %d cases", sureCount)
	}
	if _, sure := dateTime([]byte("2026-11-30T12:00:00.000Z")); !sure {
		t.Error("the common form is left to the library")
	}
}

// FuzzDateTime: for any string, dateTime, where sure, agrees with the
// library's date-time check.
func FuzzDateTime(f *testing.F) {
	for _, c := range dateTimeCases {
		f.Add(c)
	}
	lib := libraryDateTime(f)
	f.Fuzz(func(t *testing.T, s string) {
		valid, sure := dateTime([]byte(s))
		if sure && valid != (lib(s) == nil) {
			t.Fatalf("%q: dateTime says valid=%v, the library %v", s, valid, lib(s))
		}
	})
}
