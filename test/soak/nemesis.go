package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
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
	{"kill", 35},      // SIGKILL a role instance, start it again 0.5–3 s later
	{"pause", 20},     // SIGSTOP a role instance past the session timeout, then SIGCONT
	{"broker", 20},    // SIGKILL a Kafka node (often a partition leader), restart it 5–15 s later
	{"partition", 10}, // SIGSTOP a Kafka node (often a leader) 5–15 s: cut off from clients and the other nodes
	{"spool-full", 5}, // the intakes' spool filesystems filled while a partition fault cuts the raw leader off
	{"s3", 10},        // stop the S3 store, start it again 5–15 s later
	{"postgres", 10},  // stop PostgreSQL, start it again 5–15 s later
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

// brokerNode is the Kafka node a broker fault hits: the leader of the raw
// topic's partition 0 when leader is drawn and the cluster names one,
// else node.
func (n *nemesis) brokerNode(ctx context.Context, node int, leader bool) (int, string) {
	if leader {
		if out, err := n.script(ctx, "kafka-cluster.sh", "leader", rawTopic, "0"); err == nil {
			if id, err := strconv.Atoi(strings.TrimSpace(out)); err == nil && id >= 1 && id <= 3 {
				return id, "leader of " + rawTopic + "/0"
			}
		}
	}
	return node, "random"
}

// cutOff SIGSTOPs a Kafka node for down, then SIGCONTs it: to clients
// and the other nodes it is as if the network cut it off.
func (n *nemesis) cutOff(ctx context.Context, kind string, node int, leader bool, down time.Duration, details ...any) error {
	node, how := n.brokerNode(ctx, node, leader)
	target := fmt.Sprintf("kafka%d", node)
	if out, err := n.script(ctx, "kafka-cluster.sh", "signal", strconv.Itoa(node), "STOP"); err != nil {
		return fmt.Errorf("stop %s: %w: %s", target, err, out)
	}
	n.hist.add("fault", target, append([]any{"fault", kind, "signal", "SIGSTOP", "chosen", how, "down_ms", down.Milliseconds()}, details...)...)
	time.Sleep(down)
	out, err := n.script(ctx, "kafka-cluster.sh", "signal", strconv.Itoa(node), "CONT")
	n.hist.add("recovered", target, "fault", kind, "signal", "SIGCONT")
	if err != nil {
		return fmt.Errorf("continue %s: %w: %s", target, err, out)
	}
	return nil
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
	case "spool-full":
		// The raw topic's leader cut off: produces time out, the intakes
		// turn to their spools, which have no room: they must answer 503
		// (not acknowledge) rather than lose what they answered.
		var fillers []string
		var free []int64
		for i := range len(n.d.intakes) {
			f, left, err := fillFS(filepath.Join(n.d.dir, fmt.Sprintf("spool%d", i+1)))
			if err != nil {
				n.hist.add("fault-error", "spool-full", "error", err.Error())
				continue
			}
			fillers = append(fillers, f)
			free = append(free, left)
		}
		err := n.cutOff(ctx, "spool-full", node, true, down, "spools_filled", len(fillers), "free_bytes", free)
		// The produces under way when the node stopped fail up to the
		// intake's 10 s bound after it stopped, so after it came back
		// too: the spools stay full that long.
		time.Sleep(spoolFullAfter)
		for _, f := range fillers {
			_ = os.Remove(f)
		}
		n.hist.add("spools-freed", "spools", "removed", len(fillers))
		return err
	case "partition":
		return n.cutOff(ctx, "partition", node, leader, down)
	case "broker":
		node, how := n.brokerNode(ctx, node, leader)
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

// spoolFullAfter is how long the spools stay full after the cut-off node
// is back: the intake's produce bound (10 s) and a little.
const spoolFullAfter = 12 * time.Second

// fillFS fills the tmpfs mounted on dir (scripts/soak.sh mounts one on
// each intake's spool, as root) with one file, leaving the spool's default
// reserve (5 % of the filesystem) and 16 KiB free: the spool has room for
// about 16 KiB more (some 30 beacons). It returns the file and the bytes left free; an
// error when dir is no tmpfs (not root) or the file cannot be made.
func fillFS(dir string) (string, int64, error) {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		return "", 0, err
	}
	const tmpfsMagic = 0x01021994
	if fs.Type != tmpfsMagic {
		return "", 0, fmt.Errorf("%s is no tmpfs (soak.sh mounts one as root): not filled", dir)
	}
	size := int64(fs.Blocks) * fs.Bsize
	free := int64(fs.Bavail) * fs.Bsize
	fill := free - size*5/100 - 16<<10
	if fill <= 0 {
		return "", free, fmt.Errorf("%s has %d bytes free: nothing to fill", dir, free)
	}
	name := filepath.Join(dir, "soak-filler")
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return "", free, err
	}
	err = syscall.Fallocate(int(f.Fd()), 0, 0, fill)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(name)
		return "", free, fmt.Errorf("fill %s: %w", dir, err)
	}
	if err := syscall.Statfs(dir, &fs); err == nil {
		free = int64(fs.Bavail) * fs.Bsize
	}
	return name, free, nil
}
