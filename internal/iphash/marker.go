package iphash

import "strings"

// HashedPrefix marks a client IP field of a raw line that holds the hash
// of the IP rather than the IP: "h:" followed by the lowercase hex HMAC
// (40 digits for SHA1, 64 for SHA256). The processor writes such fields
// into the raw lines of EventErrors under the hash policy, so that no raw
// IP is stored, and takes the hash as it is when the line comes back
// (replay) instead of hashing the hash. An IP address never starts with
// "h:", so a marked field cannot be mistaken for one.
const HashedPrefix = "h:"

// Mark returns the marked form of hash: HashedPrefix + hash.
func Mark(hash string) string { return HashedPrefix + hash }

// Unmark returns the hash in a marked field and true, or "" and false when
// s is not HashedPrefix followed by 40 or 64 lowercase hex digits.
func Unmark(s string) (string, bool) {
	h, ok := strings.CutPrefix(s, HashedPrefix)
	if !ok || (len(h) != 40 && len(h) != 64) {
		return "", false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", false
		}
	}
	return h, true
}
