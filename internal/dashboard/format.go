package dashboard

import (
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/inspect"
)

// Number formats shared by the templates; static/overview.js formats the
// numbers it refreshes the same way.

// formatRate is a rate in events per second, e.g. "12.5/s".
func formatRate(r float64) string {
	return strconv.FormatFloat(r, 'f', 1, 64) + "/s"
}

// formatRatio is the invalid share of all events, e.g. "0.25%", or "–"
// when there were none.
func formatRatio(valid, invalid float64) string {
	if valid+invalid <= 0 {
		return "–"
	}
	return strconv.FormatFloat(100*invalid/(valid+invalid), 'f', 2, 64) + "%"
}

// formatTime is an instant in UTC to the second.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// ago is how long before now t was, roughly: "5s ago", "3h ago".
func (h *Handler) ago(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := h.now().Sub(t)
	switch {
	case d < time.Second:
		return "just now"
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s ago"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m ago"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + "h ago"
	default:
		return strconv.Itoa(int(d/(24*time.Hour))) + "d ago"
	}
}

// replayText says in words what came of an EventError's latest replay
// (inspect.ErrorRecord.Replay): "replayed 2026-12-04 10:03 UTC: valid",
// "replayed …: failed again: <reason>", "replayed …: forced (closed
// whatever the outcome)"; "" when it was never replayed.
func replayText(o *capsule.ReplayOutcome) string {
	if o == nil {
		return ""
	}
	s := "replayed"
	if !o.Time.IsZero() {
		s += " " + o.Time.UTC().Format("2006-01-02 15:04 UTC")
	}
	reason := o.Message
	if reason == "" {
		reason = o.Code
	}
	switch o.Status {
	case capsule.ReplayValid:
		return s + ": valid"
	case capsule.ReplayInvalid:
		if reason == "" {
			return s + ": failed again"
		}
		return s + ": failed again: " + reason
	case capsule.ReplayForced:
		if reason != "" {
			// A forced replay that failed again: closed all the same.
			return s + ": forced, failed again: " + reason
		}
		return s + ": forced (closed whatever the outcome)"
	default:
		return s + ": " + o.Status
	}
}

// revisionText names a schema version as users know it, from its label
// (inspect.SchemaVersion.Label, inspect.ErrorRecord.Label): "revision 7"
// for a legacy revision, "version 1.1.0" for an Event Platform version;
// "" for no label.
func revisionText(label string) string {
	switch {
	case label == "":
		return ""
	case isRevision(label):
		return "revision " + label
	default:
		return "version " + label
	}
}

// isRevision reports whether a label is a legacy revision (a number).
func isRevision(label string) bool {
	_, err := strconv.ParseUint(label, 10, 63)
	return err == nil
}

// versionText names a registered version for a link or a list: "revision
// 7", "1.1.0", or the registry's number ("v3") when it has no label.
func versionText(v inspect.SchemaVersion) string {
	switch {
	case v.Label == "":
		return "v" + strconv.Itoa(v.Version)
	case isRevision(v.Label):
		return "revision " + v.Label
	default:
		return v.Label
	}
}

// pathSegment escapes a name for one segment of a link's path.
func pathSegment(s string) string { return url.PathEscape(s) }

// Sparkline geometry: the SVG viewBox of the overview's per-stream charts.
const (
	sparkWidth  = 120
	sparkHeight = 24
	sparkPad    = 1
)

// sparkPoints is the SVG polyline points of a rate series, oldest first,
// scaled to the series' maximum (a flat line at the bottom when all are
// zero). overview.js draws refreshed series with the same arithmetic.
func sparkPoints(series []float64) string {
	n := len(series)
	if n == 0 {
		return ""
	}
	if n == 1 {
		series = []float64{series[0], series[0]}
		n = 2
	}
	peak := sparkMax(series)
	var b strings.Builder
	b.Grow(n * 12)
	for i, v := range series {
		x := float64(i) * sparkWidth / float64(n-1)
		y := float64(sparkHeight - sparkPad)
		if peak > 0 && v > 0 && v <= peak {
			y -= v / peak * (sparkHeight - 2*sparkPad)
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatFloat(x, 'f', 1, 64))
		b.WriteByte(',')
		b.WriteString(strconv.FormatFloat(y, 'f', 1, 64))
	}
	return b.String()
}

// sparkMax is the largest finite value of a series, 0 for an empty one.
func sparkMax(series []float64) float64 {
	peak := 0.0
	for _, v := range series {
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			peak = max(peak, v)
		}
	}
	return peak
}
