package purge

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParsePolicy reads arbitrary retention policy files: an error
// wrapping ErrPolicy, or a Policy that validates again and never keeps
// clientIp or userAgent. Seeds: testdata/policy and testdata/fuzz.
func FuzzParsePolicy(f *testing.F) {
	files, _ := filepath.Glob("testdata/policy/*")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("retention: 90d\nsalt_hex: 00ff\nschemas:\n  Edit: {keep: [wiki, event.action], hash: [clientIp]}\n"))
	f.Add([]byte("retention: 99999999999999999999d\n"))
	f.Add([]byte("retention: -1h\nbatch_rows: -1\n"))
	f.Add([]byte("schemas:\n  \"x'; DROP TABLE y; --\": {keep: [\"event.a'; --\"]}\n"))
	f.Add([]byte("schemas:\n  E: {keep: [userAgent]}\n"))
	f.Add([]byte("schemas:\n  E: {hash: [a]}\n"))
	f.Add([]byte("schemas: {'': {}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePolicy(data)
		if err != nil {
			if !errors.Is(err, ErrPolicy) {
				t.Fatalf("error %v does not wrap ErrPolicy", err)
			}
			return
		}
		if err := p.validate(); err != nil {
			t.Fatalf("a parsed policy fails validate: %v", err)
		}
		for name, r := range p.Rules {
			for _, k := range r.Keep {
				if k == "clientIp" || k == "userAgent" || isNeverKept(k) {
					t.Fatalf("schema %s keeps %s", name, k)
				}
			}
			if len(r.Hash) > 0 && len(p.Salt) == 0 {
				t.Fatalf("schema %s hashes without a salt", name)
			}
		}
	})
}
