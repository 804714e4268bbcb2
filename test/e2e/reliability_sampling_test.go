package e2e

// Sampling the pipeline's progress during a reliability test, and the
// throughput dips and recovery times computed from the samples.

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// sample is the pipeline's state at one moment of a test.
type sample struct {
	at              time.Duration // since the sender started
	acked           int64         // events answered 204/202
	raw, out        int64         // records in the raw and the Generic topic (end offsets)
	procLag, sinkLg int64         // consumer lag of the processors and the SQL sink
	stored          int64         // rows in SQL (max id)
}

// sampler records the pipeline's state every interval until stopped.
type sampler struct {
	mu      sync.Mutex
	samples []sample
	stop    context.CancelFunc
	done    chan struct{}
}

// sampledLoad is a sender offering beacons in the background to a rig
// while a sampler records the pipeline's progress every second.
type sampledLoad struct {
	*sender
	r    *rig
	adm  *kadm.Client
	db   *sql.DB
	sp   *sampler
	done <-chan struct{}
}

// offerSampled offers rate beacons/s from clients clients for loadFor,
// sampling the pipeline every second.
func (r *rig) offerSampled(adm *kadm.Client, clients, rate int, loadFor time.Duration) *sampledLoad {
	r.t.Helper()
	l := &sampledLoad{r: r, adm: adm, db: r.openDB()}
	l.sender = newSender(r.base, r.prefix, clients, float64(rate), rate*int(loadFor/time.Second+5))
	l.done = l.offerInBackground(r.t, loadFor)
	l.sp = startSampler(r.t.Context(), r, adm, l.db, l.sender, time.Second)
	return l
}

// wait waits for the load to end and for every acknowledged beacon in SQL
// (storeTimeout), logs the load and the timeline (a line every
// timelineEvery), and returns the delivery, the samples and when the load
// ended.
func (l *sampledLoad) wait(storeTimeout, timelineEvery time.Duration) (d delivery, samples []sample, loadEnd time.Duration) {
	t := l.r.t
	t.Helper()
	<-l.done
	loadEnd = time.Since(l.start)
	t.Logf("load: %s", l.summary())
	d = waitStored(t, l.db, l.sender, storeTimeout, l.r.drained(l.adm))
	samples = l.sp.finish()
	logTimeline(t, samples, timelineEvery)
	return d, samples, loadEnd
}

