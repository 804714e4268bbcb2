package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Names of the soak's topics and groups (the sinks' groups get -sql and
// -files appended by the sink).
const (
	rawTopic     = "soak-raw"
	errorTopic   = "soak-errors"
	sinkErrTopic = "soak-sinkerrors"
	topicPrefix  = "soak_"
	procGroup    = "soak-processor"
	sinkGroup    = "soak-sink"
	sessionTO    = 6 * time.Second
	// icebergCommit is the Iceberg sink's commit interval.
	icebergCommit = 10 * time.Second
)

// deployment is the set of role instances of one soak run.
type deployment struct {
	bin, dir, config string
	hist             *history
	baseEnv          []string
	roles            []*role
	intakes          []string // base URLs
	registries       []string
}

// role is one supervised instance of an eventlogging role: started again
// when it exits on its own (as systemd's Restart=always would), the exit
// recorded; the nemesis's own kills and stops go through kill and stop.
type role struct {
	d     *deployment
	name  string
	args  []string
	env   []string
	ready func(ctx context.Context) bool // nil: none

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	down    bool // killed by the nemesis, not to be restarted by the supervisor
	gen     int
	crashes int
}

// writeConfig writes the configuration every role reads; what differs
// between instances comes from the environment.
func (d *deployment) writeConfig(brokers []string, schemas string) error {
	q := make([]string, len(brokers))
	for i, b := range brokers {
		q[i] = fmt.Sprintf("%q", b)
	}
	yaml := fmt.Sprintf(`kafka:
  brokers: [%s]
  partitions: 6
  replication_factor: 3
  session_timeout: %s
registry:
  topic: soak-schemas
  import_dir: %q
intake:
  raw_topic: %q
  ack: kafka
process:
  group: %q
  inputs:
    - topic: %q
      format: "%%q %%{recvFrom}s %%{seqId}d %%t %%h %%{userAgent}i"
  topic_template: %q
  error_topic: %q
  mixed_topic: "-"
  ip_key_topic: soak-ipkey
sink:
  topics: %q
  group: %q
  error_topic: %q
  batch_time: 200ms
  format: parquet
  file_max_age: 15s
metrics:
  listen: "off"
  lag_interval: 1s
log:
  format: json
`, strings.Join(q, ", "), sessionTO, schemas, rawTopic, procGroup, rawTopic,
		topicPrefix+"{schema}", errorTopic, "^"+topicPrefix+".+", sinkGroup, sinkErrTopic)
	return os.WriteFile(d.config, []byte(yaml), 0o644)
}

// addRole declares a role instance.
func (d *deployment) addRole(name string, env []string, ready func(context.Context) bool, args ...string) *role {
	r := &role{d: d, name: name, args: append(args, "--config", d.config), env: env, ready: ready}
	d.roles = append(d.roles, r)
	return r
}

// start launches the instance and waits until it is ready (up to 90 s).
func (r *role) start(ctx context.Context) error {
	r.mu.Lock()
	r.gen++
	logf, err := os.OpenFile(filepath.Join(r.d.dir, "logs", r.name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		r.mu.Unlock()
		return err
	}
	fmt.Fprintf(logf, "=== soak: start %d of %s at %s\n", r.gen, r.name, time.Now().UTC().Format(time.RFC3339Nano))
	// Not ctx: the instance outlives the start-up it bounds; it is
	// stopped by kill or terminate.
	cmd := exec.CommandContext(context.WithoutCancel(ctx), r.d.bin, r.args...)
	cmd.Env = append(append(os.Environ(), r.d.baseEnv...), r.env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// The roles die with the soak should it be killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		r.mu.Unlock()
		return fmt.Errorf("%s: %w", r.name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(exited)
	}()
	r.cmd, r.exited, r.down = cmd, exited, false
	r.d.hist.add("start", r.name, "pid", cmd.Process.Pid, "generation", r.gen)
	r.mu.Unlock()
	if r.ready == nil {
		return nil
	}
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("%s exited during start-up (see logs/%s.log)", r.name, r.name)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond): // polling interval
		}
		if r.ready(ctx) {
			return nil
		}
	}
	return fmt.Errorf("%s not ready within 90s", r.name)
}

// signal sends sig to the current process.
func (r *role) signal(sig syscall.Signal) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil || r.cmd.Process == nil {
		return 0
	}
	_ = r.cmd.Process.Signal(sig)
	return r.cmd.Process.Pid
}

// kill SIGKILLs the instance and waits for it to exit; it stays down
// until start.
func (r *role) kill() int {
	r.mu.Lock()
	r.down = true
	ex := r.exited
	r.mu.Unlock()
	pid := r.signal(syscall.SIGKILL)
	if ex != nil {
		<-ex
	}
	return pid
}

