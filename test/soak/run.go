package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/eventlogging/eventlogging/internal/kafka"
)

// runInfo is what `soak run` leaves in run.json for the checker.
type runInfo struct {
	RunID   string   `json:"run_id"`
	Seed    uint64   `json:"seed"`
	Minutes float64  `json:"minutes"`
	Rate    float64  `json:"rate"`
	Brokers []string `json:"brokers"`
	Target  string   `json:"target"`
	// Warehouse is the Iceberg warehouse; "": no Iceberg sink.
	Warehouse string    `json:"warehouse,omitempty"`
	Start     time.Time `json:"start"`
}

func runCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	dir := fs.String("dir", "", "run directory (logs, history, acknowledgement log)")
	bin := fs.String("bin", "", "the eventlogging binary")
	scripts := fs.String("scripts", "scripts", "the repository's scripts folder")
	schemas := fs.String("schemas", "examples/schemas", "schema folder")
	minutes := fs.Float64("minutes", 2, "minutes of load and faults")
	seed := fs.Uint64("seed", 1, "seed of the nemesis's schedule and the load's values")
	rate := fs.Float64("rate", 300, "events/s offered")
	port := fs.Int("port", 39640, "first of the roles' ports (registries, then intakes)")
	bucket := fs.String("bucket", "soak", "S3 bucket of the Parquet files")
	withIceberg := fs.Bool("iceberg", true, "deploy an Iceberg sink too (catalog in PostgreSQL, warehouse on S3)")
	drain := fs.Duration("drain", 4*time.Minute, "how long to wait for the pipeline to drain after the load")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	brokers := strings.Split(os.Getenv("SOAK_BROKERS"), ",")
	pgDSN := os.Getenv("EVENTLOGGING_POSTGRES_DSN")
	endpoint, region := os.Getenv("EVENTLOGGING_S3_ENDPOINT"), os.Getenv("EVENTLOGGING_S3_REGION")
	if *dir == "" || *bin == "" || brokers[0] == "" || pgDSN == "" || endpoint == "" {
		return fmt.Errorf("%w: --dir, --bin, SOAK_BROKERS, EVENTLOGGING_POSTGRES_DSN and EVENTLOGGING_S3_* are required", errUsage)
	}
	for _, p := range []*string{dir, bin, scripts, schemas} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		*p = abs
	}
	if err := os.MkdirAll(filepath.Join(*dir, "logs"), 0o755); err != nil {
		return err
	}
	hist, err := openHistory(filepath.Join(*dir, "history.jsonl"))
	if err != nil {
		return err
	}
	defer func() { _ = hist.close() }()

	target := s3Target(endpoint, region, *bucket, "events")
	warehouse := ""
	if *withIceberg {
		warehouse = s3Target(endpoint, region, *bucket, "iceberg")
	}
	info := runInfo{RunID: fmt.Sprintf("soak%d", *seed), Seed: *seed, Minutes: *minutes, Rate: *rate, Brokers: brokers,
		Target: target, Warehouse: warehouse, Start: time.Now().UTC()}
	b, _ := json.MarshalIndent(info, "", "  ")
	if err := os.WriteFile(filepath.Join(*dir, "run.json"), b, 0o644); err != nil {
		return err
	}
	d := &deployment{bin: *bin, dir: *dir, config: filepath.Join(*dir, "eventlogging.yaml"), hist: hist,
		baseEnv: []string{
			"AWS_ACCESS_KEY_ID=" + os.Getenv("EVENTLOGGING_S3_ACCESS_KEY"),
			"AWS_SECRET_ACCESS_KEY=" + os.Getenv("EVENTLOGGING_S3_SECRET_KEY"),
			"EVENTLOGGING_KAFKA_BROKERS=" + strings.Join(brokers, ","),
		}}
	if err := d.writeConfig(brokers, *schemas); err != nil {
		return err
	}
	d.build(*port, pgDSN, target, warehouse)
	gs := allGroups[:3]
	if warehouse != "" {
		gs = allGroups
	}
	if err := os.MkdirAll(filepath.Join(*dir, "pushed", "Generic"), 0o755); err != nil {
		return err
	}
	// The repository pushed: Generic's revisions, the new one last.
	b13, err := os.ReadFile(filepath.Join(*schemas, "Generic", "13.json"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*dir, "pushed", "Generic", "13.json"), b13, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*dir, "pushed", "Generic", fmt.Sprintf("%d.json", probeRevision)), []byte(probeSchema), 0o644); err != nil {
		return err
	}
	hist.add("run", "soak", "seed", *seed, "minutes", *minutes, "rate", *rate, "run_id", info.RunID)

	// Stop every role at the end, whatever happened.
	superCtx, stopSupervising := context.WithCancel(context.WithoutCancel(ctx))
	var supervisors sync.WaitGroup
	defer func() {
		stopSupervising()
		supervisors.Wait()
		// Intakes first, then processors, sinks, registries.
		for _, prefix := range []string{"intake", "processor", "sink", "registry"} {
			for _, r := range d.roles {
				if strings.HasPrefix(r.name, prefix) {
					r.terminate()
					hist.add("stop", r.name)
				}
			}
		}
	}()
	for _, prefix := range []string{"registry", "processor", "sink", "intake"} {
		for _, r := range d.roles {
			if strings.HasPrefix(r.name, prefix) {
				if err := r.start(ctx); err != nil {
					return err
				}
				supervisors.Go(func() { r.supervise(superCtx) })
			}
		}
	}
	adm, err := kafka.NewAdmin(kafka.Config{Brokers: brokers, ClientID: "soak"})
	if err != nil {
		return err
	}
	defer adm.Close()
	if err := waitMembers(ctx, adm, procGroup, 2, 90*time.Second); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "soak: deployment up (%d roles); load %.0f events/s for %.1f min, seed %d\n", len(d.roles), *rate, *minutes, *seed)

	sampleCtx, stopSampling := context.WithCancel(ctx)
	var sampler sync.WaitGroup
	sampler.Go(func() { sample(sampleCtx, adm, hist, gs) })
	defer func() { stopSampling(); sampler.Wait() }()

	ackFile, err := os.Create(filepath.Join(*dir, "acks.jsonl"))
	if err != nil {
		return err
	}
	defer ackFile.Close()
	l, err := newLoad(ctx, d.intakes, *schemas, info.RunID, *rate, *seed, ackFile)
	if err != nil {
		return err
	}
	loadCtx, stopLoad := context.WithTimeout(ctx, time.Duration(*minutes*float64(time.Minute)))
	defer stopLoad()
	n := &nemesis{d: d, rng: rand.New(rand.NewPCG(*seed, 32)), scripts: *scripts, hist: hist}
	var nem, evolve sync.WaitGroup
	nem.Go(func() { n.run(loadCtx) })
	// Halfway: the new revision is pushed, the probes stop, and their
	// EventErrors are replayed.
	half := time.Duration(*minutes * float64(time.Minute) / 2)
	evolve.Go(func() {
		probeCtx, stopProbes := context.WithTimeout(loadCtx, half)
		defer stopProbes()
		l.probes(probeCtx, info.RunID)
		if loadCtx.Err() != nil {
			return
		}
		// Retried: the registry leader may be the instance the nemesis
		// has just stopped.
		for try := 0; try < 6 && !d.cli(ctx, "schema-push", "schema", "push", filepath.Join(*dir, "pushed"), "--registry", d.registries[try%2]); try++ {
			time.Sleep(5 * time.Second)
		}
		time.Sleep(5 * time.Second) // the probes under way reach the processors
		d.cli(ctx, "replay-1", "replay", "--config", d.config, "--registry", d.registries[1], "--schema", "Generic", "--wait", "60s")
	})
	hist.add("load-start", "intakes", "rate", *rate)
	l.run(loadCtx, 8)
	hist.add("load-stop", "intakes", "sent", l.sent.Load(), "acked", l.acked.Load())
	nem.Wait()
	evolve.Wait()
	if err := ackFile.Sync(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "soak: load done: %s; draining\n", l)
	if ctx.Err() != nil {
		return ctx.Err()
	}

	// Every role runs again (the nemesis restarted what it killed and
	// woke what it stopped); wait until every group has consumed
	// everything.
	t0 := time.Now()
	// Once the processors have read everything, the probes' EventErrors
	// that came after the first replay are replayed too.
	if _, err := waitDrained(ctx, adm, *drain, procGroup); err != nil {
		return err
	}
	d.cli(ctx, "replay-2", "replay", "--config", d.config, "--registry", d.registries[0], "--schema", "Generic", "--wait", "60s")
	lags, err := waitDrained(ctx, adm, *drain, gs...)
	hist.add("drain", "pipeline", "seconds", time.Since(t0).Seconds(), "lags", lags, "complete", err == nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "soak: drained after %.1fs\n", time.Since(t0).Seconds())
	if warehouse != "" {
		// The Iceberg sink's group offsets run ahead of its tables: its
		// rows are committed at the next commit round.
		time.Sleep(2*icebergCommit + 5*time.Second)
	}
	for _, r := range d.roles {
		if r.crashes > 0 {
			fmt.Fprintf(os.Stderr, "soak: %s exited on its own %d times (see logs/%s.log)\n", r.name, r.crashes, r.name)
		}
	}
	return nil
}

