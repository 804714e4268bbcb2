package iphash

import (
	"crypto/hmac"
	"crypto/sha1" // HMAC-SHA1 only for parity with the original; HMAC does not rely on SHA-1's collision resistance
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"sync"
)

// Alg selects the HMAC hash function. The zero value is SHA256.
type Alg int

const (
	// SHA256 is HMAC-SHA256, the default.
	SHA256 Alg = iota
	// SHA1 is HMAC-SHA1, the original EventLogging's choice, selectable
	// so its hashes can be reproduced.
	SHA1
)

// ParseAlg parses the configuration spelling of an Alg: "sha256" or "sha1".
func ParseAlg(s string) (Alg, error) {
	switch s {
	case "sha256":
		return SHA256, nil
	case "sha1":
		return SHA1, nil
	}
	return 0, fmt.Errorf("iphash: unknown hash algorithm %q (want \"sha256\" or \"sha1\")", s)
}

// String returns the configuration spelling of a: "sha256" or "sha1".
func (a Alg) String() string {
	switch a {
	case SHA256:
		return "sha256"
	case SHA1:
		return "sha1"
	}
	return fmt.Sprintf("Alg(%d)", int(a))
}

// MarshalText implements [encoding.TextMarshaler] with the spelling of
// [Alg.String].
func (a Alg) MarshalText() ([]byte, error) {
	if !a.valid() {
		return nil, fmt.Errorf("iphash: invalid Alg(%d)", int(a))
	}
	return []byte(a.String()), nil
}

// UnmarshalText implements [encoding.TextUnmarshaler] with [ParseAlg], so an
// Alg can sit directly in a YAML or JSON configuration struct.
func (a *Alg) UnmarshalText(b []byte) error {
	v, err := ParseAlg(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}

func (a Alg) valid() bool { return a == SHA256 || a == SHA1 }

func (a Alg) newFunc() func() hash.Hash {
	if a == SHA1 {
		return sha1.New
	}
	return sha256.New
}

// Hasher computes hex(HMAC-<alg>(key, utf8(ip))) with one fixed key. It is
// safe for concurrent use; Hash allocates nothing but its result string.
type Hasher struct {
	alg  Alg
	pool sync.Pool // of *macState, each with its own keyed hash.Hash
}

// macState is the per-call scratch space of Hash, pooled so the hot path does
// not allocate.
type macState struct {
	mac hash.Hash
	in  []byte                // the IP's bytes (hash.Hash takes []byte, not string)
	sum [sha256.Size]byte     // large enough for either digest
	hex [2 * sha256.Size]byte // hex of sum
}

// maxPooledInput bounds the input buffer a pooled state keeps, so one absurd
// "IP" cannot pin a large buffer for the life of the process.
const maxPooledInput = 1 << 10

// NewHasher returns a Hasher for alg keyed with key. The key is copied.
//
// NewHasher panics if alg is neither SHA256 nor SHA1: that is a programming
// error, since configuration is parsed with [ParseAlg].
func NewHasher(alg Alg, key []byte) *Hasher {
	if !alg.valid() {
		panic(fmt.Sprintf("iphash: NewHasher with invalid Alg(%d)", int(alg)))
	}
	k := append([]byte(nil), key...)
	newHash := alg.newFunc()
	h := &Hasher{alg: alg}
	h.pool.New = func() any {
		return &macState{mac: hmac.New(newHash, k), in: make([]byte, 0, 64)}
	}
	return h
}

// Hash returns the lowercase hex HMAC of the UTF-8 bytes of ip.
func (h *Hasher) Hash(ip string) string {
	st := h.pool.Get().(*macState)
	st.in = append(st.in[:0], ip...)
	st.mac.Reset()
	st.mac.Write(st.in) // hash.Hash.Write never returns an error
	sum := st.mac.Sum(st.sum[:0])
	n := hex.Encode(st.hex[:], sum)
	out := string(st.hex[:n])
	if cap(st.in) > maxPooledInput {
		st.in = make([]byte, 0, 64)
	}
	h.pool.Put(st)
	return out
}

// Alg returns the hash function h uses.
func (h *Hasher) Alg() Alg { return h.alg }

// String describes h without its key.
func (h *Hasher) String() string { return "iphash.Hasher(" + h.alg.String() + ")" }
