package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// nemesis injects one fault at a time, every 10–30 s, chosen by a seeded
// RNG: the same seed gives the same schedule (kinds, targets, intervals,
// durations). Only whether a broker fault hits the current leader of the
// raw topic's partition 0 depends on the cluster's state at the time.
type nemesis struct {
	d       *deployment
	rng     *rand.Rand
	scripts string // the repository's scripts folder
	hist    *history
}

// The kinds of fault, with their weights.
var faultKinds = []struct {
	kind   string
	weight int
}{
	{"kill", 35},     // SIGKILL a role instance, start it again 0.5–3 s later
	{"pause", 20},    // SIGSTOP a role instance past the session timeout, then SIGCONT
	{"broker", 25},   // SIGKILL a Kafka node (often a partition leader), restart it 5–15 s later
	{"s3", 10},       // stop the S3 store, start it again 5–15 s later
	{"postgres", 10}, // stop PostgreSQL, start it again 5–15 s later
}

func (n *nemesis) pick() string {
	total := 0
	for _, f := range faultKinds {
		total += f.weight
	}
	x := n.rng.IntN(total)
	for _, f := range faultKinds {
		if x < f.weight {
			return f.kind
		}
		x -= f.weight
	}
	return faultKinds[0].kind
}

// between returns a duration in [lo, hi) from the RNG.
func (n *nemesis) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(n.rng.Int64N(int64(hi-lo)))
}

// run injects faults until ctx ends; a fault under way is finished (the
// target restarted) before run returns.
func (n *nemesis) run(ctx context.Context) {
	for {
		wait := n.between(10*time.Second, 30*time.Second)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		kind := n.pick()
		// Every draw happens whatever the outcome, in the same order.
		roleIdx := n.rng.IntN(len(n.d.roles))
		node := 1 + n.rng.IntN(3)
		leader := n.rng.IntN(10) < 6
		down := n.between(5*time.Second, 15*time.Second)
		killDown := n.between(500*time.Millisecond, 3*time.Second)
		pause := sessionTO + n.between(2*time.Second, 8*time.Second)
		if err := n.inject(context.WithoutCancel(ctx), kind, roleIdx, node, leader, down, killDown, pause); err != nil {
			n.hist.add("fault-error", kind, "error", err.Error())
		}
	}
}

func (n *nemesis) inject(ctx context.Context, kind string, roleIdx, node int, leader bool, down, killDown, pause time.Duration) error {
	switch kind {
	case "kill":
		r := n.d.roles[roleIdx]
		pid := r.kill()
		n.hist.add("fault", r.name, "fault", "kill", "signal", "SIGKILL", "pid", pid, "down_ms", killDown.Milliseconds())
		time.Sleep(killDown)
		err := r.start(ctx)
		n.hist.add("recovered", r.name, "fault", "kill")
		return err
	case "pause":
		r := n.d.roles[roleIdx]
		pid := r.signal(syscall.SIGSTOP)
		n.hist.add("fault", r.name, "fault", "pause", "signal", "SIGSTOP", "pid", pid, "stopped_ms", pause.Milliseconds())
		time.Sleep(pause)
		r.signal(syscall.SIGCONT)
		n.hist.add("recovered", r.name, "fault", "pause", "signal", "SIGCONT")
		return nil
	case "broker":
		how := "random"
		if leader {
			if out, err := n.script(ctx, "kafka-cluster.sh", "leader", rawTopic, "0"); err == nil {
				if id, err := strconv.Atoi(strings.TrimSpace(out)); err == nil && id >= 1 && id <= 3 {
					node, how = id, "leader of "+rawTopic+"/0"
				}
			}
		}
		target := fmt.Sprintf("kafka%d", node)
		if out, err := n.script(ctx, "kafka-cluster.sh", "kill", strconv.Itoa(node)); err != nil {
			return fmt.Errorf("kill %s: %w: %s", target, err, out)
		}
		n.hist.add("fault", target, "fault", "broker", "signal", "SIGKILL", "chosen", how, "down_ms", down.Milliseconds())
		time.Sleep(down)
		out, err := n.script(ctx, "kafka-cluster.sh", "restart", strconv.Itoa(node))
		n.hist.add("recovered", target, "fault", "broker")
		if err != nil {
			return fmt.Errorf("restart %s: %w: %s", target, err, out)
		}
		return nil
	case "s3", "postgres":
		script, args := "s3.sh", []string(nil)
		if kind == "postgres" {
			script, args = "db.sh", []string{"postgres"}
		}
		if out, err := n.script(ctx, script, append([]string{"stop"}, args...)...); err != nil {
			return fmt.Errorf("stop %s: %w: %s", kind, err, out)
		}
		n.hist.add("fault", kind, "fault", kind, "action", "stop", "down_ms", down.Milliseconds())
		time.Sleep(down)
		var err error
		var out string
		for try := range 5 { // a start may race the port's release
			if out, err = n.script(ctx, script, append([]string{"start"}, args...)...); err == nil {
				break
			}
			n.hist.add("fault-error", kind, "error", fmt.Sprintf("start %d: %v: %s", try+1, err, out))
			time.Sleep(2 * time.Second)
		}
		n.hist.add("recovered", kind, "fault", kind)
		return err
	}
	return fmt.Errorf("unknown fault %q", kind)
}

// script runs one of the repository's service scripts with the soak's
// environment (the ports and run dirs scripts/soak.sh chose).
func (n *nemesis) script(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(n.scripts, name), args...).CombinedOutput()
	return string(out), err
}