var allGroups = []string{procGroup, sinkGroup + "-sql", sinkGroup + "-files", sinkGroup + "-iceberg"}

// lagsNow returns each group's total lag; -1 for a group that could not
// be described.
func lagsNow(ctx context.Context, adm *kafka.Admin, groups ...string) (map[string]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	gl, err := adm.GroupLags(ctx, "", groups...)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, g := range gl {
		if g.Err != nil {
			out[g.Group] = -1
			continue
		}
		out[g.Group] = g.Total()
	}
	return out, nil
}

// sample records the groups' lag every second.
func sample(ctx context.Context, adm *kafka.Admin, hist *history, groups []string) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		lags, err := lagsNow(ctx, adm, groups...)
		if err != nil {
			hist.add("sample", "lag", "error", err.Error())
			continue
		}
		hist.add("sample", "lag", "lags", lags)
	}
}

// waitDrained waits until every group's lag is 0 in three samples in a
// row, or the deadline.
func waitDrained(ctx context.Context, adm *kafka.Admin, deadline time.Duration, groups ...string) (map[string]int64, error) {
	end := time.Now().Add(deadline)
	zero := 0
	var last map[string]int64
	for time.Now().Before(end) {
		lags, err := lagsNow(ctx, adm, groups...)
		if err == nil {
			last = lags
			ok := len(lags) == len(groups)
			for _, v := range lags {
				ok = ok && v == 0
			}
			if ok {
				zero++
				if zero == 3 {
					return lags, nil
				}
			} else {
				zero = 0
			}
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	return last, fmt.Errorf("not drained within %s: lags %v", deadline, last)
}

// waitMembers waits until group has n members.
func waitMembers(ctx context.Context, adm *kafka.Admin, group string, n int, timeout time.Duration) error {
	end := time.Now().Add(timeout)
	for time.Now().Before(end) {
		gl, err := adm.GroupLags(ctx, "", group)
		if err == nil && len(gl) == 1 && gl[0].Members == n {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return fmt.Errorf("group %s did not reach %d members within %s", group, n, timeout)
}
