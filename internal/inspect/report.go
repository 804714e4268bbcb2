package inspect

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Status is the pipeline at a glance, as `eventlogging status` prints it.
type Status struct {
	Overview
	// Errors are the latest EventErrors.
	Errors []ErrorRecord `json:"errors"`
	// Healthy: no role is down.
	Healthy bool `json:"healthy"`
	// Missing names the roles that are down.
	Missing []string `json:"missing"`
	down    []RoleHealth
}

// Status samples the pipeline twice, interval apart (the rates are
// measured over it), and reads the nErrors latest EventErrors.
func (ins *Inspector) Status(ctx context.Context, interval time.Duration, nErrors int) (Status, error) {
	ins.Sample(ctx)
	select {
	case <-ctx.Done():
		return Status{}, ctx.Err()
	case <-time.After(interval):
	}
	ins.Sample(ctx)
	ov, err := ins.Overview(ctx)
	if err != nil {
		return Status{}, err
	}
	st := Status{Overview: ov}
	if nErrors > 0 {
		ectx, cancel := context.WithTimeout(ctx, 10*time.Second)
		st.Errors, err = ins.Errors(ectx, ErrorFilter{Limit: nErrors})
		cancel()
		if err != nil {
			return Status{}, err
		}
	}
	st.down = ov.Down()
	st.Missing = make([]string, 0, len(st.down))
	for _, r := range st.down {
		st.Missing = append(st.Missing, r.Role)
	}
	st.Healthy = len(st.down) == 0
	return st, nil
}

// DownReasons are the roles down, each with its detail.
func (st Status) DownReasons() string {
	why := make([]string, len(st.down))
	for k, r := range st.down {
		why[k] = fmt.Sprintf("%s (%s)", r.Role, r.DetailWithURL())
	}
	return strings.Join(why, "; ")
}

// DetailWithURL is the role's detail, with its health URL when the detail
// does not name it already.
func (r RoleHealth) DetailWithURL() string {
	if r.URL != "" && !strings.Contains(r.Detail, r.URL) {
		return r.URL + ": " + r.Detail
	}
	return r.Detail
}

// WriteText writes the status as tables for a terminal.
func (st Status) WriteText(w io.Writer) {
	ov := st.Overview
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "ROLE\tHEALTH\tDETAIL\n")
	for _, r := range ov.Roles {
		h := "ok"
		if !r.Healthy {
			h = "DOWN"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Role, h, r.DetailWithURL())
	}
	fmt.Fprintf(tw, "\nGROUP\tSTATE\tMEMBERS\tLAG\n")
	for _, g := range ov.Groups {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", g.Group, g.State, g.Members, g.Lag)
	}
	fmt.Fprintf(tw, "\nTOPIC\tKIND\tRECORDS\tRATE/s\n")
	for _, s := range ov.Streams {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\n", s.Topic, s.Kind, s.Total, s.Rate)
	}
	fmt.Fprintf(tw, "\nvalid %.1f/s, invalid %.1f/s\n", ov.ValidRate, ov.InvalidRate)
	_ = tw.Flush()
	if len(st.Errors) > 0 {
		fmt.Fprintf(w, "\nlatest EventErrors:\n")
		for _, e := range st.Errors {
			fmt.Fprintf(w, "  %s  %s  %s  %s  [%s]\n", e.Time.Format(time.RFC3339), e.schemaText(), e.Code, e.Message, e.UUID)
		}
	}
}

// schemaText names the record's schema version for a terminal:
// "NavigationTiming/7" (the layout of a schema folder), an Event Platform
// $schema as it is (it names its version), a legacy name alone when its
// revision is unknown.
func (e ErrorRecord) schemaText() string {
	if e.Label == "" || strings.Contains(e.Schema, "/") {
		return e.Schema
	}
	return e.Schema + "/" + e.Label
}

// WriteText writes what a replay did and came to.
func (res ReplayResult) WriteText(w io.Writer, dryRun bool) {
	if dryRun {
		fmt.Fprintf(w, "would replay %d EventErrors, skipped %d\n", res.Replayed, res.Skipped)
	} else {
		fmt.Fprintf(w, "replayed %d EventErrors, skipped %d: %d valid, %d failed again, %d without an outcome yet\n",
			res.Replayed, res.Skipped, res.Valid, len(res.Failed), len(res.Pending))
	}
	for _, r := range res.Reasons {
		fmt.Fprintln(w, "  skipped", r)
	}
	for _, f := range res.Failed {
		fmt.Fprintf(w, "  failed again %s: %s: %s\n", f.UUID, f.Code, f.Message)
	}
	for _, u := range res.Pending {
		fmt.Fprintf(w, "  no outcome yet %s (still replayable; is a processor running?)\n", u)
	}
	if res.Forced {
		fmt.Fprintln(w, "  forced: every replayed EventError is recorded as replayed")
	}
}

// ParseWhen reads an RFC 3339 time, Unix seconds, or a duration back from
// now; "" is the zero time.
func ParseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(n, 0), nil
	}
	return time.Parse(time.RFC3339, s)
}
