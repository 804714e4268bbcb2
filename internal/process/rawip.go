package process

import (
	"net/netip"
	"strings"

	"github.com/eventlogging/eventlogging/internal/iphash"
	"github.com/eventlogging/eventlogging/internal/lineformat"
)

// Client IPs in EventErrors. An EventError keeps the raw record so that it
// can be fixed and replayed, but under the hash and drop policies the raw
// line's client IP field must not be stored with it. The processor
// rewrites that field before the line goes into rawEvent:
//
//   - hash: the IP becomes iphash.Mark(HMAC of the IP) ("h:<hex>"), the
//     hash the event's clientIp would have had. The line keeps its TSV
//     layout, parses with the same format, and when it is replayed the
//     processor takes the marked hash as it is (serverFields), so the
//     replayed event gets the clientIp it would have got the first time —
//     not a hash of the hash.
//   - drop: the IP becomes "-", which the processor reads as "no IP".
//   - keep: the line is stored as it is.
//
// When the line did not parse (or was too large to), the field cannot be
// located by the format: every whitespace-separated token of the line that
// is an IP address is rewritten instead, and the parse error's message is
// taken from the rewritten line, since its excerpt could quote the IP.
// Events from the HTTP intake carry their IP beside the event, never in
// it, so their rawEvent needs no rewriting.

// rawLine is a raw record read with a line format.
type rawLine struct {
	f      *lineformat.Format
	parsed bool // f.Parse succeeded: the fields are the line's
}

// rewritesIP reports whether raw lines of f may hold a client IP that the
// policy keeps out of EventErrors.
func (p *Processor) rewritesIP(f *lineformat.Format) bool {
	return p.cfg.IPPolicy != IPKeep && (f.HasClientIP() || strings.Contains(f.String(), "%{clientIp}"))
}

// parseFailure is the EventError reason of a line f could not parse; the
// message never quotes a client IP the policy hides.
func (p *Processor) parseFailure(f *lineformat.Format, raw []byte, err error) *failure {
	if p.rewritesIP(f) {
		rewritten, changed := p.rewriteTokens(raw, p.isAnyIP)
		if changed {
			var scratch lineformat.Fields
			if err2 := f.Parse(rewritten, &scratch); err2 != nil {
				err = err2
			} else {
				err = lineformat.ErrNoMatch
			}
		}
	}
	return processorFailure("parse raw event: %v", err)
}

// storedRaw is the raw record as an EventError stores it: with the client
// IP field rewritten per the policy (see above).
func (p *Processor) storedRaw(raw []byte, line *rawLine, fl *lineformat.Fields) []byte {
	if line == nil || !p.rewritesIP(line.f) {
		return raw
	}
	if !line.parsed {
		out, _ := p.rewriteTokens(raw, p.isAnyIP)
		return out
	}
	ip := ""
	if fl.HasClientIP {
		ip = fl.ClientIP
	} else {
		for _, nf := range fl.Named {
			if nf.Name == "clientIp" {
				ip = nf.Str
			}
		}
	}
	if !p.mustRewrite(ip) {
		return raw
	}
	out, _ := p.rewriteTokens(raw, func(tok []byte) bool { return string(tok) == ip })
	return out
}

// mustRewrite reports whether the policy hides a client IP field's value:
// anything but "", "-" (no IP) and, under hash, an already marked hash.
func (p *Processor) mustRewrite(v string) bool {
	if v == "" || v == "-" {
		return false
	}
	if _, marked := iphash.Unmark(v); marked {
		return p.cfg.IPPolicy == IPDrop
	}
	return true
}

// isAnyIP reports whether a token of an unparsed line is a client IP the
// policy hides: an IP address (or, under drop, a marked hash).
func (p *Processor) isAnyIP(tok []byte) bool {
	if _, err := netip.ParseAddr(string(tok)); err == nil {
		return true
	}
	_, marked := iphash.Unmark(string(tok))
	return marked && p.cfg.IPPolicy == IPDrop
}

// replacement is what a hidden client IP becomes.
func (p *Processor) replacement(ip string) string {
	if p.cfg.IPPolicy == IPHash {
		if _, marked := iphash.Unmark(ip); marked {
			return ip
		}
		return iphash.Mark(p.hasher.Hash(ip))
	}
	return "-"
}

// rewriteTokens returns raw with every whitespace-separated token that
// match accepts replaced (p.replacement), and whether any was; raw itself
// is never modified. Whitespace is the line formats': space, TAB, LF, VT,
// FF, CR.
func (p *Processor) rewriteTokens(raw []byte, match func([]byte) bool) ([]byte, bool) {
	var out []byte
	last := 0 // raw[last:start] is not yet copied to out
	for i := 0; i < len(raw); {
		if isLineSpace(raw[i]) {
			i++
			continue
		}
		start := i
		for i < len(raw) && !isLineSpace(raw[i]) {
			i++
		}
		tok := raw[start:i]
		if !match(tok) {
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(raw)+64)
		}
		out = append(out, raw[last:start]...)
		out = append(out, p.replacement(string(tok))...)
		last = i
	}
	if out == nil {
		return raw, false
	}
	return append(out, raw[last:]...), true
}

func isLineSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}
