package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// report is the checker's verdict.
type report struct {
	sent, acked, ackedValid, ackedInvalid, unacked int
	byMode                                         map[string]int // acknowledged, by mode
	lostSQL, lostParquet, lostInvalid              []uint64
	dupSQL, dupParquet                             []uint64
	lostIceberg, dupIceberg                        []uint64
	iceberg                                        bool
	misrouted, uuidMismatch, invented              []uint64
	storedUnacked, errorDups                       int
	foreign, sinkErrors                            int
	// details names where the first lost and duplicated events were (or
	// were not) found.
	details []string
}

func (r *report) failed() bool {
	return len(r.lostSQL)+len(r.lostParquet)+len(r.lostIceberg)+len(r.dupIceberg)+len(r.lostInvalid)+len(r.dupSQL)+len(r.dupParquet)+
		len(r.misrouted)+len(r.uuidMismatch)+len(r.invented)+r.foreign > 0
}

// verdict compares what was acknowledged with what was found.
func verdict(acks map[uint64]ack, f *found) *report {
	r := &report{byMode: map[string]int{}, iceberg: f.iceberg != nil}
	seqs := make([]uint64, 0, len(acks))
	for s := range acks {
		seqs = append(seqs, s)
	}
	slices.Sort(seqs)
	for _, s := range seqs {
		a := acks[s]
		r.sent++
		sq, pq, iq, ne := f.sql[s], f.parquet[s], f.iceberg[s], f.errors[s]
		invalid := a.Invalid
		if a.Answer != "" { // a synchronous POST's own verdict
			invalid = a.Answer != "accepted"
		}
		if len(sq) > 1 {
			r.dupSQL = append(r.dupSQL, s)
			r.detail(s, a, sq, pq, iq, ne)
		}
		if len(pq) > 1 {
			r.dupParquet = append(r.dupParquet, s)
			r.detail(s, a, sq, pq, iq, ne)
		}
		if len(iq) > 1 {
			r.dupIceberg = append(r.dupIceberg, s)
			r.detail(s, a, sq, pq, iq, ne)
		}
		if ne > 1 {
			r.errorDups++
		}
		uuids := map[string]bool{}
		for _, x := range slices.Concat(sq, pq, iq) {
			uuids[x.uuid] = true
		}
		if len(uuids) > 1 || (a.UUID != "" && len(uuids) == 1 && !uuids[a.UUID]) {
			r.uuidMismatch = append(r.uuidMismatch, s)
		}
		if !a.Acked {
			r.unacked++
			if len(sq)+len(pq)+len(iq)+ne > 0 {
				r.storedUnacked++
			}
			continue
		}
		r.acked++
		r.byMode[a.Mode]++
		if invalid {
			r.ackedInvalid++
			if ne == 0 {
				r.lostInvalid = append(r.lostInvalid, s)
			}
			if len(sq)+len(pq)+len(iq) > 0 {
				r.misrouted = append(r.misrouted, s)
			}
			continue
		}
		r.ackedValid++
		if len(sq) == 0 {
			r.lostSQL = append(r.lostSQL, s)
			r.detail(s, a, sq, pq, iq, ne)
		}
		if len(pq) == 0 {
			r.lostParquet = append(r.lostParquet, s)
			r.detail(s, a, sq, pq, iq, ne)
		}
		if r.iceberg && len(iq) == 0 {
			r.lostIceberg = append(r.lostIceberg, s)
			r.detail(s, a, sq, pq, iq, ne)
		}
		if ne > 0 && a.Mode != "probe" { // a probe is an EventError until its revision is pushed
			r.misrouted = append(r.misrouted, s)
		}
	}
	for _, m := range []map[uint64][]sighting{f.sql, f.parquet, f.iceberg} {
		for s := range m {
			if _, ok := acks[s]; !ok {
				r.invented = append(r.invented, s)
			}
		}
	}
	for s := range f.errors {
		if _, ok := acks[s]; !ok {
			r.invented = append(r.invented, s)
		}
	}
	slices.Sort(r.invented)
	r.invented = slices.Compact(r.invented)
	r.foreign = f.foreign
	return r
}

// detail notes where event s was found, for the first ten findings.
func (r *report) detail(s uint64, a ack, sq, pq, iq []sighting, ne int) {
	if len(r.details) >= 10 || (len(r.details) > 0 && strings.HasPrefix(r.details[len(r.details)-1], fmt.Sprintf("  seq %d ", s))) {
		return
	}
	where := func(xs []sighting) string {
		parts := make([]string, len(xs))
		for i, x := range xs {
			parts[i] = x.src + " " + x.uuid
		}
		return "[" + strings.Join(parts, "; ") + "]"
	}
	r.details = append(r.details, fmt.Sprintf("  seq %d (%s to intake%d, acked %v): SQL %s; Parquet %s; Iceberg %s; EventErrors %d",
		s, a.Mode, a.Intake, a.Acked, where(sq), where(pq), where(iq), ne))
}

