package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// referenceFile is the test vectors from the original Python EventLogging.
var referenceFile = filepath.Join("..", "..", "testdata", "reference", "eventlogging", "misc.json")

type miscVectors struct {
	ScidFromURI []struct {
		In  string `json:"in"`
		Out []any  `json:"out"` // [name, revision] or null
	} `json:"scid_from_uri"`
	ValidateScid struct {
		Valid   [][]any `json:"valid"`
		Invalid [][]any `json:"invalid"`
	} `json:"validate_scid"`
}

func loadMisc(t *testing.T) miscVectors {
	t.Helper()
	raw, err := os.ReadFile(referenceFile)
	if err != nil {
		t.Fatalf("reference vectors missing: %v (expected the shared reference folder three levels above the package, at %s)", err, referenceFile)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v miscVectors
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", referenceFile, err)
	}
	if len(v.ScidFromURI) == 0 || len(v.ValidateScid.Valid) == 0 || len(v.ValidateScid.Invalid) == 0 {
		t.Fatalf("%s has no scid_from_uri or validate_scid cases", referenceFile)
	}
	return v
}

func TestParseIDFromPathReference(t *testing.T) {
	for _, c := range loadMisc(t).ScidFromURI {
		t.Run(c.In, func(t *testing.T) {
			got, ok := ParseIDFromPath(c.In)
			if c.Out == nil {
				if ok {
					t.Errorf("ParseIDFromPath(%q) = %v, want no id", c.In, got)
				}
				return
			}
			want, err := IDFromJSON(c.Out[0], c.Out[1])
			if err != nil {
				t.Fatalf("bad vector %v: %v", c.Out, err)
			}
			if !ok || got != want {
				t.Errorf("ParseIDFromPath(%q) = %v, %v; want %v", c.In, got, ok, want)
			}
		})
	}
}

func TestParseIDFromPath(t *testing.T) {
	tests := []struct {
		in   string
		want ID
		ok   bool
	}{
		{"Edit/0012.json", ID{"Edit", 12}, true},
		{"a/b/Edit/5.yml?x=1#frag", ID{"Edit", 5}, true},
		{"Edit/5.txt", ID{}, false},
		{"Edit/5.json.bak", ID{}, false},
		{"Edit/0.json", ID{}, false},
		{"Edit/-5.json", ID{}, false},
		{"Edit/99999999999999999999.json", ID{}, false},
		{"Bad%Name/5.json", ID{}, false},
		{"/5.json", ID{}, false},
		{"5.json", ID{}, false},
		{"Edit/.json", ID{}, false},
		{"", ID{}, false},
	}
	for _, tt := range tests {
		got, ok := ParseIDFromPath(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseIDFromPath(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestValidateIDReference(t *testing.T) {
	v := loadMisc(t).ValidateScid
	for _, c := range v.Valid {
		id, err := IDFromJSON(c[0], c[1])
		if err != nil {
			t.Errorf("IDFromJSON%v = %v, want valid", c, err)
			continue
		}
		if err := id.Validate(); err != nil {
			t.Errorf("%v.Validate() = %v", id, err)
		}
	}
	for _, c := range v.Invalid {
		// The original checked the tuple's types too: a non-string name or
		// non-integer revision cannot even become an ID.
		id, err := IDFromJSON(c[0], c[1])
		if !errors.Is(err, ErrInvalidID) {
			t.Errorf("IDFromJSON%v = %v, %v; want ErrInvalidID", c, id, err)
		}
		if name, ok := c[0].(string); ok {
			if rev, ok := c[1].(json.Number); ok {
				rev, err := rev.Int64()
				if err != nil {
					t.Fatalf("bad vector %v", c)
				}
				if err := (ID{Name: name, Revision: rev}).Validate(); !errors.Is(err, ErrInvalidID) {
					t.Errorf("ID{%q, %d}.Validate() = %v, want ErrInvalidID", name, rev, err)
				}
			}
		}
	}
}

func TestIDFromJSON(t *testing.T) {
	tests := []struct {
		name, revision any
		want           ID
		ok             bool
	}{
		{"Edit", json.Number("12"), ID{"Edit", 12}, true},
		{"Edit", 12.0, ID{"Edit", 12}, true},
		{"Edit", 12, ID{"Edit", 12}, true},
		{"Edit", int64(12), ID{"Edit", 12}, true},
		{"Edit", json.Number("12.0"), ID{}, false},
		{"Edit", json.Number("1e3"), ID{}, false},
		{"Edit", 12.5, ID{}, false},
		{"Edit", "12", ID{}, false},
		{"Edit", nil, ID{}, false},
		{nil, json.Number("12"), ID{}, false},
		{"", json.Number("12"), ID{}, false},
	}
	for _, tt := range tests {
		got, err := IDFromJSON(tt.name, tt.revision)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("IDFromJSON(%#v, %#v) = %v, %v", tt.name, tt.revision, got, err)
		}
	}
	if got := (ID{"Edit", 12}).String(); got != "Edit/12" {
		t.Errorf("String() = %q", got)
	}
}

func FuzzParseIDFromPath(f *testing.F) {
	for _, s := range []string{"Edit/12.json", "file:///x/Edit/1.yaml", "12345 not a schema file", "a/b/0", "x/y/z.yml"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		id, ok := ParseIDFromPath(p)
		if !ok {
			return
		}
		if err := id.Validate(); err != nil {
			t.Fatalf("ParseIDFromPath(%q) = %v, which fails Validate: %v", p, id, err)
		}
		if again, ok := ParseIDFromPath(id.String()); !ok || again != id {
			t.Fatalf("ParseIDFromPath(%q) = %v, but its String %q parses as %v, %v", p, id, id.String(), again, ok)
		}
	})
}
