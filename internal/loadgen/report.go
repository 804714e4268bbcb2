package loadgen

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// Report is the outcome of a run; its JSON form is `eventlogging bench
// --json`.
type Report struct {
	RunID       string  `json:"run_id"`
	URL         string  `json:"url"`
	Mode        string  `json:"mode"`
	Batch       int     `json:"batch"` // events per POST; 1 for beacons
	Concurrency int     `json:"concurrency"`
	TargetRate  float64 `json:"target_rate"` // events/s; 0: flat out
	// StoppedBy is "events" (--events reached), "duration" or "interrupted".
	StoppedBy string `json:"stopped_by"`
	// Elapsed is the sending time, first request to last answer.
	Elapsed float64 `json:"elapsed_seconds"`
	// Schemas counts the events sent per schema version ("Name/revision").
	Schemas       map[string]int64 `json:"schemas"`
	Requests      RequestStats     `json:"requests"`
	Events        EventStats       `json:"events"`
	IntakeLatency Latency          `json:"intake_latency_ms"`
	// Follow is nil when the output topics were not followed (--no-follow).
	Follow *FollowStats `json:"follow,omitempty"`
	Notes  []string     `json:"notes,omitempty"`
}

// RequestStats counts HTTP requests.
type RequestStats struct {
	Sent      int64   `json:"sent"`
	PerSecond float64 `json:"per_second"`
	// Status counts answers by HTTP status code.
	Status map[string]int64 `json:"status"`
	// Errors are requests without an answer (connection refused, timeout…).
	Errors int64 `json:"errors"`
}

// EventStats counts events.
type EventStats struct {
	Sent int64 `json:"sent"`
	// Accepted are the events the intake answered success for: 204
	// (beacon), 202 (hasty), or a per-event result in a 201/207/400 answer
	// of a synchronous POST — there invalid events are accepted too: their
	// EventErrors were written.
	Accepted          int64   `json:"accepted"`
	AcceptedPerSecond float64 `json:"accepted_per_second"`
	// Refused are events of requests answered otherwise, or not at all.
	Refused int64 `json:"refused"`
	// InvalidSent are the events generated with a violation.
	InvalidSent int64 `json:"invalid_sent"`
	// AnsweredInvalid are the events a synchronous POST answered invalid.
	AnsweredInvalid int64 `json:"answered_invalid"`
	// Misjudged are synchronous POST events answered valid although
	// generated invalid, or the reverse.
	Misjudged int64 `json:"misjudged"`
}

// Latency summarises a histogram, in milliseconds.
type Latency struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// FollowStats is what was found in the output topics.
type FollowStats struct {
	Topics []string `json:"topics"`
	// Complete: every accepted event was seen before the follow timeout.
	Complete bool `json:"complete"`
	// Seen are the distinct events of the run found in the topics.
	Seen int64 `json:"seen"`
	// Lost are accepted events never seen.
	Lost int64 `json:"lost"`
	// Duplicates are sightings of an event after its first.
	Duplicates int64 `json:"duplicates"`
	// InvalidRouted are invalid events found in the error topic.
	InvalidRouted int64 `json:"invalid_routed"`
	// UnexpectedErrors are valid events found in the error topic.
	UnexpectedErrors int64 `json:"unexpected_errors"`
	// UnexpectedValid are invalid events found in a schema topic.
	UnexpectedValid int64 `json:"unexpected_valid"`
	// SeenNotAccepted are events seen although the intake did not answer
	// success for them (e.g. a timeout after the intake took them).
	SeenNotAccepted int64 `json:"seen_not_accepted"`
	// EventsPerSecond: events seen over the time from the first send to
	// the Kafka timestamp of the last output record.
	EventsPerSecond float64 `json:"events_per_second"`
	// Latency: Kafka timestamp of the output record (set by the producer
	// that wrote it: the processor, or the intake for a synchronous POST)
	// minus the send time of the request.
	Latency Latency `json:"latency_ms"`
	// ReadLatency: when bench read the output record minus the send time
	// (includes the time to make it readable: acknowledgement, fetch; bench
	// fetches in bulk, as the sinks do, so up to kafka.fetch_max_wait of it
	// is its own wait for a full fetch).
	ReadLatency Latency `json:"read_latency_ms"`
	// Wait is how long following went on after the last answer.
	Wait   float64  `json:"wait_seconds"`
	Errors []string `json:"errors,omitempty"`
}