func readHistory(path string) ([]entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []entry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// recovery is, for one fault, the time from its start until the
// processor's and the SQL sink's lag were both back under two seconds of
// load after the target was restarted (or woken); -1 when never seen.
type recovery struct {
	kind, target string
	at           time.Time
	took         time.Duration
}

func recoveries(hist []entry, rate float64) []recovery {
	var out []recovery
	limit := 2 * rate
	for i, e := range hist {
		if e.Kind != "fault" {
			continue
		}
		kind, _ := e.Details["fault"].(string)
		rec := recovery{kind: kind, target: e.Target, at: e.Time, took: -1}
		back := -1
		for j := i + 1; j < len(hist); j++ {
			if hist[j].Kind == "recovered" && hist[j].Target == e.Target {
				back = j
				break
			}
		}
		if back >= 0 {
			for j := back + 1; j < len(hist); j++ {
				h := hist[j]
				if h.Kind != "sample" || h.Details["lags"] == nil {
					continue
				}
				lags, _ := h.Details["lags"].(map[string]any)
				p, okP := lags[procGroup].(float64)
				s, okS := lags[sinkGroup+"-sql"].(float64)
				if okP && okS && p >= 0 && s >= 0 && p <= limit && s <= limit {
					rec.took = h.Time.Sub(e.Time)
					break
				}
			}
		}
		out = append(out, rec)
	}
	return out
}

func list(s []uint64) string {
	if len(s) == 0 {
		return "0"
	}
	parts := []string{}
	for i, x := range s {
		if i == 5 {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, fmt.Sprint(x))
	}
	return fmt.Sprintf("%d (seq %s)", len(s), strings.Join(parts, ", "))
}

func (r *report) print(w io.Writer, info runInfo, hist []entry, took time.Duration) {
	fmt.Fprintf(w, "soak check: run %s, seed %d, %.1f min of load at %.0f events/s\n", info.RunID, info.Seed, info.Minutes, info.Rate)
	faults := map[string]int{}
	var crashes, faultErrors int
	var drain string
	var evolution []string
	for _, e := range hist {
		switch e.Kind {
		case "fault":
			k, _ := e.Details["fault"].(string)
			faults[k]++
		case "crash":
			crashes++
		case "fault-error":
			faultErrors++
		case "schema-push", "replay-1", "replay-2":
			evolution = append(evolution, fmt.Sprintf("%s %v", e.Kind, e.Details["status"]))
		case "drain":
			drain = fmt.Sprintf("%.1fs", e.Details["seconds"])
		}
	}
	kinds := make([]string, 0, len(faults))
	total := 0
	for k, n := range faults {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
		total += n
	}
	slices.Sort(kinds)
	fmt.Fprintf(w, "faults: %d (%s); roles that exited on their own: %d; nemesis errors: %d; drain %s\n",
		total, strings.Join(kinds, ", "), crashes, faultErrors, drain)
	fmt.Fprintf(w, "schema evolution: %s; probes of Generic/%d (EventErrors until pushed and replayed) acknowledged: %d\n",
		strings.Join(evolution, ", "), probeRevision, r.byMode["probe"])
	modes := make([]string, 0, len(r.byMode))
	for m, n := range r.byMode {
		modes = append(modes, fmt.Sprintf("%s %d", m, n))
	}
	slices.Sort(modes)
	fmt.Fprintf(w, "events: %d sent, %d acknowledged (%s): %d valid, %d invalid; %d not acknowledged (%d of them stored anyway)\n",
		r.sent, r.acked, strings.Join(modes, ", "), r.ackedValid, r.ackedInvalid, r.unacked, r.storedUnacked)
	fmt.Fprintf(w, "PostgreSQL: lost %s, duplicated %s\n", list(r.lostSQL), list(r.dupSQL))
	fmt.Fprintf(w, "Parquet on S3: lost %s, duplicated %s\n", list(r.lostParquet), list(r.dupParquet))
	if r.iceberg {
		fmt.Fprintf(w, "Iceberg: lost %s, duplicated %s\n", list(r.lostIceberg), list(r.dupIceberg))
	} else {
		fmt.Fprintln(w, "Iceberg: not deployed")
	}
	fmt.Fprintf(w, "EventErrors: acknowledged invalid events missing %s; events with more than one EventError %d\n", list(r.lostInvalid), r.errorDups)
	fmt.Fprintf(w, "misrouted %s; uuid disagreements %s; never sent but stored %s; records of no event of this run %d; sink error records %d\n",
		list(r.misrouted), list(r.uuidMismatch), list(r.invented), r.foreign, r.sinkErrors)
	for _, d := range r.details {
		fmt.Fprintln(w, d)
	}
	worst := recovery{took: -1}
	unrecovered := 0
	for _, rc := range recoveries(hist, info.Rate) {
		if rc.took < 0 {
			unrecovered++
			continue
		}
		if rc.took > worst.took {
			worst = rc
		}
	}
	if worst.took >= 0 {
		fmt.Fprintf(w, "worst recovery (fault start → processor and SQL sink lag under 2 s of load): %.1fs (%s of %s at %s)",
			worst.took.Seconds(), worst.kind, worst.target, worst.at.Format("15:04:05"))
		if unrecovered > 0 {
			fmt.Fprintf(w, "; %d faults without a sample after", unrecovered)
		}
		fmt.Fprintln(w)
	}
	verdict := "PASS: every acknowledged event exactly once, nothing invented"
	if r.failed() {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "%s (checked in %.1fs)\n", verdict, took.Seconds())
}