// terminate stops the instance with SIGTERM (SIGKILL after 30 s).
func (r *role) terminate() {
	r.mu.Lock()
	r.down = true
	ex := r.exited
	r.mu.Unlock()
	if ex == nil {
		return
	}
	r.signal(syscall.SIGCONT)
	r.signal(syscall.SIGTERM)
	select {
	case <-ex:
	case <-time.After(30 * time.Second):
		r.signal(syscall.SIGKILL)
		<-ex
	}
}

// supervise restarts the instance when it exits on its own, until ctx ends.
func (r *role) supervise(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond): // polling interval
		}
		r.mu.Lock()
		crashed := !r.down && r.exited != nil && isClosed(r.exited)
		if crashed {
			r.crashes++
		}
		r.mu.Unlock()
		if crashed {
			r.d.hist.add("crash", r.name, "detail", "exited on its own; restarted")
			if err := r.start(ctx); err != nil {
				r.d.hist.add("restart-failed", r.name, "error", err.Error())
			}
		}
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// httpOK reports whether GET u answers 200 within 2 s.
func httpOK(ctx context.Context, u string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// s3Target is an s3:// URL of the store in the sinks' spelling.
func s3Target(endpoint, region, bucket, prefix string) string {
	return "s3://" + bucket + "/" + prefix + "?" + url.Values{"endpoint": {endpoint}, "region": {region}, "use_path_style": {"true"}}.Encode()
}

// build declares the roles: two registries, two intakes, two processors
// (each on its own registry), a PostgreSQL sink, two Parquet sinks in one
// consumer group on one S3 target and, unless warehouse is "", an Iceberg
// sink (catalog in PostgreSQL, warehouse on S3).
func (d *deployment) build(port int, pgDSN, target, warehouse string) {
	for i := range 2 {
		addr := fmt.Sprintf("127.0.0.1:%d", port+i)
		d.registries = append(d.registries, "http://"+addr)
		d.addRole(fmt.Sprintf("registry%d", i+1), []string{
			"EVENTLOGGING_REGISTRY_LISTEN=" + addr, "EVENTLOGGING_REGISTRY_SELF_URL=http://" + addr,
			"EVENTLOGGING_REGISTRY_URL=http://" + addr,
		}, func(ctx context.Context) bool { return httpOK(ctx, "http://"+addr+"/schemas/ids/13") }, "registry")
	}
	for i := range 2 {
		addr := fmt.Sprintf("127.0.0.1:%d", port+2+i)
		d.intakes = append(d.intakes, "http://"+addr)
		d.addRole(fmt.Sprintf("intake%d", i+1), []string{
			"EVENTLOGGING_INTAKE_LISTEN=" + addr,
			"EVENTLOGGING_INTAKE_SPOOL_DIR=" + filepath.Join(d.dir, fmt.Sprintf("spool%d", i+1)),
			"EVENTLOGGING_REGISTRY_URL=" + d.registries[i],
		}, func(ctx context.Context) bool { return httpOK(ctx, "http://"+addr+"/readyz") }, "intake")
	}
	for i := range 2 {
		d.addRole(fmt.Sprintf("processor%d", i+1), []string{"EVENTLOGGING_REGISTRY_URL=" + d.registries[i]}, nil, "process")
	}
	d.addRole("sink-sql", []string{"EVENTLOGGING_REGISTRY_URL=" + d.registries[0]}, nil, "sink", "--sql", pgDSN)
	if warehouse != "" {
		d.addRole("sink-iceberg", []string{"EVENTLOGGING_REGISTRY_URL=" + d.registries[1]}, nil, "sink",
			"--iceberg-catalog", pgDSN, "--iceberg-warehouse", warehouse, "--iceberg-commit-interval", icebergCommit.String())
	}
	for i := range 2 {
		d.addRole(fmt.Sprintf("sink-files%d", i+1), []string{"EVENTLOGGING_REGISTRY_URL=" + d.registries[i]}, nil,
			"sink", "--files", target, "--files-staging", filepath.Join(d.dir, fmt.Sprintf("staging%d", i+1)))
	}
}

// cli runs an eventlogging command (schema push, replay) to its own log
// under logs/, records it and its exit status in the history, and reports
// whether it succeeded.
func (d *deployment) cli(ctx context.Context, name string, args ...string) bool {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.bin, args...)
	cmd.Env = append(os.Environ(), d.baseEnv...)
	out, err := cmd.CombinedOutput()
	f, ferr := os.OpenFile(filepath.Join(d.dir, "logs", name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if ferr == nil {
		fmt.Fprintf(f, "=== soak: %s at %s\n", strings.Join(args, " "), time.Now().UTC().Format(time.RFC3339Nano))
		_, _ = f.Write(out)
		f.Close()
	}
	status := "ok"
	if err != nil {
		status = err.Error()
	}
	last := strings.TrimSpace(string(out))
	if i := strings.LastIndexByte(last, '\n'); i >= 0 {
		last = last[i+1:]
	}
	d.hist.add(name, strings.Join(args[:min(2, len(args))], " "), "status", status, "last_line", last)
	return err == nil
}