func latencyOf(h *Histogram) Latency {
	ms := func(d time.Duration) float64 { return round3(float64(d) / float64(time.Millisecond)) }
	return Latency{
		Count: int64(h.Count()), Mean: ms(h.Mean()),
		P50: ms(h.Quantile(0.50)), P95: ms(h.Quantile(0.95)), P99: ms(h.Quantile(0.99)), Max: ms(h.Max()),
	}
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("bench report: %w", err)
	}
	return nil
}

// WriteText writes the report for humans.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	rate := "flat out"
	if r.TargetRate > 0 {
		rate = fmt.Sprintf("%s events/s", num(r.TargetRate))
	}
	batch := ""
	if r.Mode != "beacon" {
		batch = fmt.Sprintf(", batch %d", r.Batch)
	}
	fmt.Fprintf(&b, "eventlogging bench %s: %s, mode %s%s, %d clients, %s; stopped by %s after %.2fs\n",
		r.RunID, r.URL, r.Mode, batch, r.Concurrency, rate, r.StoppedBy, r.Elapsed)
	fmt.Fprintf(&b, "\nrequests   %s sent, %s/s", num(float64(r.Requests.Sent)), num(r.Requests.PerSecond))
	codes := make([]string, 0, len(r.Requests.Status))
	for c := range r.Requests.Status {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	var parts []string
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%s × %s", c, num(float64(r.Requests.Status[c]))))
	}
	if r.Requests.Errors > 0 {
		parts = append(parts, fmt.Sprintf("no answer × %s", num(float64(r.Requests.Errors))))
	}
	if len(parts) > 0 {
		fmt.Fprintf(&b, "; %s", strings.Join(parts, ", "))
	}
	e := r.Events
	fmt.Fprintf(&b, "\nevents     %s sent, %s accepted (%s/s), %s refused; %s generated invalid",
		num(float64(e.Sent)), num(float64(e.Accepted)), num(e.AcceptedPerSecond), num(float64(e.Refused)), num(float64(e.InvalidSent)))
	if r.Mode == "post" || r.Mode == "mix" {
		fmt.Fprintf(&b, ", %s answered invalid, %s misjudged", num(float64(e.AnsweredInvalid)), num(float64(e.Misjudged)))
	}
	fmt.Fprintf(&b, "\nintake     request to answer %s\n", latencyText(r.IntakeLatency))
	if f := r.Follow; f != nil {
		state := "complete"
		if !f.Complete {
			state = "INCOMPLETE"
		}
		fmt.Fprintf(&b, "end to end %s events/s; send to output record (its Kafka timestamp) %s\n", num(f.EventsPerSecond), latencyText(f.Latency))
		fmt.Fprintf(&b, "           send to read back by bench %s\n", latencyText(f.ReadLatency))
		fmt.Fprintf(&b, "follow     %s after %.2fs: %s seen, %s lost, %s duplicates, %s invalid in the error topic",
			state, f.Wait, num(float64(f.Seen)), num(float64(f.Lost)), num(float64(f.Duplicates)), num(float64(f.InvalidRouted)))
		if f.UnexpectedErrors+f.UnexpectedValid+f.SeenNotAccepted > 0 {
			fmt.Fprintf(&b, "; MISROUTED: %d valid in the error topic, %d invalid in a schema topic; %d seen but not accepted",
				f.UnexpectedErrors, f.UnexpectedValid, f.SeenNotAccepted)
		}
		fmt.Fprintf(&b, "\n           topics %s\n", strings.Join(f.Topics, ", "))
		for _, err := range f.Errors {
			fmt.Fprintf(&b, "           error: %s\n", err)
		}
	} else {
		b.WriteString("end to end not followed (--no-follow)\n")
	}
	names := make([]string, 0, len(r.Schemas))
	for n := range r.Schemas {
		names = append(names, n)
	}
	slices.Sort(names)
	parts = parts[:0]
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %s", n, num(float64(r.Schemas[n]))))
	}
	fmt.Fprintf(&b, "schemas    %s\n", strings.Join(parts, ", "))
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("bench report: %w", err)
	}
	return nil
}

func latencyText(l Latency) string {
	if l.Count == 0 {
		return "(no values)"
	}
	return fmt.Sprintf("p50 %.3f ms, p95 %.3f ms, p99 %.3f ms, max %.3f ms (mean %.3f ms, %s values)",
		l.P50, l.P95, l.P99, l.Max, l.Mean, num(float64(l.Count)))
}

// num formats a count or rate with thousands separators, no decimals.
func num(f float64) string {
	n := int64(math.Round(f))
	neg := n < 0
	if neg {
		n = -n
	}
	s := fmt.Sprint(n)
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
