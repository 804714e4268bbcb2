package iphash

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
)

const referenceFile = "../../testdata/reference/eventlogging/ip_hash.json"

// TestReferenceVectors reproduces the original EventLogging's HMAC-SHA1
// client-IP hashes from the vectors taken from its Python test suite.
func TestReferenceVectors(t *testing.T) {
	raw, err := os.ReadFile(referenceFile)
	if err != nil {
		t.Fatalf("reference vectors missing: %v (expected at %s)", err, referenceFile)
	}
	var ref struct {
		Cases []struct {
			KeyHex   *string `json:"key_hex"`
			KeyUTF8  *string `json:"key_utf8"`
			Message  string  `json:"message"`
			Expected string  `json:"expected_hex"`
			Note     string  `json:"note"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatalf("decode %s: %v", referenceFile, err)
	}
	if len(ref.Cases) == 0 {
		t.Fatalf("%s has no cases", referenceFile)
	}
	for i, c := range ref.Cases {
		t.Run(fmt.Sprintf("%d_%s", i, c.Message), func(t *testing.T) {
			var key []byte
			switch {
			case c.KeyHex != nil && c.KeyUTF8 == nil:
				if key, err = hex.DecodeString(*c.KeyHex); err != nil {
					t.Fatalf("case %d: bad key_hex: %v", i, err)
				}
			case c.KeyUTF8 != nil && c.KeyHex == nil:
				key = []byte(*c.KeyUTF8)
			default:
				t.Fatalf("case %d: want exactly one of key_hex, key_utf8", i)
			}
			got := NewHasher(SHA1, key).Hash(c.Message)
			if got != c.Expected {
				t.Errorf("HMAC-SHA1(%q) = %s, want %s (%s)", c.Message, got, c.Expected, c.Note)
			}
		})
	}
}

// TestSHA256KnownAnswer checks RFC 4231 test case 2.
func TestSHA256KnownAnswer(t *testing.T) {
	const want = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
	h := NewHasher(SHA256, []byte("Jefe"))
	for range 3 { // pooled state must be reset between calls
		if got := h.Hash("what do ya want for nothing?"); got != want {
			t.Fatalf("HMAC-SHA256 = %s, want %s", got, want)
		}
	}
	var zero Alg
	if zero != SHA256 {
		t.Fatalf("zero Alg = %v, want sha256", zero)
	}
}

func TestParseAlg(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Alg
		wantErr string
	}{
		{in: "sha256", want: SHA256},
		{in: "sha1", want: SHA1},
		{in: "", wantErr: `unknown hash algorithm "" (want "sha256" or "sha1")`},
		{in: "SHA256", wantErr: `unknown hash algorithm "SHA256"`},
		{in: "md5", wantErr: `unknown hash algorithm "md5"`},
	} {
		got, err := ParseAlg(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseAlg(%q) error = %v, want containing %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseAlg(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if got.String() != tc.in {
			t.Errorf("%v.String() = %q, want %q", got, got.String(), tc.in)
		}
		var a Alg
		if err := a.UnmarshalText([]byte(tc.in)); err != nil || a != tc.want {
			t.Errorf("UnmarshalText(%q) = %v, %v", tc.in, a, err)
		}
		if b, err := tc.want.MarshalText(); err != nil || string(b) != tc.in {
			t.Errorf("MarshalText(%v) = %q, %v", tc.want, b, err)
		}
	}
	if _, err := Alg(7).MarshalText(); err == nil {
		t.Error("MarshalText(Alg(7)) succeeded")
	}
}

func TestNewHasherCopiesKey(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	h := NewHasher(SHA256, key)
	before := h.Hash("192.0.2.1")
	key[0] ^= 0xff
	if after := h.Hash("192.0.2.1"); after != before {
		t.Fatal("changing the caller's key slice changed the Hasher's output")
	}
}

func TestHasherConcurrent(t *testing.T) {
	h := NewHasher(SHA256, []byte("concurrency key"))
	ips := []string{"192.0.2.1", "2001:db8::1", "198.51.100.7", "", strings.Repeat("x", 5000)}
	want := make([]string, len(ips))
	for i, ip := range ips {
		want[i] = NewHasher(SHA256, []byte("concurrency key")).Hash(ip)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for n := range 500 {
				i := (g + n) % len(ips)
				if got := h.Hash(ips[i]); got != want[i] {
					t.Errorf("Hash(%.20q) = %s, want %s", ips[i], got, want[i])
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestKeysAreNotPrinted guards the rule that keys never reach logs.
func TestKeysAreNotPrinted(t *testing.T) {
	key := bytes.Repeat([]byte{0xab}, KeySize)
	e := Entry{Period: 7, Key: key, Offset: 3, Writer: "proc-1"}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("entry", "e", e)
	outputs := map[string]string{
		"%v":     fmt.Sprintf("%v", e),
		"%+v":    fmt.Sprintf("%+v", e),
		"%#v":    fmt.Sprintf("%#v", e),
		"String": e.String(),
		"slog":   logged.String(),
		"hasher": fmt.Sprintf("%v %+v %s", NewHasher(SHA256, key), NewHasher(SHA1, key),
			NewHasher(SHA256, key)),
	}
	for _, leak := range []string{hex.EncodeToString(key)[:8], "171 171", "0xab", string(key[:4])} {
		for how, out := range outputs {
			if strings.Contains(out, leak) {
				t.Errorf("%s output %q contains key material %q", how, out, leak)
			}
		}
	}
	if !strings.Contains(outputs["slog"], `"writer":"proc-1"`) || !strings.Contains(outputs["%v"], "Offset:3") {
		t.Errorf("redacted output lost the non-secret fields: %q, %q", outputs["slog"], outputs["%v"])
	}
}

func BenchmarkHash(b *testing.B) {
	for _, alg := range []Alg{SHA256, SHA1} {
		b.Run(alg.String(), func(b *testing.B) {
			h := NewHasher(alg, bytes.Repeat([]byte{7}, KeySize))
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_ = h.Hash("198.51.100.7")
				}
			})
		})
	}
}

func BenchmarkHashSerial(b *testing.B) {
	h := NewHasher(SHA256, bytes.Repeat([]byte{7}, KeySize))
	b.ReportAllocs()
	for b.Loop() {
		_ = h.Hash("2001:db8:85a3::8a2e:370:7334")
	}
}
