package capsule

import (
	"crypto/sha1" //nolint:gosec // UUIDv5 is defined on SHA-1
	"encoding/hex"
	"strconv"

	"github.com/google/uuid"
)

// UUID returns the event uuid of the original EventLogging: UUIDv5 in the URL
// namespace of "event://{recvFrom}/?seqId={seqId}&timestamp={ts10}", where
// ts10 is the first 10 characters of the decimal timestamp, written as 32
// lowercase hex digits. It is deterministic, so replays are idempotent.
func UUID(recvFrom string, seqID, timestamp int64) string {
	var buf [160]byte
	b := append(buf[:0], "event://"...)
	b = append(b, recvFrom...)
	b = append(b, "/?seqId="...)
	b = strconv.AppendInt(b, seqID, 10)
	b = append(b, "&timestamp="...)
	var tsBuf [24]byte
	ts := strconv.AppendInt(tsBuf[:0], timestamp, 10)
	if len(ts) > 10 {
		ts = ts[:10]
	}
	b = append(b, ts...)
	return hexUUID(b)
}

// UUIDFromDT is the later (2017+) variant keyed by the ISO-8601 receive time:
// "event://{recvFrom}/?seqId={seqId}&dt={dt}".
func UUIDFromDT(recvFrom string, seqID int64, dt string) string {
	b := make([]byte, 0, 64+len(recvFrom)+len(dt))
	b = append(b, "event://"...)
	b = append(b, recvFrom...)
	b = append(b, "/?seqId="...)
	b = strconv.AppendInt(b, seqID, 10)
	b = append(b, "&dt="...)
	b = append(b, dt...)
	return hexUUID(b)
}

// UUIDFromURL hashes an arbitrary event URL the same way (used for error
// records, keyed by their Kafka coordinates).
func UUIDFromURL(url string) string { return hexUUID([]byte(url)) }

// hexUUID is uuid.NewSHA1(uuid.NameSpaceURL, name) in hex, without the
// allocations of the generic path (it runs once per event).
func hexUUID(name []byte) string {
	var buf [256]byte
	in := append(append(buf[:0], uuid.NameSpaceURL[:]...), name...)
	sum := sha1.Sum(in)
	sum[6] = (sum[6] & 0x0f) | 0x50 // version 5
	sum[8] = (sum[8] & 0x3f) | 0x80 // RFC 4122 variant
	var out [32]byte
	hex.Encode(out[:], sum[:16])
	return string(out[:])
}

// Hyphenated writes a uuid of 32 hex digits in the RFC 4122 form
// (8-4-4-4-12), as Event Platform ids are written; anything else is
// returned unchanged.
func Hyphenated(u string) string {
	if len(u) != 32 {
		return u
	}
	return u[:8] + "-" + u[8:12] + "-" + u[12:16] + "-" + u[16:20] + "-" + u[20:]
}