func startSampler(ctx context.Context, r *rig, adm *kadm.Client, db *sql.DB, s *sender, every time.Duration) *sampler {
	ctx, cancel := context.WithCancel(ctx)
	sp := &sampler{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(sp.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		var last sample
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			cur := last
			cur.at = time.Since(s.start)
			cur.acked = s.acked.Load()
			qctx, qcancel := context.WithTimeout(ctx, every)
			if ends, err := adm.ListEndOffsets(qctx, r.raw, r.schemaTopic); err == nil {
				var raw, out int64
				ends.Each(func(o kadm.ListedOffset) {
					if o.Err == nil && o.Topic == r.raw {
						raw += o.Offset
					} else if o.Err == nil {
						out += o.Offset
					}
				})
				cur.raw, cur.out = max(raw, last.raw), max(out, last.out)
				if lag, err := groupLag(qctx, adm, r.procGroup, ends, r.raw); err == nil {
					cur.procLag = lag
				}
				if lag, err := groupLag(qctx, adm, r.sinkGroup, ends, r.schemaTopic); err == nil {
					cur.sinkLg = lag
				}
			}
			qcancel()
			_ = db.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM "Generic_13"`).Scan(&cur.stored)
			sp.mu.Lock()
			sp.samples = append(sp.samples, cur)
			sp.mu.Unlock()
			last = cur
		}
	}()
	return sp
}

// finish stops the sampler and returns its samples.
func (sp *sampler) finish() []sample {
	sp.stop()
	<-sp.done
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return slices.Clone(sp.samples)
}

// groupLag is the sum over topic's partitions of end offset minus the
// group's committed offset (the whole partition when nothing is committed).
func groupLag(ctx context.Context, adm *kadm.Client, group string, ends kadm.ListedOffsets, topic string) (int64, error) {
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return 0, err
	}
	var lag int64
	for p, end := range ends[topic] {
		if end.Err != nil {
			continue
		}
		at := int64(0)
		if c, ok := committed.Lookup(topic, p); ok && c.Err == nil && c.At >= 0 {
			at = c.At
		}
		lag += max(0, end.Offset-at)
	}
	return lag, nil
}

// stage names one cumulative counter of a sample.
type stage struct {
	name string
	get  func(sample) int64
}

var stages = []stage{
	{"answered 2xx", func(s sample) int64 { return s.acked }},
	{"raw topic", func(s sample) int64 { return s.raw }},
	{"processed (Generic topic)", func(s sample) int64 { return s.out }},
	{"stored (SQL)", func(s sample) int64 { return s.stored }},
}

// recovery measures a stage around a fault at `at`: the lowest rate in the
// window [at, until) and the time from `at` until the rate is back above
// 90% of target after having dipped below it (0 when it never dipped).
func recovery(samples []sample, st stage, at, until time.Duration, target float64) (dip float64, rec time.Duration, recovered bool) {
	dip = -1
	dipped := false
	for k := 1; k < len(samples); k++ {
		a, b := samples[k-1], samples[k]
		if b.at <= at || a.at >= until {
			continue
		}
		rate := float64(st.get(b)-st.get(a)) / (b.at - a.at).Seconds()
		if dip < 0 || rate < dip {
			dip = rate
		}
		switch {
		case rate < 0.9*target:
			dipped = true
		case dipped:
			return dip, b.at - at, true
		}
		if !dipped && b.at-at > 5*time.Second {
			return dip, 0, true // no dip within 5 s of the fault
		}
	}
	return dip, 0, !dipped
}

// fault is something a test did at a moment of the load.
type fault struct {
	at   time.Duration
	what string
}

// reportRecovery logs, per fault and stage, the throughput dip and the
// recovery time; it returns the worst recovery time of the last stage.
func reportRecovery(t *testing.T, samples []sample, faults []fault, loadEnd time.Duration, target float64) time.Duration {
	t.Helper()
	var worst time.Duration
	for k, f := range faults {
		until := loadEnd
		if k+1 < len(faults) {
			until = min(faults[k+1].at, loadEnd)
		}
		if until-f.at < 2*time.Second {
			t.Logf("at %5.1fs %s — (less than 2 s of load left before the next step: not measured)", f.at.Seconds(), f.what)
			continue
		}
		var parts []string
		for _, st := range stages {
			dip, rec, ok := recovery(samples, st, f.at, until, target)
			switch {
			case !ok:
				parts = append(parts, fmt.Sprintf("%s: down to %.0f/s, not back above 90%% before the next step", st.name, dip))
			case rec == 0:
				parts = append(parts, fmt.Sprintf("%s: no dip (min %.0f/s)", st.name, dip))
			default:
				parts = append(parts, fmt.Sprintf("%s: down to %.0f/s, back above 90%% after %.1fs", st.name, dip, rec.Seconds()))
			}
			if st.name == stages[len(stages)-1].name {
				worst = max(worst, rec)
			}
		}
		t.Logf("at %5.1fs %s — %s", f.at.Seconds(), f.what, strings.Join(parts, "; "))
	}
	return worst
}

// logTimeline logs the samples as per-interval rates, every `every`.
func logTimeline(t *testing.T, samples []sample, every time.Duration) {
	t.Helper()
	var b strings.Builder
	b.WriteString("   t   answered/s  raw/s  processed/s  stored/s  process-lag  sink-lag\n")
	var prev sample
	for _, s := range samples {
		if s.at-prev.at < every {
			continue
		}
		d := (s.at - prev.at).Seconds()
		fmt.Fprintf(&b, "%5.0fs %10.0f %7.0f %11.0f %9.0f %12d %9d\n", s.at.Seconds(),
			float64(s.acked-prev.acked)/d, float64(s.raw-prev.raw)/d, float64(s.out-prev.out)/d, float64(s.stored-prev.stored)/d, s.procLag, s.sinkLg)
		prev = s
	}
	t.Logf("timeline:\n%s", b.String())
}
