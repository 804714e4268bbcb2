package iphash

import (
	"strings"
	"testing"
)

func TestMarkUnmark(t *testing.T) {
	h256 := NewHasher(SHA256, []byte("k")).Hash("203.0.113.77")
	h1 := NewHasher(SHA1, []byte("k")).Hash("203.0.113.77")
	for _, h := range []string{h256, h1} {
		got, ok := Unmark(Mark(h))
		if !ok || got != h {
			t.Errorf("Unmark(Mark(%q)) = %q, %v", h, got, ok)
		}
	}
	for _, s := range []string{
		"", "-", "203.0.113.77", "2001:db8::1", h256, // not marked
		"h:", "h:abc", "h:" + strings.ToUpper(h256), "h:" + h256 + "0", "h:" + h256[:63] + "g", "H:" + h256,
	} {
		if got, ok := Unmark(s); ok {
			t.Errorf("Unmark(%q) = %q, true; want false", s, got)
		}
	}
}
