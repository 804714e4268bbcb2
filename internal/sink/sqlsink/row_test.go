package sqlsink

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/schema"
)

func TestParseInt(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  error
	}{
		{"0", 0, nil},
		{"-0", 0, nil},
		{"9007199254740993", 9007199254740993, nil},
		{"-9223372036854775808", math.MinInt64, nil},
		{"9223372036854775807", math.MaxInt64, nil},
		{"9223372036854775808", 0, errIntRange},
		{"99999999999999999999", 0, errIntRange},
		{"1.0", 1, nil},
		{"1e3", 1000, nil},
		{"1E+3", 1000, nil},
		{"1.5e1", 15, nil},
		{"-2.50e1", -25, nil},
		{"1500e-2", 15, nil},
		{"9.223372036854775807e18", math.MaxInt64, nil},
		{"9.223372036854775808e18", 0, errIntRange},
		{"0.0e-5", 0, nil},
		{"0e999999999999999999", 0, nil},
		{"1e999999999999999999", 0, errIntRange},
		{"1e-999999999999999999", 0, errNotInteger},
		{"1e1000000000", 0, errIntRange},
		{"1.5", 0, errNotInteger},
		{"15e-1", 0, errNotInteger},
		{"abc", 0, errNotInteger},
		{"", 0, errNotInteger},
		{"1e", 0, errNotInteger},
	}
	for _, tt := range tests {
		got, err := parseInt(tt.in)
		if got != tt.want || !errors.Is(err, tt.err) {
			t.Errorf("parseInt(%q) = %d, %v; want %d, %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

// FuzzParseInt compares parseInt with exact rational arithmetic.
func FuzzParseInt(f *testing.F) {
	for _, s := range []string{"0", "12", "-1.0", "1e3", "1.25e2", "9223372036854775807", "1e19", "-9.2e18", "7e-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !json.Valid([]byte(s)) || strings.ContainsAny(s, "\"[{tfn \t\r\n") {
			return
		}
		_, exp, _ := strings.Cut(strings.ToLower(s), "e")
		if len(strings.TrimLeft(exp, "+-0")) > 3 {
			return // big.Rat would take forever; parseInt must not
		}
		got, err := parseInt(s)
		r, ok := new(big.Rat).SetString(s)
		if !ok {
			t.Fatalf("big.Rat cannot parse %q", s)
		}
		switch {
		case !r.IsInt():
			if !errors.Is(err, errNotInteger) {
				t.Fatalf("parseInt(%q) = %d, %v; want not an integer", s, got, err)
			}
		case !r.Num().IsInt64():
			if !errors.Is(err, errIntRange) {
				t.Fatalf("parseInt(%q) = %d, %v; want out of range", s, got, err)
			}
		default:
			if err != nil || got != r.Num().Int64() {
				t.Fatalf("parseInt(%q) = %d, %v; want %d", s, got, err, r.Num().Int64())
			}
		}
	})
}

func TestMediaWikiTimestamp(t *testing.T) {
	for sec, want := range map[int64]string{
		0:            "19700101000000",
		1358791834:   "20130121181034",
		-1:           "19691231235959",
		-62167219200: "00000101000000",
		253402300799: "99991231235959",
	} {
		got, ok := mediaWikiTimestamp(sec)
		if !ok || got != want {
			t.Errorf("mediaWikiTimestamp(%d) = %q, %v; want %q", sec, got, ok, want)
		}
		if ok && sec >= 0 {
			if parsed, err := time.Parse("20060102150405", got); err != nil || parsed.Unix() != sec {
				t.Errorf("%s does not parse back to %d: %v, %v", got, sec, parsed, err)
			}
		}
	}
	for _, sec := range []int64{-62167219201, 253402300800, 1358791834912} {
		if got, ok := mediaWikiTimestamp(sec); ok {
			t.Errorf("mediaWikiTimestamp(%d) = %q, want out of range", sec, got)
		}
	}
}

func TestValueConversion(t *testing.T) {
	pg, _ := newDialect(Postgres)
	my, _ := newDialect(MySQL)
	lite, _ := newDialect(SQLite)
	tests := []struct {
		d    *dialect
		typ  colType
		in   any
		want any
		err  string
	}{
		{lite, typeBool, true, int64(1), ""},
		{pg, typeBool, false, false, ""},
		{pg, typeBool, "true", nil, "want boolean"},
		{pg, typeInt, json.Number("9007199254740993"), int64(9007199254740993), ""},
		{pg, typeInt, 3.0, int64(3), ""},
		{pg, typeInt, 3.5, nil, "not an integer"},
		{pg, typeInt, json.Number("1e20"), nil, "out of BIGINT range"},
		{pg, typeNumber, json.Number("1e400"), nil, "out of DOUBLE range"},
		{pg, typeNumber, json.Number("0.1"), 0.1, ""},
		{pg, typeNumber, int64(7), 7.0, ""},
		{pg, typeString, "a\x00b", nil, "NUL"},
		{lite, typeString, "a\x00b", "a\x00b", ""},
		{my, typeString, strings.Repeat("x", mysqlMaxText), strings.Repeat("x", mysqlMaxText), ""},
		{my, typeString, strings.Repeat("x", mysqlMaxText+1), nil, "65536 bytes, the column holds 65535"},
		{my, typeJSON, map[string]any{"b": []any{json.Number("1"), nil}, "a": "☆"}, `{"a":"☆","b":[1,null]}`, ""},
		{pg, typeJSON, "s", `"s"`, ""},
		{pg, typeJSON, nil, nil, ""},
	}
	for _, tt := range tests {
		got, err := tt.d.eventValue(tt.typ, tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s %v(%#v): err %v, want %q", tt.d.name, tt.typ, tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s %v(%.40q): %#v, %v; want %.40q", tt.d.name, tt.typ, tt.in, got, err, tt.want)
		}
	}
}

func TestSQLiteDSN(t *testing.T) {
	tests := []struct {
		in   string
		want map[string]string
	}{
		{"/tmp/x.db", map[string]string{"_busy_timeout": "10000", "_journal_mode": "WAL", "_synchronous": "NORMAL", "_foreign_keys": "0", "_txlock": "immediate"}},
		{"file:/tmp/x.db?_timeout=5&_txlock=deferred&cache=shared", map[string]string{"_timeout": "5", "_busy_timeout": "", "_txlock": "deferred", "cache": "shared", "_journal_mode": "WAL"}},
		{":memory:", map[string]string{"_journal_mode": "", "_busy_timeout": "10000"}},
	}
	for _, tt := range tests {
		got := sqliteDSN(tt.in)
		base, query, _ := strings.Cut(got, "?")
		if wantBase, _, _ := strings.Cut(tt.in, "?"); base != wantBase {
			t.Errorf("sqliteDSN(%q) = %q: base changed", tt.in, got)
		}
		q, err := url.ParseQuery(query)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range tt.want {
			if q.Get(k) != v {
				t.Errorf("sqliteDSN(%q) = %q: %s=%q, want %q", tt.in, got, k, q.Get(k), v)
			}
		}
	}
}

func TestOpenSQLiteSettings(t *testing.T) {
	db := openSQLite(t)
	for pragma, want := range map[string]string{"journal_mode": "wal", "busy_timeout": "10000", "synchronous": "1", "foreign_keys": "0"} {
		var got string
		if err := db.QueryRowContext(t.Context(), "PRAGMA "+pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("PRAGMA %s = %s, want %s", pragma, got, want)
		}
	}
}

func TestNewWriterErrors(t *testing.T) {
	res := testResolver(t)
	if _, err := NewWriter(nil, res, Config{Dialect: SQLite}); err == nil {
		t.Error("nil db accepted")
	}
	if _, err := NewWriter(&sql.DB{}, nil, Config{Dialect: SQLite}); err == nil {
		t.Error("nil Schemas accepted")
	}
	if _, err := NewWriter(&sql.DB{}, res, Config{}); err == nil || !strings.Contains(err.Error(), "unknown dialect") {
		t.Errorf("empty dialect: %v", err)
	}
	if _, err := Open("oracle", "x"); err == nil {
		t.Error("Open accepted dialect oracle")
	}
	if _, err := Open(MySQL, "not a dsn"); err == nil {
		t.Error("Open accepted a bad MySQL DSN")
	}
}

// flakySchemas fails every Resolve and ResolveURI with a transient error.
type flakySchemas struct{}

var errFetch = errors.New("registry unreachable")

func (flakySchemas) Resolve(context.Context, schema.ID) (*schema.Schema, error) {
	return nil, errFetch
}

func (flakySchemas) ResolveURI(context.Context, string) (*schema.Schema, error) {
	return nil, errFetch
}

// TestTransientSchemaError: a schema fetch that may succeed later fails
// the batch before anything is written.
func TestTransientSchemaError(t *testing.T) {
	db := openSQLite(t)
	w := newTestWriter(t, db, flakySchemas{}, Config{Dialect: SQLite})
	_, err := w.Write(t.Context(), []map[string]any{makeCapsule(t, "Types", 1, 1, `{}`)})
	if !errors.Is(err, errFetch) {
		t.Fatalf("Write: %v, want the fetch error", err)
	}
	var n int
	if err := db.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'").Scan(&n); err != nil || n != 0 {
		t.Errorf("%d tables (%v), want none", n, err)
	}
}

// TestTransientDatabaseError: a database that is gone is a transient
// error, not poison.
func TestTransientDatabaseError(t *testing.T) {
	db := openSQLite(t)
	w := newTestWriter(t, db, testResolver(t), Config{Dialect: SQLite})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	res, err := w.Write(t.Context(), []map[string]any{makeCapsule(t, "Types", 1, 1, `{}`)})
	if err == nil || len(res.Poison) != 0 {
		t.Fatalf("Write on a closed database: %+v, %v; want an error and no poison", res, err)
	}
}
